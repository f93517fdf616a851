// Unit tests of src/staging and the engine's chunk hooks: whole collectives run in-process
// over LoopbackNetwork, some or all ranks keeping their data in separate "home" buffers
// (standing for device memory) that only reach the engine through a Stager, with
// asynchronous copies (DeferredHostCopier, run a few at a time between engine progress
// calls) and bounded staging. Results are checked against a brute-force computation;
// what the staging moved is checked against sizes computed here from the data layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine.h"
#include "host_memory.h"
#include "testbed/loopback_transport.h"
#include "plan.h"
#include "staging.h"
#include "test_support.h"

using namespace themis;

namespace {

class SumReducer : public Reducer {
  public:
    void reduce(void *dst, const void *src, size_t bytes) override {
        EXPECT_EQ(bytes % sizeof(int64_t), 0u) << "partial element reduced";
        auto *d = static_cast<int64_t *>(dst);
        auto *s = static_cast<const int64_t *>(src);
        // Modulo 2^64, as the engine's sums of arbitrary test patterns may overflow (a
        // signed overflow would be undefined: UBSan stops there).
        for (size_t i = 0; i < bytes / sizeof(int64_t); ++i)
            d[i] = static_cast<int64_t>(static_cast<uint64_t>(s[i]) + static_cast<uint64_t>(d[i]));
    }
    size_t element_bytes() const override { return sizeof(int64_t); }
};

// Staging buffers from HostMemory, counted, and filled with garbage when handed out so
// that a chunk used before its data was copied in shows up as a wrong result.
class CountingMemory : public Memory {
  public:
    void copy(void *dst, const void *src, size_t bytes) override { inner_.copy(dst, src, bytes); }
    void *acquire(size_t bytes) override {
        void *p = inner_.acquire(bytes);
        std::memset(p, 0x5a, bytes);
        held_ += bytes;
        peak_ = std::max(peak_, held_);
        return p;
    }
    void release(void *buf, size_t bytes) override {
        held_ -= bytes;
        inner_.release(buf, bytes);
    }
    size_t held() const { return held_; }
    size_t peak() const { return peak_; }
    size_t outstanding() const { return inner_.outstanding(); }

  private:
    HostMemory inner_;
    size_t held_ = 0, peak_ = 0;
};

int64_t ival(int rank, uint64_t e) {
    return static_cast<int64_t>((rank * 7919ull + e * 104729ull + rank * e) % 1000003ull) - 500000;
}

PlanRequest request(Collective coll, const std::vector<uint64_t> &counts, int chunks, int k,
                    int rank) {
    PlanRequest req = themis_test::bare_request(coll, sizeof(int64_t), counts, chunks);
    req.ordering.max_active = k;
    req.rank = rank;
    return req;
}

// ---------------------------------------------------------------------------------------
// DeferredHostCopier

TEST(DeferredHostCopier, CopiesOnlyWhenProgressedInOrderPerDirection) {
    DeferredHostCopier c;
    int a = 1, b = 2, x = 0, y = 0, z = 0;
    c.copy(AsyncCopier::ToStaging, &x, &a, sizeof a);
    const auto f1 = c.fence(AsyncCopier::ToStaging);
    c.copy(AsyncCopier::ToStaging, &y, &b, sizeof b);
    const auto f2 = c.fence(AsyncCopier::ToStaging);
    c.copy(AsyncCopier::ToHome, &z, &a, sizeof a);
    const auto g = c.fence(AsyncCopier::ToHome);
    a = 10; // read when the copy runs, not when it was queued
    EXPECT_FALSE(c.passed(AsyncCopier::ToStaging, f1));
    EXPECT_EQ(x, 0);
    EXPECT_EQ(c.progress(1), 2u); // one per direction
    EXPECT_TRUE(c.passed(AsyncCopier::ToStaging, f1));
    EXPECT_FALSE(c.passed(AsyncCopier::ToStaging, f2));
    EXPECT_TRUE(c.passed(AsyncCopier::ToHome, g));
    EXPECT_EQ(x, 10);
    EXPECT_EQ(z, 10);
    EXPECT_EQ(y, 0);
    c.wait_all();
    EXPECT_EQ(y, 2);
    EXPECT_EQ(c.pending(), 0u);
}

// ---------------------------------------------------------------------------------------
// Footprints, against piece_layout

std::vector<ByteRange> merged(std::vector<ByteRange> v) {
    std::sort(v.begin(), v.end(), [](auto &a, auto &b) { return a.offset < b.offset; });
    std::vector<ByteRange> out;
    for (auto &r : v) {
        if (!r.length) continue;
        if (!out.empty() && out.back().offset + out.back().length == r.offset)
            out.back().length += r.length;
        else
            out.push_back(r);
    }
    return out;
}

std::vector<ByteRange> plain(const std::vector<StagedRange> &v) {
    std::vector<ByteRange> out;
    for (auto &r : v) out.push_back({r.offset, r.length});
    return out;
}

TEST(StagingFootprint, ChunksArePiecesAndOwnPieces) {
    const Topology topo = parse_topology("2x3");
    const int n = topo.size();
    const std::vector<uint64_t> counts = {5, 0, 9, 3, 17, 4};
    for (Collective coll :
         {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
        for (int rank = 0; rank < n; ++rank) {
            PlanRequest req =
                request(coll, coll == Collective::AllReduce ? std::vector<uint64_t>{1000} : counts,
                        4, 1, rank);
            const Plan plan = compile_plan(topo, req);
            const auto pieces = piece_layout(topo, req, plan.schedule);
            const auto fp = chunk_footprints(plan);
            ASSERT_EQ(fp.size(), pieces.size());
            for (size_t k = 0; k < fp.size(); ++k) {
                const auto all = merged(pieces[k]);
                EXPECT_EQ(plain(fp[k].runs), all) << collective_name(coll) << " chunk " << k;
                uint64_t bytes = 0, slot = 0;
                for (auto &r : pieces[k]) bytes += r.length;
                for (auto &r : fp[k].runs) {
                    EXPECT_EQ(r.slot, slot);
                    slot += r.length;
                }
                EXPECT_EQ(fp[k].bytes, bytes);
                const auto own = merged({pieces[k][rank]});
                EXPECT_EQ(plain(fp[k].initial), coll == Collective::AllGather ? own : all);
                EXPECT_EQ(plain(fp[k].result), coll == Collective::ReduceScatter ? own : all);
                // Every placed range points at its own bytes inside the staging buffer.
                for (const auto *list : {&fp[k].initial, &fp[k].result})
                    for (const auto &r : *list)
                        for (const auto &run : fp[k].runs) {
                            if (r.offset >= run.offset && r.offset < run.offset + run.length) {
                                EXPECT_EQ(r.slot, run.slot + (r.offset - run.offset));
                            }
                        }
            }
        }
}

TEST(StagingFootprint, MinimumBudgetHoldsTheLargestPinnedChunks) {
    // 2x2, All-Reduce of 8 chunks of sizes 13,13,13,13,12,12,12,12 elements (100 over 8).
    const Topology topo = parse_topology("2x2");
    const Plan plan = compile_plan(topo, request(Collective::AllReduce, {100}, 8, 1, 0));
    const auto fp = chunk_footprints(plan);
    // K = 1: (1 + 1) x 2 dimensions = 4 chunks can be pinned: the four of 13 elements.
    EXPECT_EQ(minimum_staging_budget(plan, fp, 1), 4 * 13 * sizeof(int64_t));
    // K = 2: 6 chunks: four of 13 and two of 12.
    EXPECT_EQ(minimum_staging_budget(plan, fp, 2), (4 * 13 + 2 * 12) * sizeof(int64_t));
    EXPECT_EQ(minimum_staging_budget(plan, fp, 64), 100 * sizeof(int64_t));
}

// ---------------------------------------------------------------------------------------
// Engine hooks

// Hooks that keep every op waiting for a few asks, record the order of events, and
// locate bytes in the plain work buffer.
class RecordingHooks : public ChunkHooks {
  public:
    explicit RecordingHooks(char *work) : work_(work) {}
    void begin(const Plan &plan) override {
        ++begins;
        plan_ = &plan;
    }
    bool ready(const PlanOp &op) override {
        const int i = index(op);
        if (++asks[i] <= 3) return false;
        started.insert(i);
        return true;
    }
    char *locate(const PlanOp &op, const ByteRange &r) override {
        if (!started.count(index(op))) ++located_before_ready;
        return work_ + r.offset;
    }
    void stage_done(const PlanOp &op) override {
        const int i = index(op);
        if (!started.count(i)) ++done_before_ready;
        events.push_back({i, false});
    }
    void chunk_finished(int chunk) override { events.push_back({chunk, true}); }

    int index(const PlanOp &op) const { return static_cast<int>(&op - plan_->ops.data()); }

    int begins = 0, located_before_ready = 0, done_before_ready = 0;
    std::map<int, int> asks;
    std::set<int> started;
    std::vector<std::pair<int, bool>> events; // (op, false) or (chunk, true)

  private:
    char *work_;
    const Plan *plan_ = nullptr;
};

TEST(EngineHooks, GateStartsAndReportStagesAndChunksInOrder) {
    const Topology topo = parse_topology("2x3");
    const int n = topo.size();
    const uint64_t count = 5000;
    LoopbackNetwork net(topo, true);
    std::vector<std::unique_ptr<HostMemory>> mem;
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<std::vector<int64_t>> buf(n, std::vector<int64_t>(count));
    std::vector<std::unique_ptr<RecordingHooks>> hooks;
    std::vector<std::shared_ptr<const Plan>> plans;
    std::vector<std::unique_ptr<Execution>> execs;
    SumReducer sum;
    for (int r = 0; r < n; ++r) {
        for (uint64_t e = 0; e < count; ++e) buf[r][e] = ival(r, e);
        mem.push_back(std::make_unique<HostMemory>());
        engines.push_back(std::make_unique<Engine>(topo, net.transport(r), *mem[r], 2));
        plans.push_back(std::make_shared<const Plan>(
            compile_plan(topo, request(Collective::AllReduce, {count}, 8, 2, r))));
        hooks.push_back(std::make_unique<RecordingHooks>(reinterpret_cast<char *>(buf[r].data())));
        RunOptions opt;
        opt.hooks = hooks[r].get();
        execs.push_back(engines[r]->start(plans[r], nullptr, sum, opt));
    }
    for (long round = 0; round < 100000; ++round) {
        bool all = true;
        for (auto &e : execs) all = e->progress() && all;
        if (all) break;
    }
    for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(execs[r]->done()) << "rank " << r;
        const Plan &plan = *plans[r];
        const RecordingHooks &h = *hooks[r];
        EXPECT_EQ(h.begins, 1);
        EXPECT_EQ(h.located_before_ready, 0);
        EXPECT_EQ(h.done_before_ready, 0);
        EXPECT_EQ(h.started.size(), plan.ops.size());
        for (auto &kv : h.asks)
            EXPECT_EQ(kv.second, 4) << "op " << kv.first << " asked again after ready";
        // Stages of a chunk complete in order; its finish comes right after its last stage.
        std::vector<int> next_stage(plan.schedule.size(), 0);
        std::vector<int> finished(plan.schedule.size(), 0);
        int last_done = -1;
        for (auto [id, is_chunk] : h.events) {
            if (is_chunk) {
                ASSERT_GE(last_done, 0);
                EXPECT_EQ(plan.ops[last_done].chunk, id);
                EXPECT_EQ(next_stage[id], static_cast<int>(plan.schedule[id].stages.size()));
                ++finished[id];
            } else {
                const PlanOp &op = plan.ops[id];
                EXPECT_EQ(op.stage, next_stage[op.chunk]++);
                EXPECT_EQ(finished[op.chunk], 0);
                last_done = id;
            }
        }
        for (int f : finished) EXPECT_EQ(f, 1);
        for (uint64_t e = 0; e < count; ++e) {
            int64_t want = 0;
            for (int q = 0; q < n; ++q) want += ival(q, e);
            ASSERT_EQ(buf[r][e], want) << "rank " << r << " element " << e;
        }
    }
    EXPECT_EQ(net.unmatched(), 0u);
}

// ---------------------------------------------------------------------------------------
// Staged collectives

struct Case {
    std::string spec;
    Collective coll = Collective::AllReduce;
    uint64_t total = 0; // elements: All-Reduce count, or all blocks together
    int chunks = 16;
    int k = 1;
    uint64_t budget = 0;    // 0: the minimum; max: unbounded
    bool all_staged = true; // else only even positions stage, the others run plainly
    bool in_place = false;  // All-Reduce: the source is the home buffer
    int copy_stall = 0;     // polls between two runs of the copy engine
    uint64_t clip = 0;      // All-Reduce: the last `clip` bytes are padding
};

std::string describe(const Case &c) {
    return c.spec + " " + collective_name(c.coll) + " total " + std::to_string(c.total) +
           " chunks " + std::to_string(c.chunks) + " K " + std::to_string(c.k) + " budget " +
           (c.budget == std::numeric_limits<uint64_t>::max() ? std::string("unbounded")
                                                             : std::to_string(c.budget)) +
           (c.all_staged ? " all staged" : " mixed") + (c.in_place ? " in place" : "") + " stall " +
           std::to_string(c.copy_stall) + " clip " + std::to_string(c.clip);
}

struct Outcome {
    std::vector<Stager::Stats> stats; // per position (staged ranks)
    std::vector<uint64_t> work_bytes, own_bytes;
    std::vector<size_t> peak_held;
};

::testing::AssertionResult run_case(const Case &c, Outcome *out = nullptr) {
    const Topology topo = parse_topology(c.spec);
    const int n = topo.size();
    const bool ar = c.coll == Collective::AllReduce;
    std::vector<uint64_t> blocks;
    if (!ar) { // uneven blocks, one of them empty when there are enough ranks
        std::mt19937_64 rng(c.total * 31 + n);
        std::vector<uint64_t> w(n);
        for (int r = 0; r < n; ++r) w[r] = (r == 1 && n > 2) ? 0 : 1 + rng() % 4;
        const uint64_t wsum = std::accumulate(w.begin(), w.end(), uint64_t(0));
        uint64_t used = 0;
        for (int r = 0; r < n; ++r) blocks.push_back(c.total * w[r] / wsum), used += blocks.back();
        for (int r = 0; used < c.total; r = (r + 1) % n)
            if (w[r]) ++blocks[r], ++used;
    }
    std::vector<uint64_t> displ(n + 1, 0);
    for (int r = 0; !ar && r < n; ++r) displ[r + 1] = displ[r] + blocks[r];

    LoopbackNetwork net(topo, true);
    struct Rank {
        bool staged = false;
        HostMemory temps;
        CountingMemory staging;
        DeferredHostCopier copier;
        std::unique_ptr<Engine> engine;
        std::unique_ptr<Stager> stager;
        std::shared_ptr<const Plan> plan;
        std::unique_ptr<Execution> exec;
        std::vector<int64_t> input, home, result; // input: the source when separate
        std::vector<char> padded;                 // clipped All-Reduce: home = result = this
    };
    std::vector<std::unique_ptr<Rank>> ranks;
    SumReducer sum;
    const uint64_t es = sizeof(int64_t);
    const uint64_t guard = 64;
    for (int r = 0; r < n; ++r) {
        ranks.push_back(std::make_unique<Rank>());
        Rank &me = *ranks[r];
        me.staged = c.all_staged || r % 2 == 0;
        me.engine = std::make_unique<Engine>(topo, net.transport(r), me.temps, c.k);
        PlanRequest req =
            request(c.coll, ar ? std::vector<uint64_t>{c.total} : blocks, c.chunks, c.k, r);
        me.plan = std::make_shared<const Plan>(compile_plan(topo, req));
        const uint64_t bytes = me.plan->work_bytes;
        StagingConfig cfg;
        cfg.budget = c.budget;
        cfg.max_active = c.k;
        char *work = nullptr;
        if (ar) {
            me.input.resize(c.total);
            for (uint64_t e = 0; e < c.total; ++e) me.input[e] = ival(r, e);
            if (c.clip) { // home = result = a buffer that ends `clip` bytes early, then guard
                me.padded.assign(bytes - c.clip + guard, char(0x77));
                if (c.in_place) std::memcpy(me.padded.data(), me.input.data(), bytes - c.clip);
                const StagingRegion hr{me.padded.data(), 0, bytes - c.clip};
                cfg.home = cfg.result = hr;
                cfg.source = c.in_place ? hr
                                        : StagingRegion{reinterpret_cast<char *>(me.input.data()),
                                                        0, bytes - c.clip};
            } else {
                me.home = c.in_place ? me.input : std::vector<int64_t>(c.total, -99);
                const StagingRegion hr{reinterpret_cast<char *>(me.home.data()), 0, bytes};
                cfg.home = cfg.result = hr;
                cfg.source =
                    c.in_place ? hr
                               : StagingRegion{reinterpret_cast<char *>(me.input.data()), 0, bytes};
            }
            if (!me.staged) { // the plain path: the result is built in place in rbuf
                me.home = me.input;
                work = reinterpret_cast<char *>(me.home.data());
            }
        } else if (c.coll == Collective::ReduceScatter) {
            me.input.resize(c.total);
            for (uint64_t e = 0; e < c.total; ++e) me.input[e] = ival(r, e);
            me.home.assign(c.total, -99);
            me.result.assign(blocks[r], -99);
            cfg.source = {reinterpret_cast<char *>(me.input.data()), 0, bytes};
            cfg.home = {reinterpret_cast<char *>(me.home.data()), 0, bytes};
            cfg.result = {reinterpret_cast<char *>(me.result.data()), displ[r] * es,
                          displ[r + 1] * es};
            if (!me.staged) {
                me.home = me.input;
                work = reinterpret_cast<char *>(me.home.data());
            }
        } else {
            me.home.assign(c.total, -7);
            for (uint64_t e = displ[r]; e < displ[r + 1]; ++e) me.home[e] = ival(r, e);
            cfg.source = cfg.home =
                cfg.result = {reinterpret_cast<char *>(me.home.data()), 0, bytes};
            work = reinterpret_cast<char *>(me.home.data());
        }
        RunOptions opt;
        if (me.staged) {
            me.stager = std::make_unique<Stager>(me.staging, me.copier, cfg);
            opt.hooks = me.stager.get();
            work = nullptr;
        }
        me.exec = me.engine->start(me.plan, work, sum, opt);
    }

    long round = 0;
    for (;; ++round) {
        if (round > 400000) return ::testing::AssertionFailure() << "not complete";
        bool all = true;
        for (int r = 0; r < n; ++r) {
            Rank &me = *ranks[r];
            all = me.exec->progress() && all;
            if (me.staged && (c.copy_stall == 0 || round % (c.copy_stall + 1) == 0))
                me.copier.progress(1 + (r + round) % 2);
        }
        if (all) break;
    }
    for (int r = 0; r < n; ++r) {
        Rank &me = *ranks[r];
        if (!me.staged) continue;
        me.stager->finish();
        if (!me.stager->finished())
            return ::testing::AssertionFailure() << "rank " << r << " not finished";
        if (me.staging.held() != 0 || me.staging.outstanding() != 0)
            return ::testing::AssertionFailure() << "rank " << r << " kept staging buffers";
        if (me.staging.peak() > me.stager->stats().budget)
            return ::testing::AssertionFailure()
                   << "rank " << r << " held " << me.staging.peak() << " staging bytes, budget "
                   << me.stager->stats().budget;
        if (me.temps.outstanding() != 0)
            return ::testing::AssertionFailure() << "rank " << r << " kept temporaries";
    }
    if (net.unmatched() != 0) return ::testing::AssertionFailure() << "unmatched messages";

    // Results against brute force; inputs untouched.
    for (int r = 0; r < n; ++r) {
        Rank &me = *ranks[r];
        if (ar) {
            for (uint64_t e = 0; e < c.total; ++e) {
                int64_t want = 0;
                for (int q = 0; q < n; ++q) want += ival(q, e);
                int64_t got = 0;
                if (me.staged && c.clip) {
                    const uint64_t avail = std::min<uint64_t>(es, c.total * es - c.clip - e * es);
                    // Bytes past the clip are padding: compare the low bytes that exist
                    // (little endian: a sum's low bytes depend on the low bytes only).
                    std::memcpy(&got, me.padded.data() + e * es, avail);
                    int64_t w = 0;
                    std::memcpy(&w, &want, avail);
                    want = w;
                } else {
                    got = me.home[e];
                }
                if (got != want)
                    return ::testing::AssertionFailure() << "allreduce rank " << r << " element "
                                                         << e << ": " << got << " != " << want;
            }
            if (me.staged && c.clip)
                for (uint64_t b = me.padded.size() - guard; b < me.padded.size(); ++b)
                    if (me.padded[b] != char(0x77))
                        return ::testing::AssertionFailure()
                               << "rank " << r << " wrote past the clip";
            if (!c.in_place || !me.staged)
                for (uint64_t e = 0; e < c.total; ++e)
                    if (me.input[e] != ival(r, e))
                        return ::testing::AssertionFailure() << "rank " << r << " source changed";
        } else if (c.coll == Collective::ReduceScatter) {
            for (uint64_t i = 0; i < blocks[r]; ++i) {
                int64_t want = 0;
                for (int q = 0; q < n; ++q) want += ival(q, displ[r] + i);
                const int64_t got = me.staged ? me.result[i] : me.home[displ[r] + i];
                if (got != want)
                    return ::testing::AssertionFailure()
                           << "reduce_scatter rank " << r << " element " << i << ": " << got
                           << " != " << want;
            }
            if (me.staged)
                for (uint64_t e = 0; e < c.total; ++e)
                    if (me.input[e] != ival(r, e))
                        return ::testing::AssertionFailure() << "rank " << r << " source changed";
        } else {
            for (int q = 0; q < n; ++q)
                for (uint64_t e = displ[q]; e < displ[q + 1]; ++e)
                    if (me.home[e] != ival(q, e))
                        return ::testing::AssertionFailure()
                               << "allgather rank " << r << " block of " << q << " element " << e;
        }
    }
    if (out) {
        out->stats.assign(n, Stager::Stats());
        out->work_bytes.assign(n, 0);
        out->own_bytes.assign(n, 0);
        out->peak_held.assign(n, 0);
        for (int r = 0; r < n; ++r) {
            out->work_bytes[r] = ranks[r]->plan->work_bytes;
            out->own_bytes[r] = ar ? c.total * es : blocks[r] * es;
            if (!ranks[r]->staged) continue;
            out->stats[r] = ranks[r]->stager->stats();
            out->peak_held[r] = ranks[r]->staging.peak();
        }
    }
    return ::testing::AssertionSuccess();
}

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

TEST(StagedCollectives, UnboundedBudgetMovesEveryByteOnceEachWay) {
    for (const char *spec : {"4", "2x3", "2x2x2:alg=direct,hd,ring"})
        for (Collective coll :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
            Case c;
            c.spec = spec;
            c.coll = coll;
            c.total = 10007;
            c.k = 2;
            c.budget = kUnbounded;
            Outcome o;
            ASSERT_TRUE(run_case(c, &o)) << describe(c);
            for (size_t r = 0; r < o.stats.size(); ++r) {
                const auto &s = o.stats[r];
                EXPECT_EQ(s.evictions, 0u) << describe(c);
                EXPECT_EQ(s.loads, static_cast<uint64_t>(c.chunks)) << describe(c) << " rank " << r;
                // In: All-Gather only its own block, the others everything. Out:
                // Reduce-Scatter only its own block, the others everything.
                EXPECT_EQ(s.load_bytes,
                          coll == Collective::AllGather ? o.own_bytes[r] : o.work_bytes[r])
                    << describe(c) << " rank " << r;
                EXPECT_EQ(s.store_bytes,
                          coll == Collective::ReduceScatter ? o.own_bytes[r] : o.work_bytes[r])
                    << describe(c) << " rank " << r;
                EXPECT_LE(o.peak_held[r], o.work_bytes[r]);
            }
        }
}

TEST(StagedCollectives, SmallBudgetsEvictAndStayWithinTheBudget) {
    // Whether a budget below the message forces evictions depends on how many chunks a
    // plan keeps open at once; All-Reduce (every chunk reduce-scattered before any is
    // gathered, on these plans) always does at the minimum budget, and every collective
    // must somewhere in the sweep.
    std::map<Collective, uint64_t> evictions_of;
    for (const char *spec : {"2x3", "2x2x2:alg=direct,hd,ring", "3x2:alg=ring,direct"})
        for (Collective coll :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
            for (int k : {1, 2})
                for (uint64_t budget : {uint64_t(0), uint64_t(10007 * 8 / 3)}) {
                    Case c;
                    c.spec = spec;
                    c.coll = coll;
                    c.total = 10007;
                    c.chunks = 32;
                    c.k = k;
                    c.budget = budget;
                    c.copy_stall = 2;
                    Outcome o;
                    ASSERT_TRUE(run_case(c, &o)) << describe(c);
                    uint64_t evictions = 0;
                    for (size_t r = 0; r < o.stats.size(); ++r) {
                        const auto &s = o.stats[r];
                        evictions += s.evictions;
                        EXPECT_GE(s.budget, budget);
                        EXPECT_LT(s.budget, o.work_bytes[r]) << describe(c); // really bounded
                        EXPECT_LE(s.peak_bytes, s.budget);
                        EXPECT_LE(o.peak_held[r], s.budget);
                    }
                    evictions_of[coll] += evictions;
                    if (coll == Collective::AllReduce && budget == 0) {
                        EXPECT_GT(evictions, 0u) << describe(c) << ": the window never moved";
                    }
                }
    for (auto [coll, evictions] : evictions_of)
        EXPECT_GT(evictions, 0u) << collective_name(coll) << ": no eviction anywhere";
}

TEST(StagedCollectives, MixedRanksShareThePlan) {
    // Only even positions stage: the messages must be those of the plain ranks.
    for (const char *spec : {"4", "2x3", "2x2x2:alg=direct,hd,ring"})
        for (Collective coll :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
            for (uint64_t total : {uint64_t(1), uint64_t(5), uint64_t(777), uint64_t(20011)}) {
                Case c;
                c.spec = spec;
                c.coll = coll;
                c.total = total;
                c.k = 2;
                c.all_staged = false;
                ASSERT_TRUE(run_case(c)) << describe(c);
            }
}

TEST(StagedCollectives, InPlaceAndSlowCopies) {
    for (const char *spec : {"2x3", "5"})
        for (int stall : {0, 7}) {
            Case c;
            c.spec = spec;
            c.total = 4099;
            c.in_place = true;
            c.copy_stall = stall;
            ASSERT_TRUE(run_case(c)) << describe(c);
        }
}

TEST(StagedCollectives, ClippedRegionsNeverTouchPadding) {
    for (const char *spec : {"4", "2x3"})
        for (uint64_t budget : {uint64_t(0), kUnbounded})
            for (bool in_place : {false, true}) {
                Case c;
                c.spec = spec;
                c.total = 3001;
                c.budget = budget;
                c.in_place = in_place;
                c.clip = 4;
                ASSERT_TRUE(run_case(c)) << describe(c);
            }
}

// A rank whose copies do not complete starts no stage: nothing of it reaches the wire.
TEST(StagedCollectives, NoStageStartsBeforeItsDataArrived) {
    const Topology topo = parse_topology("2");
    LoopbackNetwork net(topo, true);
    HostMemory temps0, temps1;
    CountingMemory staging;
    DeferredHostCopier copier;
    Engine e0(topo, net.transport(0), temps0, 1), e1(topo, net.transport(1), temps1, 1);
    const uint64_t count = 4096;
    std::vector<int64_t> home0(count), buf1(count);
    for (uint64_t i = 0; i < count; ++i) home0[i] = ival(0, i), buf1[i] = ival(1, i);
    auto p0 = std::make_shared<const Plan>(
        compile_plan(topo, request(Collective::AllReduce, {count}, 4, 1, 0)));
    auto p1 = std::make_shared<const Plan>(
        compile_plan(topo, request(Collective::AllReduce, {count}, 4, 1, 1)));
    StagingConfig cfg;
    cfg.source = cfg.home = cfg.result = {reinterpret_cast<char *>(home0.data()), 0, count * 8};
    cfg.budget = kUnbounded;
    Stager stager(staging, copier, cfg);
    SumReducer sum;
    RunOptions opt;
    opt.hooks = &stager;
    auto x0 = e0.start(p0, nullptr, sum, opt);
    auto x1 = e1.start(p1, reinterpret_cast<char *>(buf1.data()), sum);
    for (int i = 0; i < 100; ++i) {
        EXPECT_FALSE(x0->progress());
        EXPECT_FALSE(x1->progress());
    }
    EXPECT_EQ(net.messages(), 0u);
    EXPECT_EQ(stager.stats().loads, 1u); // one chunk waits at the head of the only queue
    while (!(x0->progress() & x1->progress())) copier.progress(1);
    stager.finish();
    for (uint64_t i = 0; i < count; ++i) {
        ASSERT_EQ(home0[i], ival(0, i) + ival(1, i));
        ASSERT_EQ(buf1[i], ival(0, i) + ival(1, i));
    }
}

} // namespace
