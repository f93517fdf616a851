// grid_finder: the search of grid_finder.h (model, steps and cost there).
#include "grid_finder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>

#include "calibration.h"
#include "join_numbers.h"

namespace themis {

namespace {

// Ends a search with no grid and this sentence.
struct NoGrid {
    std::string reason;
};

// GridSearch's replay ran out of answers: this probe is the next to measure.
struct NeedProbe {
    GridProbe probe;
};

std::string coords_text(const std::vector<int> &coords) {
    return "(" + join_numbers(coords, ",") + ")";
}

// A rate for messages: 3 significant digits.
std::string rate_text(double r) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.3g", r);
    return buf;
}

bool is_prime(int n) {
    if (n < 2) return false;
    for (int d = 2; d * d <= n; ++d)
        if (n % d == 0) return false;
    return true;
}

// The first and the last dimension a route between coordinates a and b crosses (the lowest
// and the highest in which they differ); -1 when they are equal.
int first_dim(const std::vector<int> &a, const std::vector<int> &b) {
    for (size_t d = 0; d < a.size(); ++d)
        if (a[d] != b[d]) return int(d);
    return -1;
}
int last_dim(const std::vector<int> &a, const std::vector<int> &b) {
    for (size_t d = a.size(); d-- > 0;)
        if (a[d] != b[d]) return int(d);
    return -1;
}

// What the model predicts for an Out or In probe on a grid with these coordinates.
bool predicted_shared(const GridProbe &p, const std::vector<std::vector<int>> &coords) {
    const auto &a = coords[p.node];
    if (p.kind == GridProbe::Kind::Out)
        return first_dim(a, coords[p.peer]) == first_dim(a, coords[p.other]);
    return last_dim(a, coords[p.peer]) == last_dim(a, coords[p.other]);
}

std::tuple<int, int, int, int> shared_key(const GridProbe &p) {
    return {int(p.kind), p.node, std::min(p.peer, p.other), std::max(p.peer, p.other)};
}

// Every measurement of a search goes through here: asked of the oracle once (a repeated
// question gets the first answer, so every rank's replay stays in step), counted against
// the budget, and refused when unusable.
class Asker {
  public:
    Asker(GridOracle &oracle, long budget, std::function<std::string(int)> name)
        : oracle_(oracle), budget_(budget), name_(std::move(name)) {}

    double rate(int from, int to) {
        const auto key = std::make_pair(from, to);
        const auto found = rates_.find(key);
        if (found != rates_.end()) return found->second;
        GridProbe p;
        p.node = from;
        p.peer = to;
        spend();
        const double r = oracle_.rate(p);
        if (!(r > 0) || !std::isfinite(r))
            throw NoGrid{"the rate of " + name_(from) + " sending to " + name_(to) + " measured " +
                         rate_text(r)};
        return rates_[key] = r;
    }
    bool out_shared(int src, int peer, int ref) {
        return shared(GridProbe::Kind::Out, src, peer, ref);
    }
    bool in_shared(int dst, int peer, int ref) {
        return shared(GridProbe::Kind::In, dst, peer, ref);
    }
    long probes() const { return probes_; }

  private:
    bool shared(GridProbe::Kind kind, int node, int peer, int ref) {
        GridProbe p;
        p.kind = kind;
        p.node = node;
        p.peer = peer;
        p.other = ref;
        const auto key = shared_key(p);
        const auto found = shared_.find(key);
        if (found != shared_.end()) return found->second;
        spend();
        return shared_[key] = oracle_.shared(p);
    }
    void spend() {
        if (++probes_ > budget_)
            throw NoGrid{"the search needed more than " + std::to_string(budget_) + " probes"};
    }

    GridOracle &oracle_;
    long budget_;
    std::function<std::string(int)> name_;
    long probes_ = 0;
    std::map<std::pair<int, int>, double> rates_;
    std::map<std::tuple<int, int, int, int>, bool> shared_;
};

// One search (steps 1-5 of grid_finder.h). Nodes are placed on positions c0 + n0 * (c1 +
// ...) once the sizes are known.
class Search {
  public:
    Search(int nodes, GridOracle &oracle, const std::vector<std::string> &keys,
           const GridLimits &limits)
        : n_(nodes), keys_(keys), limits_(limits),
          ask_(oracle, budget(nodes, limits), [this](int v) { return name(v); }) {
        by_key_.resize(n_);
        std::iota(by_key_.begin(), by_key_.end(), 0);
        if (!keys_.empty())
            std::sort(by_key_.begin(), by_key_.end(),
                      [&](int a, int b) { return keys_[a] < keys_[b]; });
    }

    GridResult run() {
        GridResult r;
        try {
            check_count();
            root_ = by_key_[0];
            const auto groups = groups_at_root();
            sizes_ = sizes_of(groups);
            place(groups);
            measure_rates();
            if (limits_.verify) verify();
            r.found = true;
            r.sizes = sizes_;
            r.coords = coords_;
            r.rates = rates_;
        } catch (const NoGrid &no) {
            r = GridResult{};
            r.reason = no.reason;
        }
        r.probes = ask_.probes();
        return r;
    }

  private:
    static long budget(int nodes, const GridLimits &limits) {
        if (limits.max_probes > 0) return limits.max_probes;
        if (nodes < limits.min_nodes || nodes > limits.max_nodes) return 0;
        return grid_probe_budget(nodes, limits);
    }

    std::string name(int node) const {
        return keys_.empty() ? "node " + std::to_string(node) : keys_[node];
    }

    // Node counts no grid of two dimensions fits, or too many to probe: no measurement.
    void check_count() const {
        const std::string count = std::to_string(n_) + " nodes";
        if (n_ < limits_.min_nodes)
            throw NoGrid{count + ": fewer than " + std::to_string(limits_.min_nodes) +
                         ", too few for a grid of two dimensions"};
        if (is_prime(n_))
            throw NoGrid{count + ": a prime count fits no grid of two or more dimensions"};
        if (n_ > limits_.max_nodes)
            throw NoGrid{count + ": above the probing limit of " +
                         std::to_string(limits_.max_nodes) + " nodes"};
    }

    // Steps 1 and 2: the other nodes grouped by the dimension over which they arrive at the
    // root, smallest group (dimension 0) first. Each node is compared with each group's
    // first member, its fastest (they are taken fastest first, ties by key), largest group
    // first; In-sharing is an equivalence, so one shared answer places it.
    std::vector<std::vector<int>> groups_at_root() {
        std::vector<int> others;
        for (int b : by_key_)
            if (b != root_) others.push_back(b);
        std::vector<double> alone(n_);
        for (int b : others) alone[b] = ask_.rate(b, root_);
        std::stable_sort(others.begin(), others.end(),
                         [&](int a, int b) { return alone[a] > alone[b]; });
        std::vector<std::vector<int>> groups;
        for (int b : others) {
            std::vector<size_t> order(groups.size());
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
                return groups[x].size() > groups[y].size();
            });
            bool joined = false;
            for (size_t g : order) {
                if (!ask_.in_shared(root_, b, groups[g].front())) continue;
                groups[g].push_back(b);
                joined = true;
                break;
            }
            if (!joined) groups.push_back({b});
        }
        if (groups.size() == 1)
            throw NoGrid{"a flat network: any two nodes sending to " + name(root_) +
                         " at once slow each other down (one switch)"};
        std::stable_sort(groups.begin(), groups.end(),
                         [](const auto &x, const auto &y) { return x.size() < y.size(); });
        return groups;
    }

    // Group k holds (n_k - 1) * n_0 * ... * n_{k-1} nodes: the sizes, dimension 0 first.
    std::vector<int> sizes_of(const std::vector<std::vector<int>> &groups) const {
        std::vector<int> sizes;
        long below = 1;
        bool fits = true;
        for (const auto &g : groups) {
            if (long(g.size()) % below) fits = false;
            sizes.push_back(int(long(g.size()) / below) + 1);
            below *= sizes.back();
        }
        if (fits && below == n_) return sizes;
        std::string counts;
        for (const auto &g : groups)
            counts += (counts.empty() ? "" : ", ") + std::to_string(g.size());
        throw NoGrid{"the nodes sending to " + name(root_) + " fall into groups of " + counts +
                     " nodes, which fit no grid of " + std::to_string(n_) + " nodes"};
    }

    int position(const std::vector<int> &c) const {
        int pos = 0, stride = 1;
        for (size_t d = 0; d < c.size(); ++d) {
            pos += c[d] * stride;
            stride *= sizes_[d];
        }
        return pos;
    }
    int node_at(const std::vector<int> &c) const { return at_[position(c)]; }
    // The node one step along dimension d from x (cyclically).
    int next_along(int x, int d) const {
        std::vector<int> c = coords_[x];
        c[d] = (c[d] + 1) % sizes_[d];
        return node_at(c);
    }

    // Step 3, group after group: each group's nodes only need nodes of earlier groups.
    void place(const std::vector<std::vector<int>> &groups) {
        const int dims = int(sizes_.size());
        coords_.assign(n_, {});
        at_.assign(n_, -1);
        coords_[root_].assign(dims, 0);
        at_[0] = root_;
        root_group_.assign(dims, {});
        for (int k = 0; k < dims; ++k) {
            std::vector<int> members = groups[k];
            std::sort(members.begin(), members.end(), [&](int a, int b) { return key_less(a, b); });
            place_group(k, members);
        }
    }

    bool key_less(int a, int b) const { return keys_.empty() ? a < b : keys_[a] < keys_[b]; }

    // The nodes arriving over dimension k have coordinate 0 above k and not 0 at k.
    void place_group(int k, const std::vector<int> &members) {
        const int dims = int(sizes_.size());
        std::vector<int> root_neighbours, others;
        for (int b : members) {
            coords_[b].assign(dims, 0);
            for (int j = 0; j < k; ++j) coords_[b][j] = coordinate_below(b, j);
            const bool on_axis = std::all_of(coords_[b].begin(), coords_[b].begin() + k,
                                             [](int c) { return c == 0; });
            (on_axis ? root_neighbours : others).push_back(b);
        }
        // The root's neighbours along k: numbered by key (the grid is symmetric there).
        if (int(root_neighbours.size()) != sizes_[k] - 1)
            throw NoGrid{name(root_) + " has " + std::to_string(root_neighbours.size()) +
                         " neighbours along dimension " + std::to_string(k) + ", where " +
                         std::to_string(sizes_[k] - 1) + " are expected"};
        root_group_[k] = {root_};
        for (size_t v = 0; v < root_neighbours.size(); ++v) {
            coords_[root_neighbours[v]][k] = int(v) + 1;
            root_group_[k].push_back(root_neighbours[v]);
        }
        for (int b : others) coords_[b][k] = coordinate_at(b, k);
        for (int b : members) {
            int &cell = at_[position(coords_[b])];
            if (cell >= 0)
                throw NoGrid{name(cell) + " and " + name(b) + " both measure as " +
                             coords_text(coords_[b])};
            cell = b;
        }
    }

    // b's coordinate j (< its group's k), its lower ones known: g_v, the node that agrees with
    // b below j, has v at j and 0 above, reaches b first over j unless b has v there too.
    int coordinate_below(int b, int j) {
        std::vector<int> c = coords_[b];
        std::vector<int> anchor(sizes_[j]);
        for (int v = 0; v < sizes_[j]; ++v) {
            c[j] = v;
            anchor[v] = node_at(c);
            if (anchor[v] < 0)
                throw NoGrid{"no node measured at " + coords_text(c) + " to place " + name(b)};
        }
        for (int v = 0; v + 1 < sizes_[j]; ++v)
            if (!ask_.out_shared(anchor[v], b, anchor[v == 0 ? 1 : 0])) return v;
        return sizes_[j] - 1; // every other value was ruled out
    }

    // b's coordinate k, b differing from the root below k: the root's neighbour r_v reaches b
    // last over dimension k, as it reaches the root, unless b has v at k too.
    int coordinate_at(int b, int k) {
        for (int v = 1; v + 1 < sizes_[k]; ++v)
            if (!ask_.in_shared(root_group_[k][v], b, root_)) return v;
        return sizes_[k] - 1;
    }

    // Step 4: per dimension the median alone rate of neighbour pairs, the root's first (their
    // rates to it are known from step 1), then one step along from each node in key order.
    void measure_rates() {
        rates_.clear();
        for (int k = 0; k < int(sizes_.size()); ++k) {
            std::vector<double> samples;
            std::set<std::pair<int, int>> seen;
            for (size_t v = 1; v < root_group_[k].size(); ++v) {
                samples.push_back(ask_.rate(root_group_[k][v], root_));
                seen.insert(std::minmax(root_group_[k][v], root_));
            }
            for (int x : by_key_) {
                if (int(samples.size()) >= limits_.rate_samples) break;
                const int y = next_along(x, k);
                if (!seen.insert(std::minmax(x, y)).second) continue;
                samples.push_back(ask_.rate(x, y));
            }
            rates_.push_back(check_spread(k, samples));
        }
    }

    double check_spread(int k, const std::vector<double> &samples) const {
        const double med = median(samples);
        const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
        if (*hi > med * limits_.rate_spread || *lo < med / limits_.rate_spread)
            throw NoGrid{"neighbours along dimension " + std::to_string(k) + " measure " +
                         rate_text(*lo) + " to " + rate_text(*hi) +
                         ", too far apart for one dimension"};
        return med;
    }

    // Step 5: for every node x, with y one step along dimension 0 and z one step further
    // along the last dimension, routes to y and z leave x alike (Out shared) and arrive
    // over different dimensions (In not shared).
    void verify() {
        const int last = int(sizes_.size()) - 1;
        for (int x : by_key_) {
            const int y = next_along(x, 0);
            const int z = next_along(y, last);
            expect(GridProbe::Kind::Out, x, z, y, true);
            expect(GridProbe::Kind::In, x, z, y, false);
        }
    }

    void expect(GridProbe::Kind kind, int node, int peer, int ref, bool shared) {
        const bool got = kind == GridProbe::Kind::Out ? ask_.out_shared(node, peer, ref)
                                                      : ask_.in_shared(node, peer, ref);
        if (got == shared) return;
        GridProbe p;
        p.kind = kind;
        p.node = node;
        p.peer = peer;
        p.other = ref;
        throw NoGrid{"the network contradicts the grid " + join_numbers(sizes_, "x") +
                     " found: " + describe(p) + " measured " + (got ? "shared" : "not shared")};
    }

    int n_;
    const std::vector<std::string> &keys_;
    GridLimits limits_;
    Asker ask_;
    std::vector<int> by_key_; // the nodes, in key order
    int root_ = -1;
    std::vector<int> sizes_;
    std::vector<std::vector<int>> coords_;
    std::vector<int> at_;                      // position -> node, -1 while empty
    std::vector<std::vector<int>> root_group_; // [k][v]: the root's neighbour with v at k
    std::vector<double> rates_;
};

void check_keys(int nodes, const std::vector<std::string> &keys) {
    if (nodes < 0) throw std::invalid_argument("grid finder: negative node count");
    if (keys.empty()) return;
    if (int(keys.size()) != nodes)
        throw std::invalid_argument("grid finder: " + std::to_string(keys.size()) + " keys for " +
                                    std::to_string(nodes) + " nodes");
    if (std::set<std::string>(keys.begin(), keys.end()).size() != keys.size())
        throw std::invalid_argument("grid finder: two nodes with one key");
}

// Answers from measurements made beforehand; one they lack ends the search.
class MeasuredOracle : public GridOracle {
  public:
    explicit MeasuredOracle(const GridMeasurements &m) : m_(m) {}
    double rate(const GridProbe &p) override {
        if (const auto r = m_.find_rate(p.node, p.peer)) return *r;
        throw NoGrid{"no measurement of " + describe(p)};
    }
    bool shared(const GridProbe &p) override {
        if (const auto s = m_.find_shared(p)) return *s;
        throw NoGrid{"no measurement of " + describe(p)};
    }

  private:
    const GridMeasurements &m_;
};

// A grid found from measurements made beforehand, checked against all of them: every
// sharing answer as the model predicts it, every neighbour pair's rate within the spread
// of its dimension's median (which becomes the rate reported).
GridResult check_all(const GridMeasurements &m, GridResult g, const GridLimits &limits) {
    long wrong = 0;
    std::string first;
    for (const auto &[key, shared] : m.shared_answers()) {
        GridProbe p;
        p.kind = GridProbe::Kind(std::get<0>(key));
        p.node = std::get<1>(key);
        p.peer = std::get<2>(key);
        p.other = std::get<3>(key);
        if (predicted_shared(p, g.coords) == shared) continue;
        if (!wrong++) first = describe(p) + " measured " + (shared ? "shared" : "not shared");
    }
    auto fail = [&](const std::string &why) {
        GridResult no;
        no.reason = why;
        no.probes = g.probes;
        return no;
    };
    if (wrong)
        return fail(std::to_string(wrong) + " of " + std::to_string(m.shared_answers().size()) +
                    " sharing answers contradict the grid " + join_numbers(g.sizes, "x") +
                    " found (first: " + first + ")");
    for (size_t k = 0; k < g.sizes.size(); ++k) {
        std::vector<double> samples;
        for (int a = 0; a < m.nodes; ++a)
            for (int b = 0; b < m.nodes; ++b)
                if (first_dim(g.coords[a], g.coords[b]) == int(k) &&
                    last_dim(g.coords[a], g.coords[b]) == int(k))
                    if (const auto r = m.find_rate(a, b)) samples.push_back(*r);
        if (samples.empty()) continue; // (the search measured the root's neighbours)
        const double med = median(samples);
        for (double r : samples)
            if (r > med * limits.rate_spread || r < med / limits.rate_spread)
                return fail("neighbours along dimension " + std::to_string(k) + " measure " +
                            rate_text(r) + " against a median of " + rate_text(med) +
                            ", too far apart for one dimension");
        g.rates[k] = med;
    }
    return g;
}

// The ordered factorizations of n into factors of 2 or more, each passed to `visit`.
void each_shape(int n, std::vector<int> &prefix,
                const std::function<void(const std::vector<int> &)> &visit) {
    if (n == 1) {
        if (prefix.size() >= 2) visit(prefix);
        return;
    }
    for (int f = 2; f <= n; ++f) {
        if (n % f) continue;
        prefix.push_back(f);
        each_shape(n / f, prefix, visit);
        prefix.pop_back();
    }
}

} // namespace

std::string describe(const GridProbe &p) {
    const std::string a = std::to_string(p.node), b = std::to_string(p.peer),
                      c = std::to_string(p.other);
    switch (p.kind) {
    case GridProbe::Kind::Rate: return "rate " + a + "->" + b;
    case GridProbe::Kind::Out: return "out " + a + "->" + b + "," + c;
    case GridProbe::Kind::In: return "in " + b + "," + c + "->" + a;
    }
    return "?";
}

std::string GridResult::describe() const {
    return found ? join_numbers(sizes, "x") : "no grid: " + reason;
}

GridResult find_grid(int nodes, GridOracle &oracle, const std::vector<std::string> &keys,
                     const GridLimits &limits) {
    check_keys(nodes, keys);
    return Search(nodes, oracle, keys, limits).run();
}

void GridMeasurements::set_rate(int from, int to, double value) {
    if (from < 0 || to < 0 || from >= nodes || to >= nodes)
        throw std::out_of_range("GridMeasurements::set_rate: node out of range");
    if (rate.size() != size_t(nodes)) rate.assign(nodes, std::vector<double>(nodes, 0.0));
    rate[from][to] = value;
}

void GridMeasurements::set_shared(const GridProbe &probe, bool shared) {
    if (probe.kind == GridProbe::Kind::Rate)
        throw std::invalid_argument("GridMeasurements::set_shared: a Rate probe");
    shared_[shared_key(probe)] = shared;
}

std::optional<double> GridMeasurements::find_rate(int from, int to) const {
    if (from < 0 || to < 0 || size_t(from) >= rate.size() || size_t(to) >= rate[from].size())
        return std::nullopt;
    const double r = rate[from][to];
    if (!(r > 0)) return std::nullopt;
    return r;
}

std::optional<bool> GridMeasurements::find_shared(const GridProbe &probe) const {
    const auto found = shared_.find(shared_key(probe));
    if (found == shared_.end()) return std::nullopt;
    return found->second;
}

GridResult find_grid(const GridMeasurements &measured, const std::vector<std::string> &keys,
                     const GridLimits &limits) {
    check_keys(measured.nodes, keys);
    MeasuredOracle oracle(measured);
    GridResult g = Search(measured.nodes, oracle, keys, limits).run();
    return g.found ? check_all(measured, g, limits) : g;
}

GridSearch::GridSearch(int nodes, std::vector<std::string> keys, GridLimits limits)
    : nodes_(nodes), keys_(std::move(keys)), limits_(limits) {
    check_keys(nodes_, keys_);
}

namespace {

// Replays the answers given so far, in order; past them, names the probe to measure.
class ReplayOracle : public GridOracle {
  public:
    explicit ReplayOracle(const std::vector<double> &answers) : answers_(answers) {}
    double rate(const GridProbe &p) override { return next(p); }
    bool shared(const GridProbe &p) override { return next(p) != 0; }

  private:
    double next(const GridProbe &p) {
        if (i_ < answers_.size()) return answers_[i_++];
        throw NeedProbe{p};
    }
    const std::vector<double> &answers_;
    size_t i_ = 0;
};

} // namespace

std::optional<GridProbe> GridSearch::next() {
    if (pending_) return pending_;
    if (result_.found || !result_.reason.empty()) return std::nullopt;
    ReplayOracle oracle(answers_);
    try {
        result_ = Search(nodes_, oracle, keys_, limits_).run();
        return std::nullopt;
    } catch (const NeedProbe &need) {
        pending_ = need.probe;
        return pending_;
    }
}

void GridSearch::answer_rate(double rate) {
    if (!pending_ || pending_->kind != GridProbe::Kind::Rate)
        throw std::logic_error("GridSearch::answer_rate: no Rate probe pending");
    answers_.push_back(rate);
    pending_.reset();
}

void GridSearch::answer_shared(bool shared) {
    if (!pending_ || pending_->kind == GridProbe::Kind::Rate)
        throw std::logic_error("GridSearch::answer_shared: no Out or In probe pending");
    answers_.push_back(shared ? 1.0 : 0.0);
    pending_.reset();
}

long grid_probe_worst_case(const std::vector<int> &sizes, const GridLimits &limits) {
    long nodes = 1;
    for (int s : sizes) nodes *= s;
    const long dims = long(sizes.size());
    long total = (nodes - 1) * (1 + dims); // steps 1 and 2: a rate, then every group
    long below = 1, placed_before = 0;     // n_0 ... n_{k-1}; sum of (n_j - 1) below k
    for (int n : sizes) {
        const long group = (n - 1) * below;
        total += group * placed_before;                                    // step 3, below k
        total += (group - (n - 1)) * std::max(0, n - 2);                   // step 3, at k
        total += std::min<long>(limits.rate_samples, nodes * (n - 1) / 2); // step 4
        placed_before += n - 1;
        below *= n;
    }
    if (limits.verify) total += 2 * nodes; // step 5
    return total;
}

long grid_probe_budget(int nodes, const GridLimits &limits) {
    long worst = 0;
    std::vector<int> prefix;
    each_shape(nodes, prefix, [&](const std::vector<int> &sizes) {
        worst = std::max(worst, grid_probe_worst_case(sizes, limits));
    });
    return worst;
}

Sharing judge_sharing(const SharingSamples &s, double margin) {
    if (s.alone_a.empty() || s.alone_b.empty() || s.together_a.empty() || s.together_b.empty())
        throw std::invalid_argument("judge_sharing: a flow without samples");
    const double alone_a = median(s.alone_a), alone_b = median(s.alone_b);
    const double sum = alone_a + alone_b;
    if (!(sum > 0)) return Sharing::No; // nothing measured
    const double loss = 1 - (median(s.together_a) + median(s.together_b)) / sum;
    const double ratio = loss / (std::min(alone_a, alone_b) / sum / 2); // over the threshold
    if (std::abs(ratio - 1) <= margin && margin > 0) return Sharing::Unclear;
    return ratio > 1 ? Sharing::Yes : Sharing::No;
}

bool measure_again_sized(double measured, double sized_for) {
    return sized_for > 0 && measured > kResizeFactor * sized_for;
}

HostGrid host_grid_of(const GridResult &grid, const std::vector<std::string> &hosts) {
    if (!grid.found) throw std::invalid_argument("host_grid_of: no grid (" + grid.reason + ")");
    if (hosts.size() != grid.coords.size())
        throw std::invalid_argument("host_grid_of: " + std::to_string(hosts.size()) +
                                    " hosts for " + std::to_string(grid.coords.size()) + " nodes");
    HostGrid out;
    out.sizes = grid.sizes;
    for (size_t i = 0; i < hosts.size(); ++i)
        if (!out.coords.emplace(hosts[i], grid.coords[i]).second)
            throw std::invalid_argument("host_grid_of: host " + hosts[i] + " twice");
    return out;
}

} // namespace themis
