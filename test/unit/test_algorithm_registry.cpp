// Unit tests of src/algorithms/registry: every row walked, its spellings against the spec
// parser, accepts() against the spec's validation and the planner's, and steps(n) and
// the peers of one step against what the row's stage does on a loopback network.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "cost_model.h"
#include "host_memory.h"
#include "testbed/loopback_transport.h"
#include "stage.h"
#include "test_support.h"

using namespace themis;

namespace {

constexpr int kMaxPeers = 9;

std::string upper(std::string s) {
    for (char &c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

TEST(AlgorithmRegistry, RowsFollowTheEnum) {
    const std::vector<AlgorithmInfo> &rows = algorithms();
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(int(rows[i].id), int(i)) << rows[i].name;
        EXPECT_EQ(algorithm_info(rows[i].id).name, rows[i].name);
        EXPECT_EQ(algorithm_name(rows[i].id), rows[i].name);
        EXPECT_TRUE(rows[i].steps && rows[i].accepts && rows[i].step_peers && rows[i].make);
        EXPECT_EQ(rows[i].needs.empty(), rows[i].accepts(3) && rows[i].accepts(6))
            << rows[i].name << ": a row that refuses some peer counts says what it needs";
    }
    // The rooted algorithm has its row after them, and no dimension may be given it.
    EXPECT_EQ(int(rows.size()) + 1, kAlgorithmKinds);
    EXPECT_EQ(algorithm_info(Algorithm::GroupCast).name, "cast");
    EXPECT_FALSE(find_algorithm("cast"));
    EXPECT_EQ(stage_algorithm_for(Algorithm::Ring, Phase::Cast), Algorithm::GroupCast);
    EXPECT_EQ(stage_algorithm_for(Algorithm::Ring, Phase::Collect), Algorithm::GroupCast);
    EXPECT_EQ(stage_algorithm_for(Algorithm::Direct, Phase::AllGather), Algorithm::Direct);
}

TEST(AlgorithmRegistry, EveryNameAndAliasParsesBackToItsRow) {
    std::set<std::string> seen;
    for (const AlgorithmInfo &row : algorithms()) {
        std::vector<std::string> spellings = row.aliases;
        spellings.push_back(row.name);
        for (const std::string &s : spellings) {
            EXPECT_TRUE(seen.insert(s).second) << "\"" << s << "\" names two rows";
            EXPECT_EQ(parse_algorithm(s), row.id) << s;
            EXPECT_EQ(parse_algorithm(" " + upper(s) + " "), row.id) << s;
        }
    }
    EXPECT_EQ(parse_algorithm("rhd"), Algorithm::HalvingDoubling);
    EXPECT_EQ(parse_algorithm("fc"), Algorithm::Direct);
    EXPECT_FALSE(find_algorithm("tree"));
}

TEST(AlgorithmRegistry, MessagesNameEveryRow) {
    // With ring, hd and direct: "expected ring, hd (halving-doubling) or direct".
    EXPECT_EQ(algorithm_label(Algorithm::Ring), "ring");
    EXPECT_EQ(algorithm_label(Algorithm::HalvingDoubling), "hd (halving-doubling)");
    EXPECT_EQ(algorithm_label(Algorithm::Direct), "direct");
    const std::vector<AlgorithmInfo> &rows = algorithms();
    std::string choices;
    for (size_t i = 0; i < rows.size(); ++i)
        choices += (i == 0                ? ""
                    : i + 1 < rows.size() ? ", "
                                          : " or ") +
                   algorithm_label(rows[i].id);
    try {
        parse_algorithm("tree");
        FAIL() << "\"tree\" parsed";
    } catch (const SpecError &e) {
        EXPECT_EQ(std::string(e.what()), "algorithm: expected " + choices + ", got \"tree\"");
    }
    try {
        parse_topology("4x6:alg=ring,hd");
        FAIL() << "hd on 6 peers parsed";
    } catch (const SpecError &e) {
        EXPECT_STREQ(e.what(), "dimension 1 algorithm: hd (halving-doubling) needs a "
                               "power-of-two number of peers, got 6");
    }
}

TEST(AlgorithmRegistry, AcceptsIsWhatTheSpecAndThePlannerAllow) {
    for (const AlgorithmInfo &row : algorithms())
        for (int n = 1; n <= kMaxPeers; ++n) {
            SCOPED_TRACE(row.name + " on " + std::to_string(n) + " peers");
            const std::string spec = std::to_string(n) + ":alg=" + row.name;
            if (row.accepts(n)) {
                EXPECT_EQ(parse_topology(spec).dim(0).algorithm, row.id);
            } else {
                EXPECT_THROW(parse_topology(spec), SpecError);
            }
            Dimension d = themis_test::dim(n, 1e9);
            d.alternatives = themis_test::every_algorithm();
            EXPECT_EQ(may_run(d, row.id), row.accepts(n));
        }
}

TEST(AlgorithmRegistry, StepPeersAreMutual) {
    // Calibration posts a receive for every send: what one rank sends to, the other
    // expects from it.
    for (const AlgorithmInfo &row : algorithms())
        for (int n = 2; n <= kMaxPeers; ++n) {
            if (!row.accepts(n)) continue;
            for (int me = 0; me < n; ++me)
                for (int to : row.step_peers(me, n).to) {
                    ASSERT_TRUE(to >= 0 && to < n && to != me) << row.name << " " << me;
                    const std::vector<int> from = row.step_peers(to, n).from;
                    EXPECT_EQ(std::count(from.begin(), from.end(), me), 1)
                        << row.name << " n=" << n << ": " << to << " does not expect " << me;
                }
        }
}

// ---------------------------------------------------------------------------------------
// One stage of each row on a loopback network

// Forwards to another Transport and remembers, per step (tag), whom this rank sent to
// and received from.
class StepLog : public Transport {
  public:
    explicit StepLog(Transport &inner) : inner_(inner) {}
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override {
        steps[tag].to.push_back(peer);
        return inner_.isend(dim, peer, buf, bytes, tag);
    }
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override {
        steps[tag].from.push_back(peer);
        return inner_.irecv(dim, peer, buf, bytes, tag);
    }
    bool test(Request req) override { return inner_.test(req); }
    void progress() override { inner_.progress(); }
    const char *name() const override { return "step-log"; }

    std::map<int, StepPeers> steps;

  private:
    Transport &inner_;
};

constexpr int kElements = 3; // per block

int64_t value(int rank, int element) { return 1000 * rank + element + 1; }

std::vector<int> sorted(std::vector<int> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// What every rank of one run did (its steps) and holds afterwards (its work buffer).
struct StageRun {
    std::vector<std::unique_ptr<StepLog>> logs;
    std::vector<std::vector<int64_t>> work;
};

// Every rank of one dimension of n peers runs one stage of `row` in `phase` through the
// row's factory, round-robin until all are done; nothing may be left behind.
::testing::AssertionResult run_stage(const AlgorithmInfo &row, int n, Phase phase, StageRun &out) {
    const Topology topo({themis_test::dim(n, 1e9, 0, row.id)});
    LoopbackNetwork net(topo, /*rendezvous=*/true);
    themis_test::PlusReducer<int64_t> sum;
    std::vector<HostMemory> memory(n);
    std::vector<PlanOp> ops(n);
    std::vector<std::unique_ptr<StageAlgorithm>> stages;
    out.work.assign(n, std::vector<int64_t>(size_t(n) * kElements, 0));
    for (int r = 0; r < n; ++r) {
        PlanOp &op = ops[r];
        op.phase = phase;
        op.my_block = r;
        for (int b = 0; b < n; ++b) {
            op.block_begin.push_back(uint32_t(b));
            op.ranges.push_back(
                {uint64_t(b) * kElements * sizeof(int64_t), kElements * sizeof(int64_t)});
            // RS: every rank holds a contribution to every block; AG: only its own.
            for (int e = 0; e < kElements; ++e)
                if (phase == Phase::ReduceScatter || b == r)
                    out.work[r][size_t(b) * kElements + e] = value(r, b * kElements + e);
        }
        op.block_begin.push_back(uint32_t(n));
        out.logs.push_back(std::make_unique<StepLog>(net.transport(r)));
        StageContext ctx{*out.logs[r], sum, memory[r], reinterpret_cast<char *>(out.work[r].data()),
                         op,           n,   0};
        stages.push_back(make_stage_algorithm(row.id, ctx));
    }
    bool all = false;
    for (int round = 0; round < 10000 && !all; ++round) {
        all = true;
        for (auto &s : stages) all = s->progress() && all;
    }
    if (!all) return ::testing::AssertionFailure() << "not done after 10000 rounds";
    stages.clear();
    if (net.unmatched() != 0)
        return ::testing::AssertionFailure() << net.unmatched() << " unmatched messages";
    for (int r = 0; r < n; ++r)
        if (memory[r].outstanding() != 0)
            return ::testing::AssertionFailure() << "rank " << r << " holds buffers";
    return ::testing::AssertionSuccess();
}

// What the stage must leave: RS, each rank's own block summed over the ranks; AG, every
// block its owner's.
::testing::AssertionResult right_result(const StageRun &run, int n, Phase phase) {
    for (int r = 0; r < n; ++r)
        for (int b = 0; b < n; ++b) {
            if (phase == Phase::ReduceScatter && b != r) continue;
            for (int e = 0; e < kElements; ++e) {
                const int at = b * kElements + e;
                int64_t want = value(b, at);
                if (phase == Phase::ReduceScatter) {
                    want = 0;
                    for (int q = 0; q < n; ++q) want += value(q, at);
                }
                if (run.work[r][at] != want)
                    return ::testing::AssertionFailure() << "rank " << r << " block " << b << ": "
                                                         << run.work[r][at] << " != " << want;
            }
        }
    return ::testing::AssertionSuccess();
}

TEST(AlgorithmRegistry, EveryAcceptedRowRunsItsStepsOnLoopback) {
    for (const AlgorithmInfo &row : algorithms())
        for (int n = 1; n <= kMaxPeers; ++n) {
            if (!row.accepts(n)) continue;
            for (Phase phase : {Phase::ReduceScatter, Phase::AllGather}) {
                SCOPED_TRACE(row.name + " on " + std::to_string(n) + " peers, " +
                             phase_name(phase));
                StageRun run;
                ASSERT_TRUE(run_stage(row, n, phase, run));
                EXPECT_TRUE(right_result(run, n, phase));
                // Each step of a stage has its own tag: as many tags as steps on every rank,
                // and the cost model counts the same.
                const int steps = row.steps(n);
                EXPECT_EQ(stage_steps(themis_test::dim(n, 1e9, 0, row.id), Phase::ReduceScatter),
                          steps);
                for (int r = 0; r < n; ++r) {
                    EXPECT_EQ(int(run.logs[r]->steps.size()), steps) << "rank " << r;
                    if (n == 1) continue;
                    // Calibration's step is one the stage makes: its peers those of a step.
                    const StepPeers one = row.step_peers(r, n);
                    const auto &steps_made = run.logs[r]->steps;
                    EXPECT_TRUE(std::any_of(steps_made.begin(), steps_made.end(),
                                            [&](const auto &step) {
                                                return sorted(step.second.to) == sorted(one.to) &&
                                                       sorted(step.second.from) == sorted(one.from);
                                            }))
                        << "rank " << r << ": no step talks to the peers of step_peers";
                }
            }
        }
}

} // namespace
