// paper_topologies: Table 2 of the Themis paper (see paper_topologies.h).
#include "testbed/paper_topologies.h"

namespace themis {

std::vector<std::string> paper_topology_names() {
    return {"2D-SW_SW",      "3D-SW_SW_SW_homo", "3D-SW_SW_SW_hetero",
            "3D-FC_Ring_SW", "4D-Ring_SW_SW_SW", "4D-Ring_FC_Ring_SW"};
}

std::optional<Topology> paper_topology(const std::string &name) {
    // Table 2 of the paper: per-NPU bandwidth = links x link bandwidth; switch
    // dimensions run halving-doubling, rings ring, fully-connected direct.
    static const struct {
        const char *name;
        const char *spec;
    } table[] = {
        {"2D-SW_SW", "16x64:bw=1200Gbps,800Gbps:lat=700ns,1700ns:alg=hd,hd"},
        {"3D-SW_SW_SW_homo", "16x8x8:bw=800Gbps,800Gbps,800Gbps:lat=700ns,700ns,1700ns:alg=hd"},
        {"3D-SW_SW_SW_hetero", "16x8x8:bw=1600Gbps,800Gbps,400Gbps:lat=700ns,700ns,1700ns:alg=hd"},
        {"3D-FC_Ring_SW",
         "8x16x8:bw=1400Gbps,800Gbps,400Gbps:lat=700ns,700ns,1700ns:alg=direct,ring,hd"},
        {"4D-Ring_SW_SW_SW", "4x4x8x8:bw=2000Gbps,1600Gbps,800Gbps,400Gbps:"
                             "lat=20ns,700ns,700ns,1700ns:alg=ring,hd,hd,hd"},
        {"4D-Ring_FC_Ring_SW", "4x8x4x8:bw=3000Gbps,1400Gbps,1200Gbps,800Gbps:"
                               "lat=20ns,700ns,700ns,1700ns:alg=ring,direct,ring,hd"},
    };
    for (const auto &t : table) {
        if (name != t.name) continue;
        Topology topo = parse_topology(t.spec);
        std::vector<Dimension> dims = topo.dims();
        for (Dimension &d : dims)
            if (d.algorithm == Algorithm::HalvingDoubling) // a switch
                d.alternatives = 1u << int(Algorithm::Direct) | 1u << int(Algorithm::Ring);
        return Topology(dims);
    }
    return std::nullopt;
}

} // namespace themis
