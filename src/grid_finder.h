// grid_finder: the network's grid found from measurements, without a topology file.
//
// With dims=auto and no coll_themis_topo_file themis sees node x nodes. Many networks put
// their nodes on a grid instead, n_0 x n_1 x ... (a torus, one switch per dimension group as
// bench/netem builds): every node has one link per dimension, into the switch of its group
// (the nodes that differ from it only in that coordinate). This finds that grid from what
// one rank per node can measure; every rank runs it on the same agreed answers and gets the
// same grid.
//
// The model (bench/netem/topo.py builds exactly this; docs/design.md, "Grid finder"):
//   - neighbours (nodes that differ in one coordinate d) talk over their links of
//     dimension d; any other pair is routed one dimension at a time, always in the same
//     order of dimensions (dimension-ordered routing; netem's routes: lowest dimension
//     first). The finder numbers the dimensions in that order: dimension 0 is the one a
//     route crosses first, as netem's dimension 0 and the topology file netem writes, so
//     position = c0 + n0 * (c1 + n1 * ...) as in topology.h.
//   - a pair alone runs at the rate of the slowest link on its route;
//   - Out(a; b, c), a sending to b and to c at once: the two routes share a link exactly
//     when both leave a over the same dimension, i.e. the lowest dimension in which b
//     differs from a is the lowest in which c differs from a (routes that part at a never
//     meet again, and two that meet further on have left a alike);
//   - In(a; b, c), b and c sending to a at once: shared exactly when both arrive over the
//     same dimension, the highest in which each differs from a.
// So Out-sharing at a is an equivalence over the other nodes, and so is In-sharing. The
// dimensions, equal rates or not, are told apart by these alone; rates only choose which
// member of a group the others are compared with, and are reported per dimension.
//
// The search (a probe per question, asked one at a time; cost below):
//   1. root = the node whose key (host name) sorts first; the rate of every node sending to
//      it alone (N - 1 probes), to pick, in step 2, each group's fastest member as the one
//      the others are compared with (its flow fills the link they would share);
//   2. In-sharing at the root sorts the other nodes by the dimension they arrive over:
//      K_0, K_1, ... of sizes (n_k - 1) * n_0 * ... * n_{k-1}, which gives D and every n_k in
//      routing order; one group = a flat network (one switch), no grid;
//   3. each node of K_k is placed dimension by dimension: for j < k, Out(g_v; b, g_w) with
//      g_v, g_w two nodes already placed that agree with b below j and differ in j only is
//      not shared exactly when b's coordinate j is g_v's (at most n_j - 1 probes); for j = k,
//      b differing from the root below k, In(r_v; b, root) with r_v the root's neighbour of
//      coordinate v is not shared exactly when b's coordinate k is v (at most n_k - 2
//      probes); the root's own neighbours along k are numbered by key;
//   4. per dimension the median alone rate of up to `rate_samples` neighbour pairs;
//   5. two checks per node (an Out probe that must share, an In probe that must not) that
//      the grid predicts the network; any contradiction gives no grid.
// Every choice follows from the answers and the keys: permuting the nodes together with
// their keys permutes the coordinates found, and every rank finds the same grid.
//
// Cost: N - 1 rates, about N In probes (at most D each), at most N * sum_k (n_k - 1) Out
// and In probes to place (about half that on average), up to D * rate_samples rates, 2N
// checks: O(N log N) probes on a hypercube, O(N^1.5) on a square, O(N^2) on 2 x N/2 (an
// equality test per candidate coordinate). grid_probe_budget() is the worst case; above
// `max_nodes` (default 64) the finder does not probe at all.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "topo_file.h"

namespace themis {

// One measurement the finder asks for. Nodes are indices into the agreed list of nodes.
struct GridProbe {
    enum class Kind {
        Rate, // `node` sends to `peer` alone: its rate
        Out,  // `node` sends to `peer` and to `other` at once: do they slow each other down?
        In,   // `peer` and `other` send to `node` at once: do they slow each other down?
    };
    Kind kind = Kind::Rate;
    int node = -1;
    int peer = -1;
    // Out/In: the reference flow, a neighbour's or the fastest of a group, which fills the
    // link the two would share, so that a shared link shows as a slowdown (judge_sharing()).
    int other = -1;

    bool operator==(const GridProbe &o) const {
        return kind == o.kind && node == o.node && peer == o.peer && other == o.other;
    }
};

// "rate 3->0", "out 2->5,7", "in 5,7->2": for messages.
std::string describe(const GridProbe &probe);

// Answers the finder's probes. Every rank must give the same answers (agreed values).
class GridOracle {
  public:
    virtual ~GridOracle() = default;
    // The rate of probe.node sending to probe.peer alone: > 0, any unit (the same for all).
    virtual double rate(const GridProbe &probe) = 0;
    // Whether the two flows of an Out or In probe slow each other down.
    virtual bool shared(const GridProbe &probe) = 0;
};

struct GridLimits {
    int min_nodes = 4;        // fewer: no grid of two dimensions of 2 or more
    int max_nodes = 64;       // more: the finder does not probe (cost, above)
    long max_probes = 0;      // 0: grid_probe_budget(nodes)
    int rate_samples = 4;     // neighbour pairs measured alone per dimension
    double rate_spread = 2.0; // neighbour pairs of a dimension agree within this factor
    bool verify = true;       // step 5
};

struct GridResult {
    bool found = false;
    std::string reason;                   // when not found: why, one sentence
    std::vector<int> sizes;               // per dimension, dimension 0 first (routing order)
    std::vector<std::vector<int>> coords; // per node: its coordinate in every dimension
    std::vector<double> rates;            // per dimension: neighbour pairs' median alone rate
                                          // (in the oracle's unit); empty when not measured
    long probes = 0;                      // probes asked (each measurement counted once)

    // "2x2x2", or "no grid: REASON".
    std::string describe() const;
};

// Finds the grid of `nodes` nodes by asking `oracle`. `keys` (one per node, distinct, e.g.
// host names; empty: the node indices) order the nodes wherever the grid is symmetric.
// Throws std::invalid_argument for keys that are not one per node or not distinct.
GridResult find_grid(int nodes, GridOracle &oracle, const std::vector<std::string> &keys = {},
                     const GridLimits &limits = {});

// Measurements already made: the rates and sharing answers, any subset.
struct GridMeasurements {
    int nodes = 0;
    std::vector<std::vector<double>> rate; // [from][to]; 0, negative or NaN: not measured

    void set_rate(int from, int to, double value);
    // Stores the answer to an Out or In probe (peer and other in either order).
    void set_shared(const GridProbe &probe, bool shared);
    std::optional<double> find_rate(int from, int to) const;
    std::optional<bool> find_shared(const GridProbe &probe) const;
    const std::map<std::tuple<int, int, int, int>, bool> &shared_answers() const { return shared_; }

  private:
    std::map<std::tuple<int, int, int, int>, bool> shared_; // (kind, node, low, high)
};

// The search of find_grid() on measurements made beforehand (a probe they lack gives no
// grid and names it); a grid found is then checked against every measurement given (every
// sharing answer, every neighbour pair's rate), and the rates reported are the medians
// over every neighbour pair measured.
GridResult find_grid(const GridMeasurements &measured, const std::vector<std::string> &keys = {},
                     const GridLimits &limits = {});

// The same search, one probe at a time, for a caller that measures between steps:
//   GridSearch s(n, keys);
//   while (auto p = s.next()) { measure *p (agreed); s.answer_rate(r) or s.answer_shared(b); }
//   s.result();
// Each next() replays the search over the answers so far (cheap next to a measurement).
class GridSearch {
  public:
    GridSearch(int nodes, std::vector<std::string> keys = {}, GridLimits limits = {});
    // The next probe to measure, or nothing once result() holds the answer.
    std::optional<GridProbe> next();
    void answer_rate(double rate);   // answers the Rate probe next() returned
    void answer_shared(bool shared); // answers the Out or In probe next() returned
    const GridResult &result() const { return result_; }

  private:
    int nodes_;
    std::vector<std::string> keys_;
    GridLimits limits_;
    std::vector<double> answers_; // in the order asked: rates, or 0/1 for shared
    std::optional<GridProbe> pending_;
    GridResult result_;
};

// The most probes find_grid() may ask for any grid of `nodes` nodes (the default
// max_probes): the worst case over every grid shape of `nodes` nodes.
long grid_probe_budget(int nodes, const GridLimits &limits = {});
// The most probes find_grid() asks for the grid of these sizes (in routing order).
long grid_probe_worst_case(const std::vector<int> &sizes, const GridLimits &limits = {});

// Samples of an Out or In probe's two flows (any unit, the same for all): each measured
// alone and the two together, one value per repetition.
struct SharingSamples {
    std::vector<double> alone_a, alone_b, together_a, together_b;
};

// Whether the two flows slowed each other down, from the samples' medians: Yes when their
// combined rate lost more than half of what it loses when the faster one fills a link both
// use (then the slower keeps its rate and the faster gets the rest: the loss is
// min / (alone_a + alone_b); a half when the two are equal). A flow bottlenecked elsewhere
// costs a faster one only its own rate, so a slow flow into a fast link shows a small
// loss. Unclear while the loss lies within `margin` (a fraction of it) of that threshold:
// there a noisy repetition decides, so measure more and judge again with a margin of 0,
// which always decides. Throws std::invalid_argument for a flow without samples.
enum class Sharing { No, Yes, Unclear };
Sharing judge_sharing(const SharingSamples &samples, double margin);
constexpr double kSharingMargin = 0.35;

// Whether a pair's rate alone, `measured` with transfers sized for `sized_for` (another
// pair's rate: the pair was not measured yet; any unit, the same for both), must be measured
// again with transfers sized for itself: it ran more than kResizeFactor faster, so its
// transfers were that much shorter than meant, short enough for a shaper's burst to inflate
// the rate (a probe that then takes a link for faster than it is misjudges sharing).
// False when nothing sized them (`sized_for` 0).
bool measure_again_sized(double measured, double sized_for);
constexpr double kResizeFactor = 1.5;

// The grid as coll_themis_topo_file would give it, for make_rank_layout(): `hosts[i]` is
// node i's host name. Throws std::invalid_argument when no grid was found or the hosts do
// not match the nodes.
HostGrid host_grid_of(const GridResult &grid, const std::vector<std::string> &hosts);

} // namespace themis
