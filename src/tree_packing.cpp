// tree_packing: group casts chosen from per-link loads (see tree_packing.h).
#include "tree_packing.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace themis {

namespace {

// How steeply a link's weight grows with its load, in units of the load a perfect packing
// would have reached: 32 keeps every link within a few percent of the others once there
// are tens of chunks (docs/design.md, "The rooted bound").
constexpr double kSteepness = 32;

// The links one cast loads and the seconds it adds to each.
struct CastCharge {
    std::vector<std::pair<size_t, double>> in, out;
};

CastCharge charge_of(const Topology &topo, const GroupCast &cast, double bytes) {
    const int dims = topo.num_dims();
    const double whole = bytes / topo.dim(cast.dim).bandwidth;
    const double t = static_cast<double>(cast.targets.size());
    CastCharge c;
    c.out.emplace_back(size_t(cast.source) * dims + cast.dim, whole);
    for (int v : cast.targets) {
        c.in.emplace_back(size_t(v) * dims + cast.dim, whole);
        if (t > 1) c.out.emplace_back(size_t(v) * dims + cast.dim, whole * (t - 1) / t);
    }
    return c;
}

void add_charge(LinkLoads &loads, const CastCharge &c) {
    for (const auto &[link, s] : c.in) loads.in[link] += s;
    for (const auto &[link, s] : c.out) loads.out[link] += s;
}

// log(sum over the charged links of seconds x exp(kSteepness x load after / scale)): the
// cast's weighted cost, in logs so that no weight overflows.
double log_cost(const LinkLoads &loads, const CastCharge &c, double scale) {
    std::vector<double> terms;
    terms.reserve(c.in.size() + c.out.size());
    for (const auto &[link, s] : c.in)
        terms.push_back(std::log(s) + kSteepness * (loads.in[link] + s) / scale);
    for (const auto &[link, s] : c.out)
        terms.push_back(std::log(s) + kSteepness * (loads.out[link] + s) / scale);
    const double top = *std::max_element(terms.begin(), terms.end());
    double sum = 0;
    for (double x : terms) sum += std::exp(x - top);
    return top + std::log(sum);
}

// The ranks of `rank`'s group on dimension d that do not hold the chunk yet.
std::vector<int> lacking(const Topology &topo, int rank, int d, const std::vector<bool> &holds) {
    std::vector<int> out;
    for (int j = 0; j < topo.dim(d).peers; ++j) {
        const int v = topo.with_coord(rank, d, j);
        if (!holds[size_t(v)]) out.push_back(v);
    }
    return out;
}

// The cheapest cast per rank reached from the ranks that hold the chunk.
GroupCast cheapest_cast(const Topology &topo, const std::vector<bool> &holds,
                        const LinkLoads &loads, double bytes, double scale) {
    GroupCast best;
    double best_cost = std::numeric_limits<double>::infinity();
    const std::vector<int> active = topo.active_dims();
    for (int u = 0; u < topo.size(); ++u) {
        if (!holds[size_t(u)]) continue;
        for (int d : active) {
            GroupCast cast{d, u, lacking(topo, u, d, holds)};
            if (cast.targets.empty()) continue;
            const double cost = log_cost(loads, charge_of(topo, cast, bytes), scale) -
                                std::log(static_cast<double>(cast.targets.size()));
            // Strictly less: ties keep the earlier (lower rank, then lower dimension).
            if (cost < best_cost) {
                best_cost = cost;
                best = std::move(cast);
            }
        }
    }
    return best;
}

} // namespace

double LinkLoads::busiest() const {
    double most = 0;
    for (double s : in) most = std::max(most, s);
    for (double s : out) most = std::max(most, s);
    return most;
}

std::vector<CastTree> pack_broadcast_trees(const Topology &topo, int root,
                                           const std::vector<double> &chunk_bytes) {
    const size_t links = size_t(topo.size()) * topo.num_dims();
    LinkLoads loads{std::vector<double>(links, 0.0), std::vector<double>(links, 0.0)};
    const double rate = topo.broadcast_rate();
    std::vector<CastTree> trees;
    trees.reserve(chunk_bytes.size());
    double sent = 0;
    for (double bytes : chunk_bytes) {
        sent += bytes;
        CastTree tree;
        if (rate > 0 && bytes > 0) {
            const double scale = sent / rate; // a perfect packing's load by now
            std::vector<bool> holds(size_t(topo.size()), false);
            holds[size_t(root)] = true;
            for (int reached = 1; reached < topo.size();) {
                GroupCast cast = cheapest_cast(topo, holds, loads, bytes, scale);
                add_charge(loads, charge_of(topo, cast, bytes));
                for (int v : cast.targets) holds[size_t(v)] = true;
                reached += static_cast<int>(cast.targets.size());
                tree.push_back(std::move(cast));
            }
        }
        trees.push_back(std::move(tree));
    }
    return trees;
}

LinkLoads cast_loads(const Topology &topo, const std::vector<CastTree> &trees,
                     const std::vector<double> &chunk_bytes) {
    const size_t links = size_t(topo.size()) * topo.num_dims();
    LinkLoads loads{std::vector<double>(links, 0.0), std::vector<double>(links, 0.0)};
    for (size_t k = 0; k < trees.size(); ++k)
        for (const GroupCast &cast : trees[k])
            add_charge(loads, charge_of(topo, cast, chunk_bytes[k]));
    return loads;
}

} // namespace themis
