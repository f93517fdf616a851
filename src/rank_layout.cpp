// rank_layout: place a communicator's ranks on the topology (see rank_layout.h).
#include "rank_layout.h"

#include <algorithm>
#include <map>

namespace themis {

namespace {

// Defaults for "auto": a node's shared memory, then the network between nodes.
constexpr const char *kAutoBandwidth[] = {"100Gbps", "25Gbps"};
constexpr const char *kAutoLatency[] = {"1us", "5us"};
// Largest node on which "auto" runs its node level with the direct algorithm.
constexpr int kMaxDirectNodePeers = 8;

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i)
        if (i == s.size() || s[i] == sep) {
            out.push_back(s.substr(start, i - start));
            start = i + 1;
        }
    return out;
}

RankLayout from_positions(Topology topo, std::vector<int> rank_at) {
    RankLayout l{std::move(topo), std::move(rank_at), {}};
    l.position_of.assign(l.rank_at.size(), 0);
    for (size_t p = 0; p < l.rank_at.size(); ++p) l.position_of[l.rank_at[p]] = int(p);
    return l;
}

// The ranks of every node, nodes ordered by their lowest rank.
std::vector<std::vector<int>> nodes_of(const std::vector<int> &node_of) {
    std::map<int, std::vector<int>> by_id;
    for (int r = 0; r < int(node_of.size()); ++r) by_id[node_of[r]].push_back(r);
    std::vector<std::vector<int>> nodes;
    for (auto &kv : by_id) nodes.push_back(kv.second);
    std::sort(nodes.begin(), nodes.end());
    return nodes;
}

// One attribute list of "auto": one or two values (node level, network level),
// keeping those of the levels that have more than one peer.
std::string auto_list(const std::string &key, const std::string &values,
                      const std::vector<bool> &level_kept) {
    auto items = split(values, ',');
    if (items.size() != 1 && items.size() != 2)
        throw SpecError("'" + key + "' with auto: expected 1 value or 2 (node level, network "
                        "level), got " + std::to_string(items.size()));
    std::string out;
    for (size_t level = 0; level < 2; ++level) {
        if (!level_kept[level]) continue;
        out += (out.empty() ? "" : ",") + items[items.size() == 1 ? 0 : level];
    }
    return out;
}

// Between nodes: halving-doubling where it applies (fewer steps), ring elsewhere.
const char *network_algorithm(int peers) { return (peers & (peers - 1)) == 0 ? "hd" : "ring"; }

// Within a node: one exchange with every peer at once. On shared memory each dependent
// step costs a synchronisation of ranks that share cores, and direct has a single one
// (bench/RESULTS.md, "Which knob helps": direct within 10 % of tuned up to 8 ranks a node,
// ring and hd 10-55 % behind). Wider nodes were not measured; they keep the step-count
// rule, since direct posts peers - 1 messages per stage.
const char *node_algorithm(int peers) {
    return peers <= kMaxDirectNodePeers ? "direct" : network_algorithm(peers);
}

RankLayout auto_layout(const std::string &attributes, const std::vector<int> &node_of) {
    const auto nodes = nodes_of(node_of);
    const size_t per_node = nodes.front().size();
    for (const auto &n : nodes)
        if (n.size() != per_node)
            throw LayoutError("nodes hold different numbers of ranks (" +
                              std::to_string(per_node) + " and " + std::to_string(n.size()) +
                              "): no regular node x network layout");
    const int levels[2] = {int(per_node), int(nodes.size())};
    std::vector<bool> kept = {levels[0] > 1, levels[1] > 1};
    if (!kept[0] && !kept[1]) kept[0] = true;

    std::map<std::string, std::string> lists = {
        {"bw", std::string(kAutoBandwidth[0]) + "," + kAutoBandwidth[1]},
        {"lat", std::string(kAutoLatency[0]) + "," + kAutoLatency[1]},
        {"alg", std::string(node_algorithm(levels[0])) + "," + network_algorithm(levels[1])}};
    for (const auto &section : split(attributes, ':')) {
        if (section.empty()) continue;
        auto eq = section.find('=');
        std::string key = section.substr(0, eq);
        if (eq == std::string::npos || !lists.count(key))
            throw SpecError("section \"" + section + "\": expected key=value (bw=, lat= or alg=)");
        lists[key] = section.substr(eq + 1);
    }
    std::string spec;
    for (int level = 0; level < 2; ++level)
        if (kept[level]) spec += (spec.empty() ? "" : "x") + std::to_string(levels[level]);
    for (const char *key : {"bw", "lat", "alg"})
        spec += std::string(":") + key + "=" + auto_list(key, lists[key], kept);

    std::vector<int> rank_at;
    for (int node = 0; node < levels[1]; ++node)
        for (int local = 0; local < levels[0]; ++local) rank_at.push_back(nodes[node][local]);
    return from_positions(parse_topology(spec), rank_at);
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

RankLayout make_rank_layout(const std::string &dims, const std::vector<int> &node_of) {
    if (node_of.empty()) throw LayoutError("empty communicator");
    const std::string head = dims.substr(0, dims.find(':'));
    if (head == "auto" || head.empty())
        return auto_layout(head.size() < dims.size() ? dims.substr(head.size()) : "", node_of);
    Topology topo = parse_topology(dims);
    if (topo.size() != int(node_of.size()))
        throw LayoutError("the spec has " + std::to_string(topo.size()) +
                          " ranks, the communicator " + std::to_string(node_of.size()));
    check_nodes_follow_dimensions(topo, node_of);
    std::vector<int> identity(node_of.size());
    for (size_t r = 0; r < identity.size(); ++r) identity[r] = int(r);
    return from_positions(topo, identity);
}

} // namespace themis
