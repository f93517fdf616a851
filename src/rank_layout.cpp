// rank_layout: place a communicator's ranks on the topology (see rank_layout.h).
#include "rank_layout.h"

#include <algorithm>
#include <map>

#include "join_numbers.h"

namespace themis {

namespace {

// Defaults for "auto": inside a node (shared memory), then between nodes (the network).
constexpr const char *kAutoBandwidth = "100Gbps,25Gbps";
constexpr const char *kAutoLatency = "1us,5us";
// Largest node level on which "auto" runs the direct algorithm.
constexpr int kMaxDirectNodePeers = 8;

std::string join(const std::vector<std::string> &items, const char *sep) {
    std::string out;
    for (const auto &item : items) out += (out.empty() ? "" : sep) + item;
    return out;
}

RankLayout from_positions(Topology topo, std::vector<int> rank_at,
                          std::vector<std::string> level_names) {
    RankLayout l{std::move(topo), std::move(rank_at), {}, std::move(level_names)};
    l.position_of.assign(l.rank_at.size(), 0);
    for (size_t p = 0; p < l.rank_at.size(); ++p) l.position_of[l.rank_at[p]] = int(p);
    return l;
}

// One level of "auto" (see rank_layout.h).
struct Level {
    int peers;
    std::string name;
    bool inside_node;
};

// The ranks of every node, nodes ordered by their lowest rank.
std::vector<std::vector<int>> nodes_of(const std::vector<int> &node_of) {
    std::map<int, std::vector<int>> by_id;
    for (int r = 0; r < int(node_of.size()); ++r) by_id[node_of[r]].push_back(r);
    std::vector<std::vector<int>> nodes;
    for (auto &kv : by_id) nodes.push_back(kv.second);
    std::sort(nodes.begin(), nodes.end());
    return nodes;
}

void check_even(const std::vector<std::vector<int>> &nodes) {
    for (const auto &n : nodes)
        if (n.size() != nodes.front().size())
            throw LayoutError("nodes hold different numbers of ranks (" +
                              std::to_string(nodes.front().size()) + " and " +
                              std::to_string(n.size()) + "): no regular node x network layout");
}

// Ranks per package when the node level splits by packages (rule in rank_layout.h), else 0.
int ranks_per_package(const std::vector<std::vector<int>> &nodes,
                      const std::vector<int> &package_of) {
    if (package_of.empty()) return 0;
    int per_package = 0;
    for (const auto &node : nodes) {
        std::map<int, int> ranks_on;
        for (int r : node) {
            if (package_of[r] < 0) return 0;
            ++ranks_on[package_of[r]];
        }
        if (ranks_on.size() < 2) return 0;
        for (const auto &kv : ranks_on) {
            if (per_package && kv.second != per_package) return 0;
            per_package = kv.second;
        }
    }
    return per_package;
}

// The levels inside a node; orders each node's ranks as those levels number them.
std::vector<Level> arrange_node(std::vector<std::vector<int>> &nodes,
                                const std::vector<int> &package_of, bool split_packages) {
    const int per_node = int(nodes.front().size());
    const int per_package = split_packages ? ranks_per_package(nodes, package_of) : 0;
    if (!per_package) return {{per_node, "node", true}};
    for (auto &node : nodes)
        std::stable_sort(node.begin(), node.end(),
                         [&](int a, int b) { return package_of[a] < package_of[b]; });
    return {{per_package, "package", true}, {per_node / per_package, "node", true}};
}

// Each node's hostname, which all its ranks must report.
std::string host_of_node(const std::vector<int> &node, const std::vector<std::string> &host_of) {
    for (int r : node)
        if (host_of[r] != host_of[node.front()])
            throw LayoutError("ranks of one node report different hostnames (" +
                              host_of[node.front()] + " and " + host_of[r] + ")");
    return host_of[node.front()];
}

// A cell's index on the grid: c0 + n0 * (c1 + n1 * ...).
int slot_of(const std::vector<int> &coords, const std::vector<int> &sizes) {
    int slot = 0;
    for (int d = int(sizes.size()) - 1; d >= 0; --d) slot = slot * sizes[d] + coords[d];
    return slot;
}

// Why no node of the communicator sits on `slot`, for the LayoutError.
std::string empty_cell(const HostGrid &grid, int slot, size_t nodes) {
    std::string why = "the communicator's " + std::to_string(nodes) + " nodes leave cell (";
    for (const auto &host : grid.coords)
        if (slot_of(host.second, grid.sizes) == slot)
            return why + join_numbers(host.second, " ") + ") of the topology file's grid " +
                   join_numbers(grid.sizes, "x") + " empty (host " + host.first +
                   " is not in the communicator)";
    std::vector<int> coords;
    for (int n : grid.sizes) {
        coords.push_back(slot % n);
        slot /= n;
    }
    return why + join_numbers(coords, " ") + ") of the topology file's grid " +
           join_numbers(grid.sizes, "x") + " empty (no host in the file)";
}

// Each node's slot on the grid when the nodes fill it exactly.
std::vector<int> slots_on_grid(const std::vector<std::vector<int>> &nodes,
                               const std::vector<std::string> &host_of, const HostGrid &grid) {
    if (host_of.empty())
        throw LayoutError("the ranks' hostnames are unknown: cannot place the nodes on the "
                          "topology file's grid");
    std::vector<int> slots;
    std::map<int, std::string> host_at; // slot -> hostname
    for (const auto &node : nodes) {
        const std::string host = host_of_node(node, host_of);
        const auto found = grid.coords.find(host);
        if (found == grid.coords.end())
            throw LayoutError("host " + host + " is not in the topology file");
        const int slot = slot_of(found->second, grid.sizes);
        if (!host_at.emplace(slot, host).second)
            throw LayoutError("two nodes report the hostname " + host);
        slots.push_back(slot);
    }
    int cells = 1;
    for (int n : grid.sizes) cells *= n;
    for (int slot = 0; slot < cells; ++slot)
        if (!host_at.count(slot)) throw LayoutError(empty_cell(grid, slot, nodes.size()));
    return slots;
}

// The levels between nodes and each node's slot on them.
std::vector<Level> arrange_network(const std::vector<std::vector<int>> &nodes,
                                   const std::vector<std::string> &host_of, const HostGrid *grid,
                                   std::vector<int> &slot_of_node) {
    if (!grid) {
        slot_of_node.resize(nodes.size());
        for (size_t n = 0; n < nodes.size(); ++n) slot_of_node[n] = int(n);
        return {{int(nodes.size()), "network", false}};
    }
    slot_of_node = slots_on_grid(nodes, host_of, *grid);
    std::vector<Level> levels;
    for (size_t d = 0; d < grid->sizes.size(); ++d)
        levels.push_back({grid->sizes[d], "network" + std::to_string(d), false});
    return levels;
}

// Between nodes: ring, with halving-doubling as the planner's alternative where it applies
// ("ring/hd"): hd moves the same bytes in fewer steps, and the planner runs it where that is
// predicted clearly faster; where bandwidth decides, ring measured faster (docs/design.md,
// "Why the defaults"). A user's alg= list replaces this one, alternatives included.
std::string network_algorithm(int peers) {
    const AlgorithmInfo &hd = algorithm_info(Algorithm::HalvingDoubling);
    return algorithm_name(Algorithm::Ring) + (hd.accepts(peers) ? "/" + hd.name : std::string());
}

// Within a node: one exchange with every peer at once. On shared memory each dependent
// step costs a synchronisation of ranks that share cores, and direct has a single one: it
// measured close to tuned where ring and hd fell behind (docs/design.md, "Why the
// defaults"). Wider nodes were not measured; they run as the network does, since direct
// posts peers - 1 messages per stage.
std::string node_algorithm(int peers) {
    return peers <= kMaxDirectNodePeers ? algorithm_name(Algorithm::Direct)
                                        : network_algorithm(peers);
}

std::string default_algorithms(const std::vector<Level> &levels) {
    std::vector<std::string> algs;
    for (const Level &l : levels)
        algs.push_back(l.inside_node ? node_algorithm(l.peers) : network_algorithm(l.peers));
    return join(algs, ",");
}

// One value per level from an attribute list of "auto" (rule in rank_layout.h).
std::vector<std::string> per_level(const std::string &key, const std::string &list,
                                   const std::vector<Level> &levels) {
    const auto items = split(list, ',');
    if (items.size() == levels.size()) return items;
    if (items.size() != 1 && items.size() != 2) {
        std::vector<std::string> names;
        for (const Level &l : levels) names.push_back(l.name);
        // Where there are two levels, "one per level" is the second form again.
        const std::string per_level_form =
            levels.size() == 2 ? ": " + join(names, ",")
                               : ") or " + std::to_string(levels.size()) + " (" + join(names, ",");
        throw SpecError("'" + key +
                        "' with auto: expected 1 value or 2 (inside a node, between nodes" +
                        per_level_form + "), got " + std::to_string(items.size()));
    }
    std::vector<std::string> values;
    for (const Level &l : levels)
        values.push_back(items[items.size() == 1 || l.inside_node ? 0 : 1]);
    return values;
}

// The user's attribute lists over the defaults, by key.
std::map<std::string, std::string> attribute_lists(const std::string &attributes,
                                                   const std::vector<Level> &levels) {
    std::map<std::string, std::string> lists = {{"bw", kAutoBandwidth},
                                                {"lat", kAutoLatency},
                                                {"alg", default_algorithms(levels)},
                                                {"fill", "1"}};
    for (const auto &section : split(attributes, ':')) {
        if (section.empty()) continue;
        auto eq = section.find('=');
        std::string key = section.substr(0, eq);
        if (eq == std::string::npos || !lists.count(key))
            throw SpecError("section \"" + section +
                            "\": expected key=value (bw=, lat=, alg= or fill=)");
        lists[key] = section.substr(eq + 1);
    }
    return lists;
}

// The topology of the levels with more than one peer (the first level if none has).
Topology auto_topology(const std::string &attributes, const std::vector<Level> &levels,
                       std::vector<std::string> &level_names) {
    std::vector<size_t> kept;
    for (size_t i = 0; i < levels.size(); ++i)
        if (levels[i].peers > 1) kept.push_back(i);
    if (kept.empty()) kept.push_back(0);
    std::vector<std::string> sizes;
    for (size_t i : kept) {
        sizes.push_back(std::to_string(levels[i].peers));
        level_names.push_back(levels[i].name);
    }
    std::string spec = join(sizes, "x");
    auto lists = attribute_lists(attributes, levels);
    for (const char *key : {"bw", "lat", "alg", "fill"}) {
        const auto values = per_level(key, lists[key], levels);
        std::vector<std::string> kept_values;
        for (size_t i : kept) kept_values.push_back(values[i]);
        spec += std::string(":") + key + "=" + join(kept_values, ",");
    }
    return parse_topology(spec);
}

RankLayout auto_layout(const std::string &attributes, const RankPlacement &placement,
                       const HostGrid *grid, bool split_packages) {
    auto nodes = nodes_of(placement.node_of);
    check_even(nodes);
    std::vector<Level> levels = arrange_node(nodes, placement.package_of, split_packages);
    std::vector<int> slot_of_node;
    for (const Level &l : arrange_network(nodes, placement.host_of, grid, slot_of_node))
        levels.push_back(l);
    std::vector<std::string> level_names;
    Topology topo = auto_topology(attributes, levels, level_names);

    const int per_node = int(nodes.front().size());
    std::vector<int> rank_at(placement.node_of.size());
    for (size_t n = 0; n < nodes.size(); ++n)
        for (int local = 0; local < per_node; ++local)
            rank_at[local + per_node * slot_of_node[n]] = nodes[n][local];
    return from_positions(std::move(topo), std::move(rank_at), std::move(level_names));
}

void check_lengths(const RankPlacement &p) {
    const size_t n = p.node_of.size();
    if ((!p.host_of.empty() && p.host_of.size() != n) ||
        (!p.package_of.empty() && p.package_of.size() != n))
        throw std::invalid_argument("RankPlacement: host_of and package_of must be empty or "
                                    "hold one entry per rank");
}

// A spec fits when every node is exactly a block of the first k dimensions for some k
// (blocks of `block` consecutive ranks, block = n0 * ... * n(k-1)).
bool nodes_are_blocks(const std::vector<int> &node_of, int block) {
    std::map<int, int> block_of_node;
    for (int r = 0; r < int(node_of.size()); ++r) {
        if (node_of[r] != node_of[r - r % block]) return false;
        auto ins = block_of_node.emplace(node_of[r], r / block);
        if (ins.first->second != r / block) return false;
    }
    return true;
}

void check_nodes_follow_dimensions(const Topology &topo, const std::vector<int> &node_of) {
    int block = 1;
    for (int k = 0; k <= topo.num_dims(); ++k) {
        if (nodes_are_blocks(node_of, block)) return;
        if (k < topo.num_dims()) block *= topo.dim(k).peers;
    }
    throw LayoutError("ranks are not laid out as the spec says: the nodes do not each hold "
                      "whole groups of the first dimensions (rank = c0 + n0*c1 + ...)");
}

} // namespace

RankLayout make_rank_layout(const std::string &dims, const RankPlacement &placement,
                            const HostGrid *grid, bool split_packages) {
    const std::vector<int> &node_of = placement.node_of;
    if (node_of.empty()) throw LayoutError("empty communicator");
    check_lengths(placement);
    const std::string head = dims.substr(0, dims.find(':'));
    if (head == "auto" || head.empty())
        return auto_layout(head.size() < dims.size() ? dims.substr(head.size()) : "", placement,
                           grid, split_packages);
    Topology topo = parse_topology(dims);
    if (topo.size() != int(node_of.size()))
        throw LayoutError("the spec has " + std::to_string(topo.size()) +
                          " ranks, the communicator " + std::to_string(node_of.size()));
    check_nodes_follow_dimensions(topo, node_of);
    std::vector<int> identity(node_of.size());
    for (size_t r = 0; r < identity.size(); ++r) identity[r] = int(r);
    std::vector<std::string> names;
    for (int d = 0; d < topo.num_dims(); ++d) names.push_back("dim" + std::to_string(d));
    return from_positions(topo, identity, names);
}

std::vector<bool> node_local_dimensions(const RankLayout &layout, const std::vector<int> &node_of) {
    const Topology &topo = layout.topology;
    std::vector<bool> node(size_t(topo.num_dims()), false);
    for (int d = 0; d < topo.num_dims(); ++d) {
        if (topo.dim(d).peers < 2) continue;
        bool all = true;
        for (int p = 0; all && p < topo.size(); ++p)
            for (int c = 0; all && c < topo.dim(d).peers; ++c)
                all = node_of[size_t(layout.rank_at[size_t(topo.with_coord(p, d, c))])] ==
                      node_of[size_t(layout.rank_at[size_t(p)])];
        node[size_t(d)] = all;
    }
    return node;
}

std::vector<int> peer_ranks(const RankLayout &layout, int position, const std::vector<bool> &dims) {
    const Topology &topo = layout.topology;
    std::vector<int> ranks;
    for (int d = 0; d < topo.num_dims(); ++d) {
        if (!dims[size_t(d)]) continue;
        for (int c = 0; c < topo.dim(d).peers; ++c) {
            const int pos = topo.with_coord(position, d, c);
            if (pos != position) ranks.push_back(layout.rank_at[size_t(pos)]);
        }
    }
    return ranks;
}

} // namespace themis
