// slurm_topology: SLURM_TOPOLOGY_ADDR(_PATTERN) parsed, and the switch tree as a grid
// (slurm_topology.h).
#include "slurm_topology.h"

#include <algorithm>
#include <map>
#include <set>

#include "topology.h"

namespace themis {

namespace {

const char *const kAddr = "SLURM_TOPOLOGY_ADDR";
const char *const kPattern = "SLURM_TOPOLOGY_ADDR_PATTERN";

[[noreturn]] void refuse(const std::string &variable, const std::string &why) {
    throw SpecError(variable + ": " + why);
}

void refuse_control_bytes(const char *variable, const std::string &value) {
    const std::string control = control_byte_in(value);
    if (!control.empty()) refuse(variable, control);
}

// The pattern's fields: "switch" per level, then "node"; returns the number of levels.
size_t levels_of(const std::string &pattern) {
    if (pattern.empty())
        refuse(kPattern, "expected fields such as \"switch.switch.node\", got an empty value");
    const std::vector<std::string> fields = split(pattern, '.');
    for (size_t i = 0; i < fields.size(); ++i) {
        const bool last = i + 1 == fields.size();
        const std::string &f = fields[i];
        if (f == (last ? "node" : "switch")) continue;
        refuse(kPattern, "field " + std::to_string(i + 1) + " of \"" + pattern + "\": expected " +
                             (last ? "\"node\" last" : "\"switch\" before the last") + ", got \"" +
                             f + "\"");
    }
    return fields.size() - 1;
}

// The names of the job's switches of one level, or of its nodes, each with its parent.
struct Level {
    std::map<std::string, std::string> parent_of; // name -> name one level up ("" at the top)
};

std::string sizes_text(const std::vector<int> &sizes) {
    std::string out;
    for (int n : sizes) out += (out.empty() ? "" : "x") + std::to_string(n);
    return out;
}

GridResult no_grid(const std::string &why) {
    GridResult r;
    r.reason = why;
    return r;
}

} // namespace

bool natural_less(const std::string &a, const std::string &b) {
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            size_t ie = i, je = j;
            while (ie < a.size() && digit(a[ie])) ++ie;
            while (je < b.size() && digit(b[je])) ++je;
            // The numbers without their leading zeros: the longer is larger, else by digits.
            size_t iz = i, jz = j;
            while (iz + 1 < ie && a[iz] == '0') ++iz;
            while (jz + 1 < je && b[jz] == '0') ++jz;
            if (ie - iz != je - jz) return ie - iz < je - jz;
            const int c = a.compare(iz, ie - iz, b, jz, je - jz);
            if (c) return c < 0;
            if (ie - i != je - j) return ie - i < je - j; // "01" after "1": total order
            i = ie;
            j = je;
            continue;
        }
        if (a[i] != b[j])
            return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j;
}

SlurmAddress parse_slurm_topology(const std::string &addr, const std::string &pattern) {
    refuse_control_bytes(kPattern, pattern);
    refuse_control_bytes(kAddr, addr);
    const size_t levels = levels_of(pattern);
    if (addr.empty())
        refuse(kAddr, "expected the switch names and the node name, got an empty value");
    const std::vector<std::string> fields = split(addr, '.');
    if (fields.size() != levels + 1)
        refuse(kAddr, "\"" + addr + "\" has " + std::to_string(fields.size()) + " field(s) where " +
                          kPattern + " \"" + pattern + "\" has " + std::to_string(levels + 1));
    SlurmAddress out;
    for (size_t i = 0; i < levels; ++i) {
        const std::string &s = fields[i];
        const std::string where = "level " + std::to_string(i + 1) + " of \"" + addr + "\": ";
        if (s.empty()) refuse(kAddr, where + "no switch (the node is under no switch there)");
        if (s.find_first_of(",[") != std::string::npos)
            refuse(kAddr, where + "several switches \"" + s +
                              "\" (a node on two switches of a level is no tree)");
        out.switches.push_back(s);
    }
    out.node = fields.back();
    if (out.node.empty()) refuse(kAddr, "\"" + addr + "\" ends without the node's name");
    return out;
}

GridResult grid_from_slurm(const std::vector<SlurmAddress> &nodes) {
    if (nodes.empty()) return no_grid("no nodes");
    const size_t levels = nodes[0].switches.size();
    if (levels == 0)
        return no_grid(
            "no switches: Slurm's topology/tree plugin gives no tree (pattern \"node\")");
    // up[0]: the nodes with their leaf switches; up[t]: the switches t levels above the
    // nodes with theirs ("" above the top level).
    std::vector<Level> up(levels + 1);
    for (const SlurmAddress &a : nodes) {
        if (a.switches.size() != levels)
            return no_grid("node " + a.node + " has " + std::to_string(a.switches.size()) +
                           " levels of switches, node " + nodes[0].node + " " +
                           std::to_string(levels));
        for (size_t t = 0; t <= levels; ++t) {
            const std::string &name = t == 0 ? a.node : a.switches[levels - t];
            const std::string parent = t == levels ? "" : a.switches[levels - t - 1];
            const auto [it, fresh] = up[t].parent_of.emplace(name, parent);
            if (t == 0 && !fresh) return no_grid("node " + name + " appears twice");
            if (it->second != parent)
                return no_grid("switch " + name + " sits under both " + it->second + " and " +
                               parent);
        }
    }
    // Per level, each parent's children in natural order: coordinates, and the sizes.
    std::vector<std::map<std::string, int>> place(levels + 1); // name -> place among siblings
    std::vector<int> sizes;
    for (size_t t = 0; t <= levels; ++t) {
        std::map<std::string, std::vector<std::string>> children;
        for (const auto &[name, parent] : up[t].parent_of) children[parent].push_back(name);
        int size = -1;
        std::string first_parent;
        for (auto &[parent, names] : children) {
            std::sort(names.begin(), names.end(), natural_less);
            for (size_t i = 0; i < names.size(); ++i) place[t][names[i]] = int(i);
            if (size < 0) {
                size = int(names.size());
                first_parent = parent;
            } else if (size != int(names.size())) {
                const std::string what = t == 0 ? "nodes" : "switches";
                return no_grid("not a grid: switch " + first_parent + " holds " +
                               std::to_string(size) + " of the job's " + what + " below it, " +
                               (parent.empty() ? "the top level" : "switch " + parent) + " " +
                               std::to_string(names.size()));
            }
        }
        sizes.push_back(size);
    }
    GridResult g;
    for (size_t t = 0; t <= levels; ++t)
        if (sizes[t] > 1) g.sizes.push_back(sizes[t]);
    if (g.sizes.size() < 2)
        return no_grid("the switches give " +
                       std::string(g.sizes.empty() ? "no level" : "one level") + " of " +
                       std::to_string(nodes.size()) + " nodes (" + sizes_text(sizes) +
                       " from the nodes up): node x nodes");
    for (const SlurmAddress &a : nodes) {
        std::vector<int> c;
        for (size_t t = 0; t <= levels; ++t) {
            if (sizes[t] < 2) continue;
            const std::string &name = t == 0 ? a.node : a.switches[levels - t];
            c.push_back(place[t].at(name));
        }
        g.coords.push_back(c);
    }
    g.found = true;
    return g;
}

SlurmHosts slurm_hosts(const std::vector<std::string> &host_of,
                       const std::vector<SlurmReading> &readings) {
    SlurmHosts out;
    std::map<std::string, std::pair<int, SlurmAddress>> by_host; // host -> first rank, place
    for (int r = 0; r < int(readings.size()); ++r) {
        const SlurmReading &reading = readings[size_t(r)];
        const std::string rank = "rank " + std::to_string(r);
        if (reading.state == SlurmReading::None) {
            out.problem = "SLURM_TOPOLOGY_ADDR is set on some ranks only (not on " + rank + ")";
            return out;
        }
        if (reading.state == SlurmReading::TooLong) {
            out.problem = rank + ": SLURM_TOPOLOGY_ADDR and its pattern are longer than " +
                          std::to_string(reading.limit) + " characters together";
            return out;
        }
        SlurmAddress address;
        try {
            address = parse_slurm_topology(reading.addr, reading.pattern);
        } catch (const SpecError &e) {
            out.problem = rank + ": " + e.what();
            return out;
        }
        const std::string &host = host_of[size_t(r)];
        const auto known = by_host.emplace(host, std::make_pair(r, address));
        const SlurmAddress &first = known.first->second.second;
        if (!known.second && (first.switches != address.switches || first.node != address.node)) {
            out.problem = "ranks " + std::to_string(known.first->second.first) + " and " +
                          std::to_string(r) + " on host " + host +
                          " give different SLURM_TOPOLOGY_ADDR";
            return out;
        }
    }
    for (auto &[host, place] : by_host) {
        out.hosts.push_back(host);
        out.addresses.push_back(std::move(place.second));
    }
    return out;
}

} // namespace themis
