// coll_themis_node_transport.cpp: set-up of the single-copy node dimensions
// (see coll_themis_node_transport.h).
#include "coll_themis_node_transport.h"
#include "coll_themis_params.h"
#include "coll_themis_setup_task.h"

#include <unistd.h>

#include <cstdio>

#include "transports/cma_transport.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_op.h"
#include "transports/transport_choice.h"

namespace themis {

namespace {

std::string dimension_list(const std::vector<bool> &dims) {
    std::string out;
    for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d]) out += (out.empty() ? "" : ",") + std::to_string(d);
    return out;
}

// The event node_transport: which dimensions run by single copy ("none": none), and why.
LogEvent node_event(const std::vector<bool> &cma, const char *source) {
    const std::string dims = dimension_list(cma);
    LogEvent event("node_transport");
    event.add("cma", dims.empty() ? "none" : dims).add("source", source);
    return event;
}

// Collective: every rank reads a small buffer of each of its node peers through CMA and
// checks what it read; true on every rank when all could (else `why`).
bool peers_readable(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                    const RankLayout &layout, int position, const std::vector<bool> &node_dims,
                    bool candidate, std::string &why) {
    struct Probe {
        uint64_t pattern[4];
        uint64_t address;
        int32_t pid;
        int32_t ok;
    };
    const int me = ompi_comm_rank(comm);
    Probe mine{};
    for (uint64_t &v : mine.pattern) v = 0x746d6361ull ^ uint64_t(me);
    mine.address = uint64_t(reinterpret_cast<uintptr_t>(mine.pattern));
    mine.pid = int32_t(getpid());
    mine.ok = candidate ? 1 : 0;
    if (candidate) allow_peer_reads(); // before any peer tries
    std::vector<Probe> all(size_t(ompi_comm_size(comm)));
    setup_allgather(m, &mine, all.data(), int(sizeof mine));
    bool ok = candidate;
    if (!candidate) why = "this rank's transport is handed device memory";
    for (int rank : peer_ranks(layout, position, node_dims)) {
        if (!ok) break;
        const Probe &peer = all[size_t(rank)];
        uint64_t got[4] = {};
        ok = peer.ok && cma_read(peer.pid, reinterpret_cast<const void *>(uintptr_t(peer.address)),
                                 got, sizeof got, why);
        for (uint64_t v : got)
            if (ok && v != (0x746d6361ull ^ uint64_t(rank))) {
                ok = false;
                why = "a peer's memory read back wrong";
            }
        if (!peer.ok && why.empty()) why = "another rank's transport is handed device memory";
    }
    // Every peer is done reading `mine` once this returns on every rank.
    std::vector<double> failed = {ok ? 0.0 : 1.0};
    agree_max(m, comm, failed);
    if (failed[0] == 0) return true;
    if (ok) why = "another rank cannot read its node peers' memory";
    return false;
}

// Choices measured in this process, by process_key.
ProcessMemo<std::vector<bool>> measured_choices;

// Collective: per node dimension, single copy or not, measured (transport_choice.h);
// `said` gets the event with the times.
std::vector<bool> measured_choice(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                  const NodeTransportSetup &setup,
                                  const std::vector<bool> &node_dims,
                                  std::optional<LogEvent> &said) {
    CmaTransport cma(setup.base, node_dims);
    TransportChoiceSettings settings;
    settings.request = setup.allreduce;
    settings.max_active = params().max_active;
    settings.max_active_bytes = params().max_active_bytes;
    OpReducer float_sum(&ompi_mpi_op_sum.op, &ompi_mpi_float.dt, sizeof(float));
    const std::vector<DimensionChoice> measured = choose_transports(
        setup.layout.topology, setup.position, setup.base, cma, node_dims, float_sum,
        [&](std::vector<double> &v) { agree_max(m, comm, v); }, settings);
    const double mib =
        double(setup.allreduce.block_counts[0] * setup.allreduce.element_size) / (1 << 20);
    std::vector<bool> chosen(node_dims.size(), false);
    for (size_t d = 0; d < node_dims.size(); ++d)
        if (node_dims[d]) chosen[d] = measured[d].single_copy;
    said = node_event(chosen, "measured");
    said->add("allreduce_mib", mib, "%.3g");
    for (size_t d = 0; d < node_dims.size(); ++d) {
        if (!node_dims[d]) continue;
        const std::string dim = "dim" + std::to_string(d);
        said->add(dim.c_str(), chosen[d] ? "cma" : "transport")
            .add((dim + "_cma_ms").c_str(), measured[d].seconds_single_copy * 1e3, "%.3f")
            .add((dim + "_transport_ms").c_str(), measured[d].seconds_base * 1e3, "%.3f");
    }
    return chosen;
}

} // namespace

std::unique_ptr<Transport> node_transport(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                          const NodeTransportSetup &setup,
                                          std::optional<LogEvent> &said) {
    // Every rank decides alike, or the ranks would run different set-up collectives.
    std::vector<double> choice = {double(setup.choice), -double(setup.choice)};
    agree_max(m, comm, choice);
    if (choice[0] != -choice[1]) {
        said = LogEvent("mismatch");
        said->add("param", "coll_themis_node_transport").add("fallback", "transport");
        return nullptr;
    }
    if (setup.choice == THEMIS_NODE_TRANSPORT) return nullptr;
    const RankLayout &layout = setup.layout;
    const std::vector<bool> node_dims = node_local_dimensions(layout, setup.node_of);
    if (dimension_list(node_dims).empty()) return nullptr;
    std::string why;
    if (!peers_readable(m, comm, layout, setup.position, node_dims, !setup.base_moves_device,
                        why)) {
        said = node_event({}, "unusable");
        said->add("node_dims", dimension_list(node_dims)).add("why", why);
        static bool shown = false; // asked for explicitly: say it once per job
        if (!shown && setup.choice == THEMIS_NODE_CMA && mca_coll_themis_first_process())
            mca_coll_themis_show_help("cma-unavailable", why.c_str());
        shown = true;
        return nullptr;
    }
    if (setup.choice == THEMIS_NODE_CMA) {
        said = node_event(node_dims, "asked");
        return std::make_unique<CmaTransport>(setup.base, node_dims);
    }
    const std::string key = process_key(comm, layout, "node:" + setup.base_name);
    std::vector<bool> chosen = measured_choices.find(key);
    std::vector<double> missing = {chosen.empty() ? 1.0 : 0.0};
    agree_max(m, comm, missing);
    if (missing[0] == 0) {
        said = node_event(chosen, "remembered");
    } else {
        chosen = measured_choice(m, comm, setup, node_dims, said);
        measured_choices.store(key, chosen);
    }
    if (dimension_list(chosen).empty()) return nullptr;
    return std::make_unique<CmaTransport>(setup.base, chosen);
}

} // namespace themis
