// Unit tests of src/grid_finder: grids found from rate and sharing measurements generated
// from known grids (exact, with noise, in any host order), the non-grids that must stay
// node x nodes with their reason, the one-probe-at-a-time search and the probe cost.
//
// The measurements come from EmulatedNet, an emulation of bench/netem's network written
// here independently of the finder: links, routes dimension by dimension, the slowest link
// alone, two flows that share a link. The grid expected is always the generator's input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "grid_finder.h"
#include "rank_layout.h"

using namespace themis;

namespace {

// One direction of one node's link of one dimension: (node, dimension, 0 send / 1 receive).
using Link = std::tuple<int, int, int>;

// bench/netem's network: node i at coordinates with dimension 0 fastest (i = c0 + n0 * (c1 +
// ...)), one link per node and dimension shaped both ways at the dimension's rate, every
// route crossing the dimensions in `order` (netem: 0, 1, ...; topo.py's routes).
struct EmulatedNet {
    std::vector<int> sizes;
    std::vector<double> rates;
    std::vector<int> order; // empty: 0, 1, ...

    int nodes() const {
        return std::accumulate(sizes.begin(), sizes.end(), 1, std::multiplies<int>());
    }
    std::vector<int> coords(int node) const {
        std::vector<int> c;
        for (int n : sizes) {
            c.push_back(node % n);
            node /= n;
        }
        return c;
    }
    int index(const std::vector<int> &c) const {
        int i = 0, stride = 1;
        for (size_t d = 0; d < sizes.size(); ++d) {
            i += c[d] * stride;
            stride *= sizes[d];
        }
        return i;
    }
    std::vector<int> route_order() const {
        if (!order.empty()) return order;
        std::vector<int> o(sizes.size());
        std::iota(o.begin(), o.end(), 0);
        return o;
    }
    // The links a route from s to t uses, hop by hop.
    std::set<Link> route(int s, int t) const {
        std::set<Link> links;
        std::vector<int> at = coords(s);
        const std::vector<int> to = coords(t);
        for (int d : route_order()) {
            if (at[d] == to[d]) continue;
            links.insert({index(at), d, 0});
            at[d] = to[d];
            links.insert({index(at), d, 1});
        }
        return links;
    }
    double capacity(const Link &l) const { return rates[std::get<1>(l)]; }
    double alone(int s, int t) const {
        double r = 1e300;
        for (const Link &l : route(s, t)) r = std::min(r, capacity(l));
        return r;
    }
    static bool meet(const std::set<Link> &a, const std::set<Link> &b) {
        for (const Link &l : a)
            if (b.count(l)) return true;
        return false;
    }
    // The two flows of an Out or In probe, as (from, to) pairs.
    static std::pair<std::pair<int, int>, std::pair<int, int>> flows(const GridProbe &p) {
        if (p.kind == GridProbe::Kind::Out) return {{p.node, p.peer}, {p.node, p.other}};
        return {{p.peer, p.node}, {p.other, p.node}};
    }
    bool shares_link(const GridProbe &p) const {
        const auto [f, g] = flows(p);
        return meet(route(f.first, f.second), route(g.first, g.second));
    }
    // Rates of the two flows together: alone each, or a fair share of the tightest link
    // both use, the slower keeping its own rate when that is less (max-min fairness).
    std::pair<double, double> together(const GridProbe &p) const {
        const auto [f, g] = flows(p);
        const auto rf = route(f.first, f.second), rg = route(g.first, g.second);
        const double a = alone(f.first, f.second), b = alone(g.first, g.second);
        double s = 1e300;
        for (const Link &l : rf)
            if (rg.count(l)) s = std::min(s, capacity(l));
        if (s == 1e300) return {a, b};
        const double x = std::min(a, std::max(s / 2, s - b));
        return {x, std::min(b, s - x)};
    }
};

double noisy(double value, double noise, std::mt19937_64 &rng) {
    if (noise <= 0) return value;
    return value * std::uniform_real_distribution<double>(1 - noise, 1 + noise)(rng);
}

// Every rate (with multiplicative noise in [1 - noise, 1 + noise]) and every sharing answer.
GridMeasurements measure_all(const EmulatedNet &net, double noise = 0, uint64_t seed = 1) {
    std::mt19937_64 rng(seed);
    GridMeasurements m;
    m.nodes = net.nodes();
    for (int a = 0; a < m.nodes; ++a)
        for (int b = 0; b < m.nodes; ++b)
            if (a != b) m.set_rate(a, b, noisy(net.alone(a, b), noise, rng));
    for (auto kind : {GridProbe::Kind::Out, GridProbe::Kind::In})
        for (int a = 0; a < m.nodes; ++a)
            for (int b = 0; b < m.nodes; ++b)
                for (int c = b + 1; c < m.nodes; ++c) {
                    if (a == b || a == c) continue;
                    GridProbe p;
                    p.kind = kind;
                    p.node = a;
                    p.peer = b;
                    p.other = c;
                    m.set_shared(p, net.shares_link(p));
                }
    return m;
}

// Answers probes as they come: rates with noise, sharing as the links say.
class NetOracle : public GridOracle {
  public:
    NetOracle(const EmulatedNet &net, double noise = 0, uint64_t seed = 1)
        : net_(net), noise_(noise), rng_(seed) {}
    double rate(const GridProbe &p) override {
        ++rates;
        return noisy(net_.alone(p.node, p.peer), noise_, rng_);
    }
    bool shared(const GridProbe &p) override {
        ++shares;
        return net_.shares_link(p);
    }
    long rates = 0, shares = 0;

  private:
    const EmulatedNet &net_;
    double noise_;
    std::mt19937_64 rng_;
};

// Host names that sort as the node indices: "h000", "h001", ...
std::vector<std::string> host_names(int n) {
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "h%03d", i);
        names.push_back(buf);
    }
    return names;
}

// The grid found is the generator's: sizes, every node's coordinates, rates within noise.
void expect_grid(const GridResult &g, const EmulatedNet &net, double noise,
                 const std::vector<int> &node_of = {}) {
    ASSERT_TRUE(g.found) << g.describe();
    EXPECT_EQ(g.sizes, net.sizes);
    for (int i = 0; i < net.nodes(); ++i) {
        const int at = node_of.empty() ? i : node_of[i];
        EXPECT_EQ(g.coords[at], net.coords(i)) << "generator's node " << i;
    }
    ASSERT_EQ(g.rates.size(), net.rates.size());
    for (size_t d = 0; d < net.rates.size(); ++d)
        EXPECT_NEAR(g.rates[d], net.rates[d], net.rates[d] * noise + 1e-9) << "dimension " << d;
}

struct Case {
    const char *name;
    EmulatedNet net;
};

// The grids of the brief: rates in Mbit/s as netem shapes them.
std::vector<Case> grids() {
    return {
        {"2x4 100/200", {{2, 4}, {100, 200}, {}}},
        {"2x2x2 50/100/200", {{2, 2, 2}, {50, 100, 200}, {}}},
        {"2x2x2 100/100/100", {{2, 2, 2}, {100, 100, 100}, {}}},
        {"4x4 100/100", {{4, 4}, {100, 100}, {}}},
        {"4x4 200/100", {{4, 4}, {200, 100}, {}}},
        {"2x2x2x2 100", {{2, 2, 2, 2}, {100, 100, 100, 100}, {}}},
        {"2x2 100/200", {{2, 2}, {100, 200}, {}}},
        {"2x3 100/100", {{2, 3}, {100, 100}, {}}},
        {"3x2x2 200/100/50", {{3, 2, 2}, {200, 100, 50}, {}}},
    };
}

} // namespace

TEST(GridFinder, FindsEveryGridFromExactMeasurements) {
    for (const Case &c : grids()) {
        SCOPED_TRACE(c.name);
        const GridMeasurements m = measure_all(c.net);
        expect_grid(find_grid(m, host_names(c.net.nodes())), c.net, 0);
        // Without keys the node indices order the nodes: the same grid.
        expect_grid(find_grid(m), c.net, 0);
    }
}

TEST(GridFinder, ToleratesTenAndTwentyPercentNoiseOnRates) {
    for (const Case &c : grids())
        for (double noise : {0.1, 0.2})
            for (uint64_t seed = 1; seed <= 5; ++seed) {
                SCOPED_TRACE(std::string(c.name) + " noise " + std::to_string(noise) + " seed " +
                             std::to_string(seed));
                const GridMeasurements m = measure_all(c.net, noise, seed);
                expect_grid(find_grid(m, host_names(c.net.nodes())), c.net, noise);
                NetOracle asked(c.net, noise, seed);
                expect_grid(find_grid(c.net.nodes(), asked, host_names(c.net.nodes())), c.net,
                            noise);
            }
}

// Dimensions of equal rates differ only in which links two flows share: every node's
// neighbours are sorted into the right dimension all the same.
TEST(GridFinder, TellsEqualRateDimensionsApartBySharing) {
    const EmulatedNet net{{2, 2, 2}, {100, 100, 100}, {}};
    NetOracle oracle(net);
    const GridResult g = find_grid(net.nodes(), oracle, host_names(8));
    ASSERT_TRUE(g.found) << g.describe();
    for (int a = 0; a < 8; ++a)
        for (int b = 0; b < 8; ++b) {
            const auto ca = net.coords(a), cb = net.coords(b);
            for (int d = 0; d < 3; ++d) // same group of dimension d here iff there
                EXPECT_EQ(g.coords[a][d] != g.coords[b][d], ca[d] != cb[d]) << a << " " << b;
        }
    EXPECT_EQ(g.rates, (std::vector<double>{100, 100, 100}));
}

// Permuting the hosts, their names with them, permutes the coordinates found.
TEST(GridFinder, PermutedHostOrderGivesPermutedCoordinates) {
    std::mt19937_64 rng(7);
    for (const Case &c : grids())
        for (double noise : {0.0, 0.15}) {
            SCOPED_TRACE(c.name);
            const int n = c.net.nodes();
            std::vector<int> at(n); // generator's node i is input node at[i]
            std::iota(at.begin(), at.end(), 0);
            std::shuffle(at.begin(), at.end(), rng);
            const GridMeasurements m = measure_all(c.net, noise, 3);
            GridMeasurements p;
            p.nodes = n;
            for (int a = 0; a < n; ++a)
                for (int b = 0; b < n; ++b)
                    if (const auto r = m.find_rate(a, b)) p.set_rate(at[a], at[b], *r);
            for (const auto &[key, shared] : m.shared_answers()) {
                GridProbe q;
                q.kind = GridProbe::Kind(std::get<0>(key));
                q.node = at[std::get<1>(key)];
                q.peer = at[std::get<2>(key)];
                q.other = at[std::get<3>(key)];
                p.set_shared(q, shared);
            }
            const std::vector<std::string> names = host_names(n);
            std::vector<std::string> permuted(n);
            for (int i = 0; i < n; ++i) permuted[at[i]] = names[i];
            const GridResult g = find_grid(p, permuted);
            expect_grid(g, c.net, noise, at);
            // Deterministic: the same inputs give the same grid.
            const GridResult again = find_grid(p, permuted);
            EXPECT_EQ(again.coords, g.coords);
            EXPECT_EQ(again.rates, g.rates);
        }
}

// Dimension 0 is the one routes cross first, whatever the generator numbers it.
TEST(GridFinder, NumbersDimensionsInRoutingOrder) {
    const EmulatedNet net{{2, 4}, {100, 200}, {1, 0}}; // routes cross dimension 1 first
    const GridResult g = find_grid(measure_all(net), host_names(8));
    ASSERT_TRUE(g.found) << g.describe();
    EXPECT_EQ(g.sizes, (std::vector<int>{4, 2}));
    EXPECT_EQ(g.rates, (std::vector<double>{200, 100}));
    for (int i = 0; i < 8; ++i) {
        const auto c = net.coords(i);
        EXPECT_EQ(g.coords[i], (std::vector<int>{c[1], c[0]})) << i;
    }
}

TEST(GridFinder, OneSwitchIsAFlatNetwork) {
    for (int n : {4, 6, 8, 12}) {
        const EmulatedNet flat{{n}, {100}, {}};
        const GridResult g = find_grid(measure_all(flat), host_names(n));
        EXPECT_FALSE(g.found);
        EXPECT_NE(g.reason.find("flat network"), std::string::npos) << g.reason;
        EXPECT_NE(g.reason.find("h000"), std::string::npos) << "names the node: " << g.reason;
    }
}

TEST(GridFinder, CountsThatFitNoGridAreNotProbed) {
    for (int n : {5, 7, 11, 13, 31}) {
        NetOracle oracle(EmulatedNet{{n}, {100}, {}});
        const GridResult g = find_grid(n, oracle);
        EXPECT_FALSE(g.found);
        EXPECT_NE(g.reason.find("prime"), std::string::npos) << g.reason;
        EXPECT_EQ(g.probes, 0);
        EXPECT_EQ(oracle.rates + oracle.shares, 0);
    }
    for (int n : {0, 1, 2, 3}) {
        GridMeasurements none;
        none.nodes = n;
        const GridResult g = find_grid(none);
        EXPECT_FALSE(g.found);
        EXPECT_NE(g.reason.find("fewer than 4"), std::string::npos) << g.reason;
    }
}

TEST(GridFinder, StopsAboveTheNodeLimit) {
    const EmulatedNet net{{8, 9}, {100, 100}, {}};
    NetOracle oracle(net);
    const GridResult g = find_grid(net.nodes(), oracle);
    EXPECT_FALSE(g.found);
    EXPECT_EQ(g.reason, "72 nodes: above the probing limit of 64 nodes");
    EXPECT_EQ(oracle.rates + oracle.shares, 0);
    GridLimits wider;
    wider.max_nodes = 128;
    NetOracle again(net);
    expect_grid(find_grid(net.nodes(), again, {}, wider), net, 0);
}

// 6 nodes whose sharing answers fit no grid: a 2x3 grid's answers with some flipped, and
// answers at random. The finder says why and finds nothing.
TEST(GridFinder, InconsistentSharingGivesNoGrid) {
    const EmulatedNet net{{2, 3}, {100, 100}, {}};
    const GridMeasurements exact = measure_all(net);
    std::mt19937_64 rng(11);
    for (int trial = 0; trial < 20; ++trial) {
        GridMeasurements m = exact;
        std::vector<std::tuple<int, int, int, int>> keys;
        for (const auto &entry : exact.shared_answers()) keys.push_back(entry.first);
        for (int flips = 1 + trial % 3; flips > 0; --flips) {
            const auto &k = keys[rng() % keys.size()];
            GridProbe p;
            p.kind = GridProbe::Kind(std::get<0>(k));
            p.node = std::get<1>(k);
            p.peer = std::get<2>(k);
            p.other = std::get<3>(k);
            m.set_shared(p, !*m.find_shared(p));
        }
        const GridResult g = find_grid(m);
        EXPECT_FALSE(g.found) << "trial " << trial << ": " << g.describe();
        EXPECT_FALSE(g.reason.empty());
    }
    for (int trial = 0; trial < 20; ++trial) {
        GridMeasurements m = exact;
        for (const auto &entry : exact.shared_answers()) {
            GridProbe p;
            p.kind = GridProbe::Kind(std::get<0>(entry.first));
            p.node = std::get<1>(entry.first);
            p.peer = std::get<2>(entry.first);
            p.other = std::get<3>(entry.first);
            m.set_shared(p, rng() % 2);
        }
        EXPECT_FALSE(find_grid(m).found) << "random answers, trial " << trial;
    }
    // One flip, named: the finder's check against every answer reports the contradiction.
    GridMeasurements one = exact;
    GridProbe p;
    p.kind = GridProbe::Kind::Out;
    p.node = 5;
    p.peer = 0;
    p.other = 2;
    one.set_shared(p, !*one.find_shared(p));
    const GridResult g = find_grid(one);
    EXPECT_FALSE(g.found);
    EXPECT_NE(g.reason.find("contradict"), std::string::npos) << g.reason;
}

TEST(GridFinder, NeighbourRatesTooFarApartGiveNoGrid) {
    const EmulatedNet net{{2, 4}, {100, 200}, {}};
    GridMeasurements m = measure_all(net);
    m.set_rate(1, 0, 30); // a dimension-0 pair at 30 where its others run at 100
    const GridResult g = find_grid(m);
    EXPECT_FALSE(g.found);
    EXPECT_NE(g.reason.find("too far apart"), std::string::npos) << g.reason;
}

TEST(GridFinder, NamesAMeasurementItLacks) {
    GridMeasurements m;
    m.nodes = 4;
    m.set_rate(1, 0, 100);
    const GridResult g = find_grid(m);
    EXPECT_FALSE(g.found);
    EXPECT_EQ(g.reason, "no measurement of rate 2->0");
}

TEST(GridFinder, RefusesKeysThatAreNotOnePerNode) {
    NetOracle oracle(EmulatedNet{{2, 2}, {1, 1}, {}});
    EXPECT_THROW(find_grid(4, oracle, {"a", "b"}), std::invalid_argument);
    EXPECT_THROW(find_grid(4, oracle, {"a", "b", "c", "a"}), std::invalid_argument);
}

// The probes one at a time, as a caller measuring between steps drives them: the same
// probes, in the same order, as the oracle's search asks, and the same grid.
TEST(GridFinder, SearchOneProbeAtATime) {
    for (const Case &c : grids()) {
        SCOPED_TRACE(c.name);
        const int n = c.net.nodes();
        NetOracle oracle(c.net, 0.1, 5);
        const GridResult direct = find_grid(n, oracle, host_names(n));
        GridSearch search(n, host_names(n));
        NetOracle stepper(c.net, 0.1, 5);
        long asked = 0;
        while (const auto p = search.next()) {
            ASSERT_LT(++asked, 100000);
            EXPECT_EQ(search.next(), p) << "asks again until answered";
            if (p->kind == GridProbe::Kind::Rate)
                search.answer_rate(stepper.rate(*p));
            else
                search.answer_shared(stepper.shared(*p));
        }
        const GridResult &g = search.result();
        EXPECT_EQ(g.describe(), direct.describe());
        EXPECT_EQ(g.coords, direct.coords);
        EXPECT_EQ(g.rates, direct.rates);
        EXPECT_EQ(asked, g.probes);
        EXPECT_EQ(asked, oracle.rates + oracle.shares);
        EXPECT_THROW(search.answer_rate(1), std::logic_error);
    }
}

// The cost: within grid_probe_worst_case() for its shape, itself within the budget of
// the node count; the cheapest shapes stay far below.
TEST(GridFinder, ProbesStayWithinTheBudget) {
    const std::vector<std::vector<int>> shapes = {
        {2, 2},  {2, 4},       {4, 2},  {2, 2, 2}, {3, 3}, {2, 8},    {8, 2},
        {4, 4},  {2, 2, 2, 2}, {2, 16}, {4, 8},    {8, 8}, {4, 4, 4}, {2, 2, 2, 2, 2, 2},
        {2, 32}, {3, 4, 5}};
    for (const auto &sizes : shapes) {
        EmulatedNet net{sizes, std::vector<double>(sizes.size(), 100), {}};
        NetOracle oracle(net);
        const GridResult g = find_grid(net.nodes(), oracle, host_names(net.nodes()));
        ASSERT_TRUE(g.found) << g.describe();
        EXPECT_EQ(g.sizes, sizes);
        EXPECT_LE(g.probes, grid_probe_worst_case(sizes));
        EXPECT_LE(grid_probe_worst_case(sizes), grid_probe_budget(net.nodes()));
    }
    EXPECT_EQ(grid_probe_budget(7), 0);
    EXPECT_GT(grid_probe_budget(64), grid_probe_budget(32));
}

// The probe counts for 4 to 1024 nodes (printed; docs/design.md quotes them): the emulated
// networks' shapes, then hypercube, 4-ary and square shapes, and the worst shape of each
// count from 64 nodes.
TEST(GridFinder, ProbeCountsFrom4To1024Nodes) {
    GridLimits big;
    big.max_nodes = 1024;
    const std::vector<std::vector<int>> shapes = {{2, 2},
                                                  {2, 4},
                                                  {2, 2, 2},
                                                  {4, 4},
                                                  {2, 2, 2, 2},
                                                  {2, 2, 2, 2, 2, 2},
                                                  {4, 4, 4},
                                                  {8, 8},
                                                  {2, 2, 2, 2, 2, 2, 2},
                                                  {8, 16},
                                                  {2, 2, 2, 2, 2, 2, 2, 2},
                                                  {4, 4, 4, 4},
                                                  {16, 16},
                                                  {2, 2, 2, 2, 2, 2, 2, 2, 2},
                                                  {8, 8, 8},
                                                  {2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
                                                  {4, 4, 4, 4, 4},
                                                  {32, 32},
                                                  {8, 8, 16}};
    for (const auto &sizes : shapes) {
        EmulatedNet net{sizes, std::vector<double>(sizes.size(), 100), {}};
        NetOracle oracle(net);
        const GridResult g = find_grid(net.nodes(), oracle, {}, big);
        ASSERT_TRUE(g.found) << g.describe();
        EXPECT_LE(g.probes, grid_probe_worst_case(sizes, big));
        std::string shape;
        for (int s : sizes) shape += (shape.empty() ? "" : "x") + std::to_string(s);
        std::printf("grid probes %5d nodes %-20s: %6ld (%ld rates, %ld sharing), worst case %ld\n",
                    net.nodes(), shape.c_str(), g.probes, oracle.rates, oracle.shares,
                    grid_probe_worst_case(sizes, big));
    }
    for (int n : {64, 128, 256, 512, 1024})
        std::printf("grid probes %5d nodes, worst shape: %ld\n", n, grid_probe_budget(n, big));
}

TEST(GridFinder, JudgeSharingComparesWithTheLossOfASharedLink) {
    // One sample each, no margin: the threshold alone decides.
    const auto slowed_down = [](double alone_a, double alone_b, double together_a,
                                double together_b) {
        return judge_sharing({{alone_a}, {alone_b}, {together_a}, {together_b}}, 0) == Sharing::Yes;
    };
    EXPECT_TRUE(slowed_down(100, 100, 50, 50));    // one link of 100, shared
    EXPECT_FALSE(slowed_down(100, 100, 100, 100)); // two links
    EXPECT_FALSE(slowed_down(100, 100, 90, 95));   // noise
    EXPECT_TRUE(slowed_down(50, 200, 50, 150));    // 50 into a link of 200: a loss of 1/5
    EXPECT_FALSE(slowed_down(50, 200, 50, 190));
    EXPECT_FALSE(slowed_down(0, 0, 0, 0));
}

TEST(GridFinder, JudgeSharingAsksForMoreSamplesNearTheThreshold) {
    // 100 and 100 Mbit/s: the threshold is a loss of a quarter (together 150 in all).
    const auto judged = [](double together_a, double together_b, double margin) {
        return judge_sharing({{100, 90, 110}, {100}, {together_a}, {together_b}}, margin);
    };
    EXPECT_EQ(judged(50, 50, 0.35), Sharing::Yes);     // a loss of 1/2: twice the threshold
    EXPECT_EQ(judged(100, 95, 0.35), Sharing::No);     // 1/40: a tenth of it
    EXPECT_EQ(judged(70, 70, 0.35), Sharing::Unclear); // 3/10: 1.2 times
    EXPECT_EQ(judged(80, 85, 0.35), Sharing::Unclear); // 7/40: 0.7 times
    EXPECT_EQ(judged(80, 85, 0.25), Sharing::No);      // outside a narrower margin
    EXPECT_EQ(judged(70, 70, 0), Sharing::Yes);        // no margin: always decided
    EXPECT_EQ(judged(80, 85, 0), Sharing::No);
    // Medians: one outlier among three samples does not move the verdict.
    EXPECT_EQ(judge_sharing({{100, 100, 100}, {100, 100, 100}, {50, 100, 51}, {50, 49, 100}}, 0.35),
              Sharing::Yes);
    EXPECT_THROW(judge_sharing({{100}, {}, {50}, {50}}, 0.35), std::invalid_argument);
}

TEST(GridFinder, AnAloneRateFarAboveItsTransfersSizeIsMeasuredAgain) {
    EXPECT_TRUE(measure_again_sized(271, 50)); // sized for 50: ran 5.4x faster
    EXPECT_TRUE(measure_again_sized(76, 50));  // just over kResizeFactor
    EXPECT_FALSE(measure_again_sized(75, 50)); // at it
    EXPECT_FALSE(measure_again_sized(40, 50)); // slower: its transfers were long enough
    EXPECT_FALSE(measure_again_sized(271, 0)); // nothing sized them
    // Why (a 16-rank job on emulated 2x2x2 50/100/200): one flow into a 200 Mbit/s link and
    // one into a 100 one, on two links. Its transfers sized for 50 Mbit/s, the first flow
    // measured 271 alone, and the two together looked shared; measured again, 205: not.
    EXPECT_EQ(judge_sharing({{271}, {98.9}, {197.9}, {100}}, 0), Sharing::Yes);
    EXPECT_EQ(judge_sharing({{205}, {98.9}, {197.9}, {100}}, 0), Sharing::No);
}

// End to end: every sharing answer decided by judge_sharing() from rates measured alone and
// together (noisy), as the component would. Equal rates show a loss of a half, 50 Mbit/s
// into a 200 Mbit/s link a fifth: the noise each tolerates differs. (Over 200 seeds at 10 %
// noise, 2x2x2 50/100/200 failed 6 times without the second look, none with it; 3x2x2
// 200/100/50 30 and 4 times: that one is held to 5 %.)
TEST(GridFinder, FindsGridsFromMeasuredSlowdowns) {
    struct Noisy {
        EmulatedNet net;
        double noise;
    };
    const std::vector<Noisy> cases = {{{{2, 2, 2}, {100, 100, 100}, {}}, 0.10},
                                      {{{4, 4}, {100, 100}, {}}, 0.10},
                                      {{{2, 4}, {100, 200}, {}}, 0.10},
                                      {{{2, 2, 2, 2}, {100, 100, 100, 100}, {}}, 0.10},
                                      {{{2, 2, 2}, {50, 100, 200}, {}}, 0.10},
                                      {{{3, 2, 2}, {200, 100, 50}, {}}, 0.05},
                                      {{{8}, {100}, {}}, 0.10}};
    class Measured : public GridOracle {
      public:
        Measured(const EmulatedNet &net, double noise, uint64_t seed)
            : net_(net), noise_(noise), rng_(seed) {}
        double rate(const GridProbe &p) override {
            return noisy(net_.alone(p.node, p.peer), noise_, rng_);
        }
        // As the component decides: medians of five samples, five more near the threshold.
        bool shared(const GridProbe &p) override {
            SharingSamples s;
            add_samples(p, s);
            Sharing verdict = judge_sharing(s, kSharingMargin);
            if (verdict == Sharing::Unclear) {
                add_samples(p, s);
                verdict = judge_sharing(s, 0);
            }
            return verdict == Sharing::Yes;
        }

      private:
        void add_samples(const GridProbe &p, SharingSamples &s) {
            const auto [f, g] = EmulatedNet::flows(p);
            const auto [tf, tg] = net_.together(p);
            for (int rep = 0; rep < 5; ++rep) {
                s.alone_a.push_back(noisy(net_.alone(f.first, f.second), noise_, rng_));
                s.alone_b.push_back(noisy(net_.alone(g.first, g.second), noise_, rng_));
                s.together_a.push_back(noisy(tf, noise_, rng_));
                s.together_b.push_back(noisy(tg, noise_, rng_));
            }
        }
        const EmulatedNet &net_;
        double noise_;
        std::mt19937_64 rng_;
    };
    for (const Noisy &c : cases)
        for (uint64_t seed = 1; seed <= 10; ++seed) {
            SCOPED_TRACE(std::to_string(c.net.nodes()) + " nodes, seed " + std::to_string(seed));
            Measured oracle(c.net, c.noise, seed);
            const GridResult g = find_grid(c.net.nodes(), oracle, host_names(c.net.nodes()));
            if (c.net.sizes.size() == 1) {
                EXPECT_NE(g.reason.find("flat network"), std::string::npos) << g.describe();
                continue;
            }
            expect_grid(g, c.net, c.noise);
        }
}

// The grid found as a topology file's grid: dims=auto lays 2 ranks per host over it.
TEST(GridFinder, HostGridFeedsTheRankLayout) {
    const EmulatedNet net{{2, 2}, {100, 200}, {}};
    const std::vector<std::string> hosts = {"tmh0", "tmh1", "tmh2", "tmh3"};
    const GridResult g = find_grid(measure_all(net), hosts);
    const HostGrid grid = host_grid_of(g, hosts);
    EXPECT_EQ(grid.sizes, (std::vector<int>{2, 2}));
    EXPECT_EQ(grid.coords.at("tmh3"), (std::vector<int>{1, 1}));
    RankPlacement placement;
    for (int r = 0; r < 8; ++r) {
        placement.node_of.push_back(r / 2);
        placement.host_of.push_back(hosts[r / 2]);
    }
    const RankLayout layout = make_rank_layout("auto", placement, &grid);
    EXPECT_EQ(layout.topology.to_spec().substr(0, 6), "2x2x2:");
    EXPECT_THROW(host_grid_of(find_grid(measure_all(EmulatedNet{{4}, {1}, {}})), hosts),
                 std::invalid_argument);
    EXPECT_THROW(host_grid_of(g, {"a", "b"}), std::invalid_argument);
}
