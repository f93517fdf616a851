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

// One tree's search: the cheapest cast of every group that has ranks holding the chunk and
// ranks lacking it. A group is the ranks that differ from one another in dimension d alone,
// named by its member of coordinate 0 there (its base). A cast reaches every rank its group
// lacks, and the targets' charges do not depend on the source: a group's cheapest cast is
// from its holder with the least load out on d (the lowest rank of those). A cast changes
// only its own group's links, so a group's cost changes only when the ranks it holds do:
// after a cast, only the groups of its targets on the other dimensions are costed again.
class TreeSearch {
  public:
    TreeSearch(const Topology &topo, const LinkLoads &loads, double bytes, double scale, int root)
        : topo_(topo), loads_(loads), bytes_(bytes), scale_(scale), active_(topo.active_dims()),
          holds_(size_t(topo.size()), false),
          groups_(size_t(topo.size()) * size_t(topo.num_dims())) {
        holds_[size_t(root)] = true;
        for (int d : active_) cost_group(root, d);
    }

    // The cheapest cast per rank reached of all groups; ties take the lower source, then
    // the lower dimension.
    GroupCast take_cheapest() {
        Group *best = nullptr;
        for (size_t key : listed_) {
            Group &g = groups_[key];
            if (!g.open) continue;
            if (!best || g.cost < best->cost ||
                (g.cost == best->cost &&
                 (g.cast.source < best->cast.source ||
                  (g.cast.source == best->cast.source && g.cast.dim < best->cast.dim))))
                best = &g;
        }
        best->open = false; // it reaches every rank its group lacks
        return best->cast;
    }

    // `cast` done: its targets hold the chunk; their groups on the other dimensions change.
    void reached(const GroupCast &cast) {
        for (int v : cast.targets) holds_[size_t(v)] = true;
        for (int v : cast.targets)
            for (int d : active_)
                if (d != cast.dim) cost_group(v, d);
    }

  private:
    struct Group {
        bool listed = false, open = false;
        double cost = 0;
        GroupCast cast;
    };

    // The cheapest cast of `rank`'s group on d, if it has holders and lacks ranks.
    void cost_group(int rank, int d) {
        const int base = topo_.with_coord(rank, d, 0);
        const size_t key = size_t(base) * size_t(topo_.num_dims()) + size_t(d);
        Group &g = groups_[key];
        if (!g.listed) {
            g.listed = true;
            listed_.push_back(key);
        }
        const size_t dims = size_t(topo_.num_dims());
        g.cast = GroupCast{d, -1, {}};
        for (int j = 0; j < topo_.dim(d).peers; ++j) {
            const int v = topo_.with_coord(base, d, j);
            if (!holds_[size_t(v)])
                g.cast.targets.push_back(v);
            else if (g.cast.source < 0 || loads_.out[size_t(v) * dims + size_t(d)] <
                                              loads_.out[size_t(g.cast.source) * dims + size_t(d)])
                g.cast.source = v;
        }
        g.open = g.cast.source >= 0 && !g.cast.targets.empty();
        if (g.open)
            g.cost = log_cost(loads_, charge_of(topo_, g.cast, bytes_), scale_) -
                     std::log(static_cast<double>(g.cast.targets.size()));
    }

    const Topology &topo_;
    const LinkLoads &loads_;
    double bytes_, scale_;
    std::vector<int> active_;
    std::vector<bool> holds_;
    std::vector<Group> groups_;  // by base x D + d
    std::vector<size_t> listed_; // the keys of groups costed so far, in that order
};

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
            TreeSearch search(topo, loads, bytes, scale, root);
            for (int reached = 1; reached < topo.size();) {
                GroupCast cast = search.take_cheapest();
                add_charge(loads, charge_of(topo, cast, bytes));
                search.reached(cast);
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
