// Unit tests of src/engine with the per-dimension algorithms (ring, halving-doubling,
// direct): whole collectives run in-process over LoopbackNetwork and HostMemory, every
// rank driven round-robin, results checked against a brute-force computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "transports/cma_transport.h"
#include "engine.h"
#include "host_memory.h"
#include "testbed/loopback_transport.h"
#include "plan.h"
#include "test_support.h"

using namespace themis;

namespace {

// ---------------------------------------------------------------------------------------
// Reducers of the test

template <typename T> class SumReducer : public Reducer {
  public:
    void reduce(void *dst, const void *src, size_t bytes) override {
        EXPECT_EQ(bytes % sizeof(T), 0u) << "partial element reduced";
        T *d = static_cast<T *>(dst);
        const T *s = static_cast<const T *>(src);
        for (size_t i = 0; i < bytes / sizeof(T); ++i) d[i] = s[i] + d[i];
    }
    size_t element_bytes() const override { return sizeof(T); }
};

class MaxReducer : public Reducer {
  public:
    void reduce(void *dst, const void *src, size_t bytes) override {
        EXPECT_EQ(bytes % sizeof(int64_t), 0u) << "partial element reduced";
        auto *d = static_cast<int64_t *>(dst);
        auto *s = static_cast<const int64_t *>(src);
        for (size_t i = 0; i < bytes / sizeof(int64_t); ++i) d[i] = std::max(d[i], s[i]);
    }
    size_t element_bytes() const override { return sizeof(int64_t); }
};

// A Transport that forwards to another and records the (dimension, tag) of every message.
class RecordingTransport : public Transport {
  public:
    explicit RecordingTransport(Transport &inner) : inner_(inner) {}
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override {
        tags.push_back({dim, tag});
        return inner_.isend(dim, peer, buf, bytes, tag);
    }
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override {
        tags.push_back({dim, tag});
        return inner_.irecv(dim, peer, buf, bytes, tag);
    }
    size_t max_segments(int dim) const override { return inner_.max_segments(dim); }
    Request isendv(int dim, int peer, const Segment *segments, size_t count, int tag) override {
        tags.push_back({dim, tag});
        return inner_.isendv(dim, peer, segments, count, tag);
    }
    Request irecvv(int dim, int peer, const Segment *segments, size_t count, int tag,
                   Reducer *reducer) override {
        tags.push_back({dim, tag});
        return inner_.irecvv(dim, peer, segments, count, tag, reducer);
    }
    bool test(Request req) override { return inner_.test(req); }
    void progress() override { inner_.progress(); }
    const char *name() const override { return "recording"; }

    std::vector<std::pair<int, int>> tags;

  private:
    Transport &inner_;
};

// ---------------------------------------------------------------------------------------
// The in-process world: one network, one HostMemory and one Engine per rank.

struct Config {
    Policy policy = Policy::Themis;
    LoadModel model = LoadModel::Latency;
    IntraPolicy intra = IntraPolicy::Scf;
    int k = 1;
    bool rendezvous = true;
    int chunks = 64;
    uint64_t max_active_bytes = 0; // the engine's byte bound per dimension; 0 = none
    std::vector<bool> cma;         // per dimension: through CmaTransport (all in this process)
};

std::string describe(const std::string &spec, const Config &c) {
    return spec + " " + policy_name(c.policy) + "(" + load_model_name(c.model) + ")+" +
           intra_policy_name(c.intra) + " K=" + std::to_string(c.k) +
           (c.rendezvous ? " rendezvous" : " eager") + " chunks=" + std::to_string(c.chunks) +
           (c.cma.empty() ? "" : " cma");
}

struct World {
    World(const Topology &t, const Config &c) : topo(t), config(c), net(t, c.rendezvous) {
        for (int r = 0; r < t.size(); ++r) {
            memory.push_back(std::make_unique<HostMemory>());
            Transport *base = &net.transport(r);
            if (!c.cma.empty()) {
                cma.push_back(std::make_unique<CmaTransport>(*base, c.cma));
                base = cma.back().get();
            }
            transports.push_back(std::make_unique<RecordingTransport>(*base));
            engines.push_back(
                std::make_unique<Engine>(t, *transports[r], *memory[r], c.k, c.max_active_bytes));
        }
    }
    int size() const { return topo.size(); }

    std::shared_ptr<const Plan> plan(Collective coll, std::vector<uint64_t> counts,
                                     size_t element_size, int rank) {
        PlanRequest req =
            themis_test::bare_request(coll, element_size, std::move(counts), config.chunks);
        req.scheduler.policy = config.policy;
        req.scheduler.load_model = config.model;
        req.ordering.intra = config.intra;
        req.ordering.max_active = config.k;
        req.rank = rank;
        req.root = root;
        auto p = std::make_shared<const Plan>(compile_plan(topo, req));
        // The baseline: a first phase that narrows ascending, one that widens descending.
        const bool widens = !phase_info(collective_info(coll).phases.front()).narrows;
        for (const auto &c : p->schedule) {
            std::vector<int> o = widens ? widening_order(c) : narrowing_order(c);
            if (!std::is_sorted(o.begin(), o.end(),
                                [&](int a, int b) { return widens ? a > b : a < b; }))
                ++reordered_chunks;
        }
        return p;
    }

    // Nothing left behind: every message matched, every temporary buffer returned.
    ::testing::AssertionResult clean() const {
        if (net.unmatched() != 0)
            return ::testing::AssertionFailure() << net.unmatched() << " unmatched messages";
        for (int r = 0; r < size(); ++r)
            for (auto [dim, tag] : transports[r]->tags)
                if (dim < 0 || dim >= topo.num_dims() || tag < 0 || tag >= kTagLimit)
                    return ::testing::AssertionFailure()
                           << "rank " << r << " used dim " << dim << " tag " << tag;
        for (int r = 0; r < size(); ++r)
            if (memory[r]->outstanding() != 0)
                return ::testing::AssertionFailure()
                       << "rank " << r << " holds " << memory[r]->outstanding() << " buffers";
        return ::testing::AssertionSuccess();
    }

    Topology topo;
    Config config;
    LoopbackNetwork net;
    std::vector<std::unique_ptr<HostMemory>> memory;
    std::vector<std::unique_ptr<CmaTransport>> cma;
    std::vector<std::unique_ptr<RecordingTransport>> transports;
    std::vector<std::unique_ptr<Engine>> engines;
    int root = 0;              // of the rooted collectives planned here
    long reordered_chunks = 0; // chunks of the plans made here not in the baseline order
    std::vector<std::vector<StageRun>> *traces = nullptr; // set: run() traces every rank
};

constexpr long kRoundCap = 200000;

// Calls progress() on every rank in turn until all are done; fails instead of hanging.
::testing::AssertionResult drive(std::vector<std::unique_ptr<Execution>> &execs) {
    for (long round = 0; round < kRoundCap; ++round) {
        bool all = true;
        for (auto &e : execs) all = e->progress() && all;
        if (all) return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "not complete after " << kRoundCap << " rounds";
}

// Runs one collective on every rank's buffer (the work buffer of the plan).
template <typename T>
::testing::AssertionResult run(World &w, Collective coll, const std::vector<uint64_t> &counts,
                               std::vector<std::vector<T>> &buf, Reducer &reducer) {
    std::vector<std::unique_ptr<Execution>> execs;
    for (int r = 0; r < w.size(); ++r) {
        auto p = w.plan(coll, counts, sizeof(T), r);
        if (p->work_bytes != buf[r].size() * sizeof(T))
            return ::testing::AssertionFailure() << "work buffer size mismatch";
        RunOptions options;
        if (w.traces) options.trace = &(*w.traces)[r];
        execs.push_back(
            w.engines[r]->start(p, reinterpret_cast<char *>(buf[r].data()), reducer, options));
    }
    return drive(execs);
}

// Deterministic, rank- and position-dependent inputs.
int64_t ival(int rank, uint64_t e) {
    return static_cast<int64_t>((rank * 7919ull + e * 104729ull + rank * e) % 1000003ull) - 500000;
}
float fval(int rank, uint64_t e) {
    return static_cast<float>(((rank * 31ull + e * 17ull) % 1009ull) / 1009.0 - 0.5);
}

// Uneven blocks summing to `total`: weights 0..3 by a seeded generator, remainder spread.
std::vector<uint64_t> uneven_blocks(uint64_t total, int n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> w(n);
    uint64_t wsum = 0;
    for (auto &x : w) wsum += (x = std::uniform_int_distribution<uint64_t>(0, 3)(rng));
    if (wsum == 0) w[0] = wsum = 1;
    std::vector<uint64_t> c(n);
    uint64_t used = 0;
    for (int r = 0; r < n; ++r) used += (c[r] = total * w[r] / wsum);
    for (int r = 0; used < total; r = (r + 1) % n)
        if (w[r]) ++c[r], ++used;
    return c;
}

// ---------------------------------------------------------------------------------------
// One collective, checked against brute force

::testing::AssertionResult check_allreduce(World &w, uint64_t count) {
    const int n = w.size();
    std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(count));
    for (int r = 0; r < n; ++r)
        for (uint64_t e = 0; e < count; ++e) buf[r][e] = ival(r, e);
    SumReducer<int64_t> sum;
    auto ok = run(w, Collective::AllReduce, {count}, buf, sum);
    if (!ok) return ok;
    for (uint64_t e = 0; e < count; ++e) {
        int64_t want = 0;
        for (int q = 0; q < n; ++q) want += ival(q, e);
        for (int r = 0; r < n; ++r)
            if (buf[r][e] != want)
                return ::testing::AssertionFailure() << "allreduce rank " << r << " element " << e
                                                     << ": " << buf[r][e] << " != " << want;
    }
    return w.clean();
}

::testing::AssertionResult check_reduce_scatter(World &w, const std::vector<uint64_t> &counts) {
    const int n = w.size();
    const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t(0));
    std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(total));
    for (int r = 0; r < n; ++r)
        for (uint64_t e = 0; e < total; ++e) buf[r][e] = ival(r, e);
    SumReducer<int64_t> sum;
    auto ok = run(w, Collective::ReduceScatter, counts, buf, sum);
    if (!ok) return ok;
    uint64_t displ = 0;
    for (int r = 0; r < n; ++r) {
        for (uint64_t e = displ; e < displ + counts[r]; ++e) {
            int64_t want = 0;
            for (int q = 0; q < n; ++q) want += ival(q, e);
            if (buf[r][e] != want)
                return ::testing::AssertionFailure() << "reduce_scatter rank " << r << " element "
                                                     << e << ": " << buf[r][e] << " != " << want;
        }
        displ += counts[r];
    }
    return w.clean();
}

::testing::AssertionResult check_allgather(World &w, const std::vector<uint64_t> &counts) {
    const int n = w.size();
    std::vector<uint64_t> displ(n + 1, 0);
    for (int r = 0; r < n; ++r) displ[r + 1] = displ[r] + counts[r];
    std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(displ[n], -7));
    for (int r = 0; r < n; ++r)
        for (uint64_t e = displ[r]; e < displ[r + 1]; ++e) buf[r][e] = ival(r, e);
    SumReducer<int64_t> sum; // an All-Gather reduces nothing
    auto ok = run(w, Collective::AllGather, counts, buf, sum);
    if (!ok) return ok;
    for (int r = 0; r < n; ++r)
        for (int q = 0; q < n; ++q)
            for (uint64_t e = displ[q]; e < displ[q + 1]; ++e)
                if (buf[r][e] != ival(q, e))
                    return ::testing::AssertionFailure()
                           << "allgather rank " << r << " block of " << q << " element " << e;
    return w.clean();
}

// The roots a rooted collective is checked from: first, last and one in between.
std::vector<int> some_roots(int n) {
    std::vector<int> roots = {0};
    if (n > 2) roots.push_back(n / 2 + 1 < n ? n / 2 + 1 : n / 2);
    if (n > 1) roots.push_back(n - 1);
    return roots;
}

// Bcast from every root of some_roots(): every rank ends with the root's vector.
::testing::AssertionResult check_bcast(World &w, uint64_t count) {
    const int n = w.size();
    for (int root : some_roots(n)) {
        std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(count, -7));
        for (uint64_t e = 0; e < count; ++e) buf[root][e] = ival(root, e);
        SumReducer<int64_t> sum; // a Bcast reduces nothing
        w.root = root;
        auto ok = run(w, Collective::Bcast, {count}, buf, sum);
        if (!ok) return ok << " (root " << root << ")";
        for (int r = 0; r < n; ++r)
            for (uint64_t e = 0; e < count; ++e)
                if (buf[r][e] != ival(root, e))
                    return ::testing::AssertionFailure()
                           << "bcast from " << root << ": rank " << r << " element " << e << ": "
                           << buf[r][e] << " != " << ival(root, e);
        auto clean = w.clean();
        if (!clean) return clean << " (root " << root << ")";
    }
    return ::testing::AssertionSuccess();
}

// Reduce to every root of some_roots(): the root ends with the sum of every rank's vector.
::testing::AssertionResult check_reduce(World &w, uint64_t count) {
    const int n = w.size();
    for (int root : some_roots(n)) {
        std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(count));
        for (int r = 0; r < n; ++r)
            for (uint64_t e = 0; e < count; ++e) buf[r][e] = ival(r, e);
        SumReducer<int64_t> sum;
        w.root = root;
        auto ok = run(w, Collective::Reduce, {count}, buf, sum);
        if (!ok) return ok << " (root " << root << ")";
        for (uint64_t e = 0; e < count; ++e) {
            int64_t want = 0;
            for (int q = 0; q < n; ++q) want += ival(q, e);
            if (buf[root][e] != want)
                return ::testing::AssertionFailure() << "reduce to " << root << ": element " << e
                                                     << ": " << buf[root][e] << " != " << want;
        }
        auto clean = w.clean();
        if (!clean) return clean << " (root " << root << ")";
    }
    return ::testing::AssertionSuccess();
}

const char *kSpecs[] = {"4",
                        "5",
                        "2x4",
                        "3x2",
                        "2x3x2",
                        "2x2x2:alg=direct,hd,ring",
                        "4x2:alg=hd,direct",
                        "8:alg=hd",
                        "5:alg=direct"};

std::vector<Config> sweep_configs() {
    std::vector<Config> out;
    const struct {
        Policy policy;
        LoadModel model;
        IntraPolicy intra;
    } variants[] = {{Policy::Baseline, LoadModel::Latency, IntraPolicy::Fifo},
                    {Policy::Themis, LoadModel::Reference, IntraPolicy::Fifo},
                    {Policy::Themis, LoadModel::Reference, IntraPolicy::Scf},
                    {Policy::Themis, LoadModel::Latency, IntraPolicy::Scf}};
    for (const auto &v : variants)
        for (int k : {1, 3})
            for (bool rendezvous : {true, false}) {
                Config c;
                c.policy = v.policy;
                c.model = v.model;
                c.intra = v.intra;
                c.k = k;
                c.rendezvous = rendezvous;
                out.push_back(c);
            }
    return out;
}

// ---------------------------------------------------------------------------------------
// The sweep: every topology x policy x intra x K x transport mode x count

// Runs `check(world, count)` for every topology, configuration and count of the sweep. On
// topologies with several dimensions Themis must have reordered some chunk somewhere, or
// the sweep would prove little about non-baseline orders.
template <typename Check> void sweep(Check check) {
    for (const char *spec : kSpecs) {
        Topology t = parse_topology(spec);
        long reordered = 0;
        for (const Config &c : sweep_configs())
            for (uint64_t count : {uint64_t(1), uint64_t(7), uint64_t(t.size() - 1), uint64_t(1000),
                                   uint64_t(100003)}) {
                World w(t, c);
                ASSERT_TRUE(check(w, count)) << describe(spec, c) << " count " << count;
                reordered += w.reordered_chunks;
            }
        int active = 0;
        for (const auto &d : t.dims()) active += d.peers > 1;
        if (active > 1) {
            EXPECT_GT(reordered, 0) << spec << ": no chunk left the baseline order";
        }
    }
}

TEST(EngineSweep, AllReduceMatchesBruteForce) {
    sweep([](World &w, uint64_t count) { return check_allreduce(w, count); });
}

TEST(EngineSweep, BcastFromFirstLastAndMiddleRootMatchesTheRoot) {
    sweep([](World &w, uint64_t count) { return check_bcast(w, count); });
}

TEST(EngineSweep, ReduceToFirstLastAndMiddleRootMatchesBruteForce) {
    sweep([](World &w, uint64_t count) { return check_reduce(w, count); });
}

TEST(EngineSweep, ReduceScatterUnevenBlocksMatchesBruteForce) {
    sweep([](World &w, uint64_t total) {
        return check_reduce_scatter(w, uneven_blocks(total, w.size(), total));
    });
}

TEST(EngineSweep, AllGatherUnevenBlocksMatchesBruteForce) {
    sweep([](World &w, uint64_t total) {
        return check_allgather(w, uneven_blocks(total, w.size(), total + 1));
    });
}

TEST(EngineSweep, EqualBlocksReduceScatterAndAllGather) {
    // MPI_Reduce_scatter_block / MPI_Allgather shapes: the same count on every rank.
    for (const char *spec : kSpecs) {
        Topology t = parse_topology(spec);
        for (uint64_t each : {uint64_t(1), uint64_t(3), uint64_t(65)}) {
            Config c;
            c.k = 3;
            World w(t, c);
            std::vector<uint64_t> counts(t.size(), each);
            ASSERT_TRUE(check_reduce_scatter(w, counts)) << spec << " each " << each;
            ASSERT_TRUE(check_allgather(w, counts)) << spec << " each " << each;
        }
    }
}

TEST(EngineCma, CollectivesThroughTheSingleCopyTransportMatchBruteForce) {
    // Every dimension, or only the first, read straight from the peers' buffers (the
    // node-local transport, here reading this very process): spans of several ranges move
    // unpacked, reductions in pieces; inline messages and read ones both occur (chunks 4
    // and 64 over 1 to 800 KB).
    for (const char *spec :
         {"2x4", "3x2", "2x2x2:alg=direct,hd,ring", "8:alg=hd", "5:alg=direct"}) {
        Topology t = parse_topology(spec);
        for (bool all_dims : {true, false})
            for (int chunks : {4, 64})
                for (bool rendezvous : {true, false}) {
                    Config c;
                    c.k = 3;
                    c.chunks = chunks;
                    c.rendezvous = rendezvous;
                    c.cma.assign(size_t(t.num_dims()), all_dims);
                    c.cma[0] = true;
                    for (uint64_t count : {uint64_t(1), uint64_t(1000), uint64_t(100003)}) {
                        const std::string what = describe(spec, c) + (all_dims ? " all" : " dim0") +
                                                 " count " + std::to_string(count);
                        World a(t, c), b(t, c), g(t, c);
                        ASSERT_TRUE(check_allreduce(a, count)) << what;
                        ASSERT_TRUE(check_reduce_scatter(b, uneven_blocks(count, t.size(), count)))
                            << what;
                        ASSERT_TRUE(check_allgather(g, uneven_blocks(count, t.size(), count + 1)))
                            << what;
                    }
                }
    }
}

// ---------------------------------------------------------------------------------------
// Other reductions and element types

TEST(EngineReducers, FloatSumWithinTolerance) {
    for (const char *spec : {"2x4", "3x2", "2x2x2:alg=direct,hd,ring"}) {
        Topology t = parse_topology(spec);
        Config c;
        c.k = 3;
        World w(t, c);
        const int n = t.size();
        const uint64_t count = 4099;
        std::vector<std::vector<float>> buf(n, std::vector<float>(count));
        for (int r = 0; r < n; ++r)
            for (uint64_t e = 0; e < count; ++e) buf[r][e] = fval(r, e);
        SumReducer<float> sum;
        ASSERT_TRUE(run(w, Collective::AllReduce, {count}, buf, sum)) << spec;
        for (uint64_t e = 0; e < count; ++e) {
            double want = 0;
            for (int q = 0; q < n; ++q) want += fval(q, e);
            for (int r = 0; r < n; ++r)
                // n terms of magnitude <= 0.5 in float: error well under n * 0.5 * 2^-23 * n.
                ASSERT_NEAR(buf[r][e], want, 1e-5) << spec << " rank " << r << " element " << e;
            // Every rank ends with the very same bits (one reduction, then copies).
            for (int r = 1; r < n; ++r) ASSERT_EQ(buf[r][e], buf[0][e]);
        }
        EXPECT_TRUE(w.clean());
    }
}

TEST(EngineReducers, MaxAllReduceAndReduceScatter) {
    for (const char *spec : {"5", "4x2:alg=hd,direct", "2x3x2"}) {
        Topology t = parse_topology(spec);
        Config c;
        World w(t, c);
        const int n = t.size();
        const uint64_t count = 1234;
        std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(count));
        for (int r = 0; r < n; ++r)
            for (uint64_t e = 0; e < count; ++e) buf[r][e] = ival(r, e);
        MaxReducer max;
        ASSERT_TRUE(run(w, Collective::AllReduce, {count}, buf, max)) << spec;
        for (uint64_t e = 0; e < count; ++e) {
            int64_t want = ival(0, e);
            for (int q = 1; q < n; ++q) want = std::max(want, ival(q, e));
            for (int r = 0; r < n; ++r) ASSERT_EQ(buf[r][e], want) << spec << " element " << e;
        }
        auto counts = uneven_blocks(count, n, 9);
        for (int r = 0; r < n; ++r)
            for (uint64_t e = 0; e < count; ++e) buf[r][e] = ival(r, e);
        ASSERT_TRUE(run(w, Collective::ReduceScatter, counts, buf, max)) << spec;
        uint64_t displ = 0;
        for (int r = 0; r < n; ++r) {
            for (uint64_t e = displ; e < displ + counts[r]; ++e) {
                int64_t want = ival(0, e);
                for (int q = 1; q < n; ++q) want = std::max(want, ival(q, e));
                ASSERT_EQ(buf[r][e], want) << spec << " rank " << r << " element " << e;
            }
            displ += counts[r];
        }
        EXPECT_TRUE(w.clean());
    }
}

// ---------------------------------------------------------------------------------------
// Successive and concurrent collectives on the same Engines

TEST(EngineSequence, BackToBackCollectivesEachRankStartsTheNextAtOnce) {
    // Each rank starts its second collective as soon as its first is done, while its peers
    // may still be in the first: the tags must keep the two apart. Eager mode lets a fast
    // rank's sends of the second collective arrive early.
    for (const char *spec : {"2x4", "3x2", "2x2x2:alg=direct,hd,ring", "5"}) {
        for (bool rendezvous : {true, false}) {
            Topology t = parse_topology(spec);
            Config c;
            c.rendezvous = rendezvous;
            c.k = 3;
            c.chunks = 8;
            World w(t, c);
            const int n = t.size();
            const uint64_t count = 600;
            // First an All-Reduce of a, then an All-Reduce of b, same sizes and tags pattern.
            std::vector<std::vector<int64_t>> a(n, std::vector<int64_t>(count)), b = a;
            for (int r = 0; r < n; ++r)
                for (uint64_t e = 0; e < count; ++e) {
                    a[r][e] = ival(r, e);
                    b[r][e] = ival(r + 100, e) * 3;
                }
            SumReducer<int64_t> sum;
            std::vector<std::unique_ptr<Execution>> first, second(n);
            std::vector<size_t> mark(n); // where each rank's second collective's tags begin
            for (int r = 0; r < n; ++r)
                first.push_back(w.engines[r]->start(w.plan(Collective::AllReduce, {count}, 8, r),
                                                    reinterpret_cast<char *>(a[r].data()), sum));
            bool all = false;
            for (long round = 0; round < kRoundCap && !all; ++round) {
                all = true;
                for (int r = 0; r < n; ++r) {
                    if (!second[r]) {
                        if (first[r]->progress()) {
                            mark[r] = w.transports[r]->tags.size();
                            second[r] =
                                w.engines[r]->start(w.plan(Collective::AllReduce, {count}, 8, r),
                                                    reinterpret_cast<char *>(b[r].data()), sum);
                        }
                        all = false;
                    } else {
                        all = second[r]->progress() && all;
                    }
                }
            }
            ASSERT_TRUE(all) << spec << " did not complete";
            for (uint64_t e = 0; e < count; ++e) {
                int64_t wa = 0, wb = 0;
                for (int q = 0; q < n; ++q) {
                    wa += ival(q, e);
                    wb += ival(q + 100, e) * 3;
                }
                for (int r = 0; r < n; ++r) {
                    ASSERT_EQ(a[r][e], wa) << spec << " first, rank " << r << " element " << e;
                    ASSERT_EQ(b[r][e], wb) << spec << " second, rank " << r << " element " << e;
                }
            }
            EXPECT_TRUE(w.clean()) << spec;
            // The second collective used none of the first one's tags on any dimension.
            for (int r = 0; r < n; ++r) {
                const auto &tags = w.transports[r]->tags;
                std::set<std::pair<int, int>> used_first(tags.begin(), tags.begin() + mark[r]);
                ASSERT_FALSE(used_first.empty());
                ASSERT_LT(mark[r], tags.size());
                for (size_t i = mark[r]; i < tags.size(); ++i)
                    ASSERT_EQ(used_first.count(tags[i]), 0u)
                        << spec << " rank " << r << " reused dim " << tags[i].first << " tag "
                        << tags[i].second;
            }
        }
    }
}

TEST(EngineSequence, ManyCollectivesInARowOnTheSameEngines) {
    Topology t = parse_topology("2x3x2");
    Config c;
    c.k = 2;
    c.rendezvous = false;
    World w(t, c);
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(check_allreduce(w, 333 + i)) << "call " << i;
        ASSERT_TRUE(check_reduce_scatter(w, uneven_blocks(200 + i, t.size(), i))) << "call " << i;
        ASSERT_TRUE(check_allgather(w, uneven_blocks(100 + i, t.size(), i))) << "call " << i;
    }
}

// One Execution per rank runs call after call (Engine::start on it, as the MPI glue's kept
// calls do): larger and smaller plans, every algorithm, each call's results exact and
// nothing left behind; its stages run on algorithm objects the engine kept from earlier ones.
TEST(EngineSequence, OneExecutionPerRankRunsCallAfterCall) {
    for (const char *spec : {"2x2x2:alg=direct,hd,ring", "3x2"}) {
        Topology t = parse_topology(spec);
        Config c;
        c.k = 2;
        c.max_active_bytes = 4096;
        World w(t, c);
        const int n = w.size();
        std::vector<std::unique_ptr<Execution>> execs;
        for (int r = 0; r < n; ++r) execs.push_back(std::make_unique<Execution>(*w.engines[r]));
        SumReducer<int64_t> sum;
        for (uint64_t count : {uint64_t(1000), uint64_t(7), uint64_t(100003), uint64_t(1000)}) {
            std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(count));
            for (int r = 0; r < n; ++r) {
                for (uint64_t e = 0; e < count; ++e) buf[r][e] = ival(r, e);
                w.engines[r]->start(*execs[r], w.plan(Collective::AllReduce, {count}, 8, r),
                                    reinterpret_cast<char *>(buf[r].data()), sum);
            }
            ASSERT_TRUE(drive(execs)) << spec << " count " << count;
            for (uint64_t e = 0; e < count; ++e) {
                int64_t want = 0;
                for (int q = 0; q < n; ++q) want += ival(q, e);
                for (int r = 0; r < n; ++r)
                    ASSERT_EQ(buf[r][e], want) << spec << " count " << count << " rank " << r;
            }
            ASSERT_TRUE(w.clean()) << spec << " count " << count;
        }
        // Reset: idle again, off the queues; another call may follow.
        for (auto &e : execs) {
            e->reset();
            EXPECT_TRUE(e->done());
            EXPECT_EQ(e->plan(), nullptr);
        }
        for (auto &engine : w.engines) EXPECT_EQ(engine->in_flight(), 0u);
    }
}

TEST(EngineSequence, TwoCollectivesInFlightAtOnce) {
    // Both started on every rank in the same order, then progressed together: odd ranks
    // progress the second before the first, so only distinct tags keep them apart.
    for (bool rendezvous : {true, false}) {
        Topology t = parse_topology("4x2:alg=hd,direct");
        Config c;
        c.rendezvous = rendezvous;
        World w(t, c);
        const int n = t.size();
        const uint64_t count = 500;
        std::vector<std::vector<int64_t>> a(n, std::vector<int64_t>(count)), b = a;
        for (int r = 0; r < n; ++r)
            for (uint64_t e = 0; e < count; ++e) {
                a[r][e] = ival(r, e);
                b[r][e] = -ival(r, e + 1);
            }
        SumReducer<int64_t> sum;
        std::vector<std::unique_ptr<Execution>> execs;
        for (int r = 0; r < n; ++r) {
            auto ea = w.engines[r]->start(w.plan(Collective::AllReduce, {count}, 8, r),
                                          reinterpret_cast<char *>(a[r].data()), sum);
            auto eb = w.engines[r]->start(w.plan(Collective::AllReduce, {count}, 8, r),
                                          reinterpret_cast<char *>(b[r].data()), sum);
            if (r % 2) std::swap(ea, eb);
            execs.push_back(std::move(ea));
            execs.push_back(std::move(eb));
        }
        ASSERT_TRUE(drive(execs));
        for (uint64_t e = 0; e < count; ++e) {
            int64_t wa = 0, wb = 0;
            for (int q = 0; q < n; ++q) {
                wa += ival(q, e);
                wb -= ival(q, e + 1);
            }
            for (int r = 0; r < n; ++r) {
                ASSERT_EQ(a[r][e], wa);
                ASSERT_EQ(b[r][e], wb);
            }
        }
        EXPECT_TRUE(w.clean());
    }
}

// Inputs of `calls` collectives on `n` ranks: call q, rank r, element e holds
// ival(r, e + shift * q), so calls differ from each other.
std::vector<std::vector<std::vector<int64_t>>> call_inputs(int calls, int n, uint64_t count,
                                                           uint64_t shift) {
    std::vector<std::vector<std::vector<int64_t>>> buf(
        calls, std::vector<std::vector<int64_t>>(n, std::vector<int64_t>(count)));
    for (int q = 0; q < calls; ++q)
        for (int r = 0; r < n; ++r)
            for (uint64_t e = 0; e < count; ++e) buf[q][r][e] = ival(r, e + shift * q);
    return buf;
}

TEST(EngineSequence, CollectivesInFlightKeepTheirOrderAndFillIdleSlots) {
    // Three collectives started back to back on every rank, progressed in another order on
    // odd ranks: on every dimension each issues its ops in its plan's order (tag bases are
    // numbered in plan order, call after call), a later one starts ops while an earlier
    // one's next op waits for its chunk (FillIdle), and the shared slots (K = 2 for all
    // three together) still complete them all, exactly.
    Topology t = parse_topology("4x2:alg=ring,direct");
    Config c;
    c.k = 2;
    c.chunks = 8;
    World w(t, c);
    const int n = t.size(), calls = 3;
    const uint64_t count = 600;
    auto buf = call_inputs(calls, n, count, 1);
    SumReducer<int64_t> sum;
    std::vector<std::unique_ptr<Execution>> execs;
    std::vector<size_t> ops_per_call; // per dimension, the same plan for every call
    for (int r = 0; r < n; ++r) {
        std::vector<std::unique_ptr<Execution>> mine;
        for (int k = 0; k < calls; ++k) {
            auto plan = w.plan(Collective::AllReduce, {count}, 8, r);
            if (r == 0 && k == 0)
                for (const auto &queue : plan->dim_queue) ops_per_call.push_back(queue.size());
            mine.push_back(
                w.engines[r]->start(plan, reinterpret_cast<char *>(buf[k][r].data()), sum));
        }
        if (r % 2) std::reverse(mine.begin(), mine.end());
        for (auto &e : mine) execs.push_back(std::move(e));
    }
    EXPECT_EQ(w.engines[0]->in_flight(), size_t(calls));
    ASSERT_TRUE(drive(execs));
    EXPECT_EQ(w.engines[0]->in_flight(), 0u);
    for (int k = 0; k < calls; ++k)
        for (uint64_t e = 0; e < count; ++e) {
            int64_t want = 0;
            for (int q = 0; q < n; ++q) want += ival(q, e + k);
            for (int r = 0; r < n; ++r) ASSERT_EQ(buf[k][r][e], want) << "call " << k;
        }
    int passed = 0; // ops issued before an op of an earlier call
    for (int r = 0; r < n; ++r)
        for (int d = 0; d < t.num_dims(); ++d) {
            std::vector<int> last(calls, -1);
            std::set<int> seen; // a stage's later steps come after other stages' first ones
            for (auto [dim, tag] : w.transports[r]->tags) {
                const int op = tag / t.dim(d).peers;
                if (dim != d || !seen.insert(op).second) continue;
                const int call = op / static_cast<int>(ops_per_call[d]);
                ASSERT_GT(op, last[call]) << "rank " << r << " dim " << d << ": out of plan order";
                last[call] = op;
                for (int earlier = 0; earlier < call; ++earlier)
                    if (last[earlier] < static_cast<int>((earlier + 1) * ops_per_call[d]) - 1) {
                        ++passed;
                        break;
                    }
            }
        }
    EXPECT_GT(passed, 0) << "no later call ever used a slot an earlier one left idle";
    EXPECT_TRUE(w.clean());
}

TEST(EngineSequence, ManyCallsInFlightCompleteUnderTightSlotsAndBytes) {
    // Later calls take idle slots; what keeps every call completing is the oldest one's
    // reserved slot and its own byte bound. Tight settings (K = 2 or 3, a bound that admits
    // one stage at a time or none beside another), rendezvous sends, five calls of mixed
    // collectives, odd ranks progressing them newest first: all complete, exactly.
    Topology t = parse_topology("2x3x2:alg=ring,direct,hd");
    for (int k : {2, 3})
        for (uint64_t bound : {uint64_t(1), uint64_t(2048)}) {
            SCOPED_TRACE("K=" + std::to_string(k) + " bound=" + std::to_string(bound));
            Config c;
            c.k = k;
            c.chunks = 6;
            c.max_active_bytes = bound;
            World w(t, c);
            const int n = t.size(), calls = 5;
            const uint64_t count = 480;
            auto buf = call_inputs(calls, n, count, 7);
            SumReducer<int64_t> sum;
            std::vector<std::unique_ptr<Execution>> execs;
            for (int r = 0; r < n; ++r) {
                std::vector<std::unique_ptr<Execution>> mine;
                for (int q = 0; q < calls; ++q) {
                    const Collective coll =
                        q % 2 ? Collective::ReduceScatter : Collective::AllReduce;
                    const std::vector<uint64_t> counts =
                        q % 2 ? std::vector<uint64_t>(n, count / n) : std::vector<uint64_t>{count};
                    mine.push_back(w.engines[r]->start(w.plan(coll, counts, sizeof(int64_t), r),
                                                       reinterpret_cast<char *>(buf[q][r].data()),
                                                       sum));
                }
                if (r % 2) std::reverse(mine.begin(), mine.end());
                for (auto &e : mine) execs.push_back(std::move(e));
            }
            ASSERT_TRUE(drive(execs));
            for (int q = 0; q < calls; ++q)
                for (int r = 0; r < n; ++r) {
                    // All-Reduce: every element summed; Reduce-Scatter: rank r's block of it.
                    const uint64_t first = q % 2 ? r * (count / n) : 0;
                    const uint64_t len = q % 2 ? count / n : count;
                    for (uint64_t e = 0; e < len; ++e) {
                        int64_t want = 0;
                        for (int p = 0; p < n; ++p) want += ival(p, first + e + 7 * q);
                        ASSERT_EQ(buf[q][r][first + e], want) << "call " << q << " rank " << r;
                    }
                }
            EXPECT_TRUE(w.clean());
        }
}

// ---------------------------------------------------------------------------------------
// The trace of an execution (RunOptions::trace)

TEST(EngineTrace, EveryOpOnceInPlanOrderWithConsistentTimes) {
    Topology t = parse_topology("2x2x2:alg=ring,hd,direct");
    Config c;
    c.k = 2;
    c.chunks = 16;
    World w(t, c);
    const int n = t.size();
    const uint64_t count = 4000;
    std::vector<std::vector<StageRun>> traces(n);
    w.traces = &traces;
    ASSERT_TRUE(check_allreduce(w, count));
    for (int r = 0; r < n; ++r) {
        // The plan rank r ran: plans are deterministic.
        const std::shared_ptr<const Plan> plan_r = w.plan(Collective::AllReduce, {count}, 8, r);
        const Plan &plan = *plan_r;
        ASSERT_EQ(traces[r].size(), plan.ops.size()) << "rank " << r;
        // Index the records by op; each op exactly once.
        std::vector<const StageRun *> by_op(plan.ops.size(), nullptr);
        for (const StageRun &run : traces[r]) {
            auto it = std::find_if(plan.ops.begin(), plan.ops.end(), [&](const PlanOp &op) {
                return op.chunk == run.ref.chunk && op.stage == run.ref.stage;
            });
            ASSERT_NE(it, plan.ops.end());
            const size_t i = static_cast<size_t>(it - plan.ops.begin());
            ASSERT_EQ(by_op[i], nullptr) << "op " << i << " recorded twice";
            ASSERT_EQ(run.dim, it->dim);
            by_op[i] = &run;
        }
        for (size_t i = 0; i < plan.ops.size(); ++i) {
            const StageRun &run = *by_op[i];
            const int prev = plan.ops[i].previous;
            EXPECT_EQ(run.ready, prev >= 0 ? by_op[prev]->end : 0.0) << "op " << i;
            EXPECT_LE(run.ready, run.start) << "op " << i;
            EXPECT_LE(run.start, run.end) << "op " << i;
        }
        // Each dimension started its ops in the plan's issue order.
        for (size_t d = 0; d < plan.dim_queue.size(); ++d)
            for (size_t q = 1; q < plan.dim_queue[d].size(); ++q)
                EXPECT_LE(by_op[plan.dim_queue[d][q - 1]]->start,
                          by_op[plan.dim_queue[d][q]]->start)
                    << "rank " << r << " dim " << d << " position " << q;
    }
}

// The union of a rank's stage intervals on dimension d, from its trace.
double traced_busy(const std::vector<StageRun> &trace, int d) {
    std::vector<std::pair<double, double>> spans;
    for (const StageRun &run : trace)
        if (run.dim == d) spans.emplace_back(run.start, run.end);
    std::sort(spans.begin(), spans.end());
    double busy = 0, from = 0, to = -1;
    for (auto [start, end] : spans) {
        if (start > to) {
            busy += std::max(0.0, to - from);
            from = start;
        }
        to = std::max(to, end);
    }
    return busy + std::max(0.0, to - from);
}

TEST(EngineBusy, ADimensionsBusyTimeLiesWithinItsStagesAndIsZeroWithoutThem) {
    // The engine's busy time per dimension (what the rate refiner compares with a plan's)
    // starts after a stage's traced start and ends before its traced end: within the union
    // of the traced intervals; a dimension of one peer runs no stage and is never busy.
    Topology t = parse_topology("2x1x4:alg=ring,ring,hd");
    Config c;
    c.k = 2;
    c.chunks = 8;
    World w(t, c);
    std::vector<std::vector<StageRun>> traces(t.size());
    w.traces = &traces;
    ASSERT_TRUE(check_allreduce(w, 20000));
    for (int r = 0; r < t.size(); ++r) {
        EXPECT_EQ(w.engines[r]->busy_seconds(1), 0.0) << "rank " << r;
        for (int d : {0, 2}) {
            const double busy = w.engines[r]->busy_seconds(d);
            EXPECT_GT(busy, 0.0) << "rank " << r << " dim " << d;
            EXPECT_LE(busy, traced_busy(traces[r], d)) << "rank " << r << " dim " << d;
        }
    }
}

// The most bytes of stages that ran at once on one dimension of one rank, counted when a
// stage started beside others (a stage alone on its dimension may be of any size).
uint64_t most_bytes_started_beside_others(const Plan &plan, const std::vector<StageRun> &trace) {
    std::vector<const StageRun *> by_op(plan.ops.size(), nullptr);
    for (const StageRun &run : trace)
        for (size_t i = 0; i < plan.ops.size(); ++i)
            if (plan.ops[i].chunk == run.ref.chunk && plan.ops[i].stage == run.ref.stage)
                by_op[i] = &run;
    uint64_t most = 0;
    for (const auto &queue : plan.dim_queue)
        for (size_t q = 0; q < queue.size(); ++q) {
            // Running when op q started: issued before it (plan order) and not yet ended.
            uint64_t running = 0;
            for (size_t p = 0; p < q; ++p)
                if (by_op[queue[p]]->end > by_op[queue[q]]->start)
                    running += plan.ops[queue[p]].total_bytes();
            if (running > 0) most = std::max(most, running + plan.ops[queue[q]].total_bytes());
        }
    return most;
}

TEST(EngineTrace, ByteBoundKeepsStagesThatRunTogetherUnderIt) {
    Topology t = parse_topology("2x2x2:alg=ring,hd,direct");
    Config c;
    c.k = 4;
    c.chunks = 16;
    const uint64_t count = 4096; // 32 KiB of int64: chunks of 2 KiB, stages of 2, 1, 0.5 KiB
    const uint64_t bound = 3 * 1024;
    uint64_t most[2] = {0, 0};
    for (int bounded = 0; bounded < 2; ++bounded) {
        c.max_active_bytes = bounded ? bound : 0;
        World w(t, c);
        std::vector<std::vector<StageRun>> traces(t.size());
        w.traces = &traces;
        ASSERT_TRUE(check_allreduce(w, count)) << "bounded " << bounded;
        for (int r = 0; r < t.size(); ++r) {
            auto plan = w.plan(Collective::AllReduce, {count}, 8, r);
            ASSERT_EQ(traces[r].size(), plan->ops.size());
            most[bounded] =
                std::max(most[bounded], most_bytes_started_beside_others(*plan, traces[r]));
        }
    }
    EXPECT_GT(most[0], bound) << "without the bound, K = 4 alone lets more run together";
    EXPECT_LE(most[1], bound);
    EXPECT_GT(most[1], 0u) << "stages still ran side by side under the bound";
}

// ---------------------------------------------------------------------------------------
// Edge cases

TEST(EngineEdge, SingleRankIsANoOp) {
    Topology t = parse_topology("1");
    World w(t, Config{});
    EXPECT_TRUE(check_allreduce(w, 10));
    EXPECT_TRUE(check_reduce_scatter(w, {10}));
    EXPECT_TRUE(check_allgather(w, {10}));
    EXPECT_EQ(w.net.messages(), 0u);
}

TEST(EngineEdge, SinglePeerDimensionsAreSkipped) {
    Topology t = parse_topology("1x3x1x2:alg=ring,direct,ring,hd");
    for (const Config &c : sweep_configs()) {
        World w(t, c);
        ASSERT_TRUE(check_allreduce(w, 101)) << describe("1x3x1x2", c);
        ASSERT_TRUE(check_reduce_scatter(w, uneven_blocks(50, t.size(), 3)))
            << describe("1x3x1x2", c);
    }
}

TEST(EngineEdge, ZeroBlocksEverywhereButOne) {
    Topology t = parse_topology("2x3x2");
    World w(t, Config{});
    std::vector<uint64_t> counts(t.size(), 0);
    counts[5] = 3;
    EXPECT_TRUE(check_reduce_scatter(w, counts));
    EXPECT_TRUE(check_allgather(w, counts));
}

TEST(EngineEdge, EngineRunDrivesASingleRankPlan) {
    // Engine::run blocks until done, which in-process only works when no peer is needed.
    Topology t = parse_topology("1x1");
    LoopbackNetwork net(t, true);
    HostMemory mem;
    Engine engine(t, net.transport(0), mem, 1);
    const PlanRequest req = themis_test::bare_request(Collective::AllReduce, 8, {4}, 1);
    std::vector<int64_t> v = {1, 2, 3, 4};
    SumReducer<int64_t> sum;
    engine.run(std::make_shared<const Plan>(compile_plan(t, req)),
               reinterpret_cast<char *>(v.data()), sum);
    EXPECT_EQ(v, (std::vector<int64_t>{1, 2, 3, 4}));
}

TEST(EngineEdge, ExpectedMessageCountOfARingAllReduce) {
    // One chunk, ring of 4: RS 3 steps + AG 3 steps, one message per rank per step:
    // 4 ranks x 6 = 24 messages.
    Topology t = parse_topology("4:alg=ring");
    Config c;
    c.chunks = 1;
    World w(t, c);
    ASSERT_TRUE(check_allreduce(w, 400));
    EXPECT_EQ(w.net.messages(), 24u);
}

// ---------------------------------------------------------------------------------------
// The support the engine runs on: LoopbackNetwork and HostMemory

TEST(EngineSupportLoopback, RendezvousSendCompletesOnlyOnceReceived) {
    Topology t = parse_topology("2");
    LoopbackNetwork net(t, true);
    int64_t out = 42, in = 0;
    auto s = net.transport(0).isend(0, 1, &out, sizeof out, 5);
    EXPECT_FALSE(net.transport(0).test(s));
    EXPECT_EQ(net.unmatched(), 1u);
    auto r = net.transport(1).irecv(0, 0, &in, sizeof in, 5);
    EXPECT_TRUE(net.transport(1).test(r));
    EXPECT_TRUE(net.transport(0).test(s));
    EXPECT_EQ(in, 42);
    EXPECT_EQ(net.unmatched(), 0u);
    EXPECT_EQ(net.messages(), 1u);
}

TEST(EngineSupportLoopback, EagerSendCompletesAtOnceWithACopy) {
    Topology t = parse_topology("2");
    LoopbackNetwork net(t, false);
    int64_t out = 42, in = 0;
    auto s = net.transport(0).isend(0, 1, &out, sizeof out, 5);
    EXPECT_TRUE(net.transport(0).test(s));
    out = 7; // the send buffer is free again: the message keeps its own copy
    auto r = net.transport(1).irecv(0, 0, &in, sizeof in, 5);
    EXPECT_TRUE(net.transport(1).test(r));
    EXPECT_EQ(in, 42);
    EXPECT_EQ(net.unmatched(), 0u);
}

TEST(EngineSupportLoopback, MatchesByTagThenInPostingOrder) {
    // Rank 0 = (0,0) sends to (0,1) on dim 1: tags 1, 2, then 1 again.
    Topology t = parse_topology("2x2");
    LoopbackNetwork net(t, false);
    int64_t a = 1, b = 2, c = 3, x = 0, y = 0, z = 0;
    Transport &src = net.transport(0), &dst = net.transport(2);
    src.test(src.isend(1, 1, &a, 8, 1));
    src.test(src.isend(1, 1, &b, 8, 2));
    src.test(src.isend(1, 1, &c, 8, 1));
    EXPECT_TRUE(dst.test(dst.irecv(1, 0, &y, 8, 2)));
    EXPECT_TRUE(dst.test(dst.irecv(1, 0, &x, 8, 1)));
    EXPECT_TRUE(dst.test(dst.irecv(1, 0, &z, 8, 1)));
    EXPECT_EQ(x, 1);
    EXPECT_EQ(y, 2);
    EXPECT_EQ(z, 3);
    // The same tag on the other dimension is a different channel.
    int64_t w = 0;
    auto r = net.transport(1).irecv(0, 0, &w, 8, 1);
    EXPECT_FALSE(net.transport(1).test(r));
    EXPECT_EQ(net.unmatched(), 1u);
    net.transport(0).test(net.transport(0).isend(0, 1, &a, 8, 1));
    EXPECT_TRUE(net.transport(1).test(r));
    EXPECT_EQ(w, 1);
}

TEST(EngineSupportHostMemory, CacheHoldsNoMoreThanTheLargestWorkingSet) {
    HostMemory mem;
    // One buffer at a time, each size more than twice the last (never reused for the
    // next): the cache keeps at most the 15000 bytes the largest call held at once.
    for (size_t size : {1000, 3000, 7000, 15000}) mem.release(mem.acquire(size), size);
    EXPECT_EQ(mem.peak_bytes(), 15000u);
    EXPECT_LE(mem.cached_bytes(), 15000u);
    // The largest call, run again, still allocates nothing.
    void *again = mem.acquire(15000);
    EXPECT_EQ(mem.cached_bytes(), 0u);
    mem.release(again, 15000);
    EXPECT_EQ(mem.cached_bytes(), 15000u);
    // Two buffers at once raise the working set, and the cache may hold both.
    void *a = mem.acquire(15000), *b = mem.acquire(15000);
    mem.release(a, 15000);
    mem.release(b, 15000);
    EXPECT_EQ(mem.peak_bytes(), 30000u);
    EXPECT_EQ(mem.cached_bytes(), 30000u);
}

TEST(EngineSupportHostMemory, ReleasedBuffersAreReusedAndCounted) {
    HostMemory mem;
    void *a = mem.acquire(1000);
    void *b = mem.acquire(1000);
    EXPECT_NE(a, b);
    EXPECT_EQ(mem.outstanding(), 2u);
    mem.release(a, 1000);
    EXPECT_EQ(mem.outstanding(), 1u);
    EXPECT_EQ(mem.cached_bytes(), 1000u);
    EXPECT_EQ(mem.acquire(900), a); // reused: not more than twice the size asked for
    EXPECT_EQ(mem.cached_bytes(), 0u);
    mem.release(a, 900);
    void *c = mem.acquire(100); // 1000 > 2 x 100: a fresh buffer
    EXPECT_NE(c, a);
    mem.release(b, 1000);
    mem.release(c, 100);
    EXPECT_EQ(mem.outstanding(), 0u);
    int64_t src[4] = {1, 2, 3, 4}, dst[4] = {};
    mem.copy(dst, src, sizeof src);
    EXPECT_EQ(dst[3], 4);
}

} // namespace
