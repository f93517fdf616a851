// Unit tests of src/plan and src/plan_cache: the compiled per-rank plans, checked by an
// independent reference executor that runs every rank's ops on in-memory buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "plan.h"
#include "planner.h"
#include "plan_cache.h"
#include "test_support.h"

using namespace themis;

namespace {

using Ranges = std::vector<ByteRange>;

// Sorted, merged, empty ranges dropped: a canonical form of a set of bytes.
Ranges canonical(Ranges rs) {
    std::sort(rs.begin(), rs.end(),
              [](const ByteRange &a, const ByteRange &b) { return a.offset < b.offset; });
    Ranges out;
    for (const auto &r : rs) {
        if (r.length == 0) continue;
        if (!out.empty() && out.back().offset + out.back().length >= r.offset) {
            uint64_t end = std::max(out.back().offset + out.back().length, r.offset + r.length);
            out.back().length = end - out.back().offset;
        } else {
            out.push_back(r);
        }
    }
    return out;
}

uint64_t bytes_of(const Ranges &rs) {
    uint64_t n = 0;
    for (const auto &r : rs) n += r.length;
    return n;
}

Ranges block_ranges(const PlanOp &op, int j) {
    return Ranges(op.ranges.begin() + op.block_begin[j], op.ranges.begin() + op.block_begin[j + 1]);
}

// ---------------------------------------------------------------------------------------
// Test cases: topologies with equal bandwidths (so Themis reorders), block counts that are
// uneven, zero, smaller than N and than the number of chunks, and not divisible by either.

PlanRequest request(Collective coll, std::vector<uint64_t> counts, int chunks, int rank,
                    Policy policy = Policy::Themis, LoadModel model = LoadModel::Latency) {
    PlanRequest req = themis_test::bare_request(coll, sizeof(int64_t), std::move(counts), chunks);
    req.scheduler.policy = policy;
    req.scheduler.load_model = model;
    req.rank = rank;
    return req;
}

std::vector<Plan> compile_all(const Topology &t, PlanRequest req) {
    std::vector<Plan> plans;
    for (int r = 0; r < t.size(); ++r) {
        req.rank = r;
        plans.push_back(compile_plan(t, req));
    }
    return plans;
}

std::vector<std::vector<uint64_t>> block_count_patterns(int n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<uint64_t>> out;
    std::vector<uint64_t> v(n);
    for (auto &c : v) c = std::uniform_int_distribution<uint64_t>(0, 37)(rng); // uneven
    v[0] = 0;
    out.push_back(v);
    std::fill(v.begin(), v.end(), 0); // one element in the whole collective
    v[n - 1] = 1;
    out.push_back(v);
    std::fill(v.begin(), v.end(), 1); // fewer elements per rank than chunks
    out.push_back(v);
    std::fill(v.begin(), v.end(), 7); // not divisible by the chunks
    out.push_back(v);
    for (int r = 0; r < n; ++r) v[r] = r; // growing, rank 0 empty
    out.push_back(v);
    for (int r = 0; r < n; ++r) v[r] = 131 + 13 * r; // more than the chunks, uneven
    out.push_back(v);
    return out;
}

const char *kSpecs[] = {"2x4", "4x2", "2x2x2", "3x2", "2x3", "2x3x2", "2x1x3", "5", "3x3"};
const int kChunks[] = {1, 5, 64};

// Themis with either load model (with the default 1 us latencies and tiny messages the
// latency model is dominated by step counts; the reference model reorders on bandwidth),
// and the baseline.
struct Variant {
    Policy policy;
    LoadModel model;
};
const Variant kVariants[] = {{Policy::Themis, LoadModel::Reference},
                             {Policy::Themis, LoadModel::Latency},
                             {Policy::Baseline, LoadModel::Latency}};

bool multi_dim(const Topology &t) {
    int active = 0;
    for (const auto &d : t.dims()) active += d.peers > 1;
    return active > 1;
}

// ---------------------------------------------------------------------------------------
// The reference executor: runs every rank's compiled plan, chunk by chunk, each chunk in
// its own stage order, on N int64 buffers. It knows nothing of the layout: it only reads
// each op's blocks and applies the stage's meaning to the dimension group.

using Buffers = std::vector<std::vector<int64_t>>;

// Index of the op of (chunk, stage) in a plan; checks that it exists exactly once.
std::map<std::pair<int, int>, int> op_index(const Plan &p) {
    std::map<std::pair<int, int>, int> m;
    for (int i = 0; i < static_cast<int>(p.ops.size()); ++i)
        EXPECT_TRUE(m.emplace(std::make_pair(p.ops[i].chunk, p.ops[i].stage), i).second);
    return m;
}

// Returns "" or the first inconsistency found.
std::string execute(const Topology &t, const std::vector<Plan> &plans, Buffers &buf) {
    const int n_ranks = t.size();
    const auto peers = themis_test::peers_of(t);
    std::vector<std::map<std::pair<int, int>, int>> index;
    for (const auto &p : plans) index.push_back(op_index(p));
    const auto &schedule = plans[0].schedule;
    for (int r = 1; r < n_ranks; ++r)
        if (plans[r].schedule.size() != schedule.size()) return "ranks disagree on chunks";
    for (int k = 0; k < static_cast<int>(schedule.size()); ++k) {
        for (int s = 0; s < static_cast<int>(schedule[k].stages.size()); ++s) {
            const Stage &stage = schedule[k].stages[s];
            const int d = stage.dim, n = peers[d];
            for (int base = 0; base < n_ranks; ++base) {
                auto c = themis_test::expected_coords(peers, base);
                if (c[d] != 0) continue; // one visit per dimension group
                std::vector<int> members(n);
                std::vector<const PlanOp *> ops(n);
                for (int j = 0; j < n; ++j) {
                    c[d] = j;
                    members[j] = themis_test::expected_rank(peers, c);
                    const Plan &p = plans[members[j]];
                    auto it = index[members[j]].find({k, s});
                    if (it == index[members[j]].end()) return "rank lacks an op";
                    ops[j] = &p.ops[it->second];
                    const Stage &mine = p.schedule[k].stages[s];
                    if (mine.dim != d || mine.phase != stage.phase)
                        return "ranks disagree on the schedule";
                    if (ops[j]->dim != d || ops[j]->phase != stage.phase || ops[j]->my_block != j)
                        return "op dim/phase/my_block wrong";
                    if (ops[j]->num_blocks() != n) return "op does not have n_d blocks";
                }
                for (int j = 1; j < n; ++j)
                    if (ops[j]->ranges != ops[0]->ranges ||
                        ops[j]->block_begin != ops[0]->block_begin)
                        return "members of a dimension group see different blocks (chunk " +
                               std::to_string(k) + " stage " + std::to_string(s) + ")";
                for (int j = 0; j < n; ++j) {
                    for (const ByteRange &br : block_ranges(*ops[0], j)) {
                        if (br.offset % 8 || br.length % 8) return "range not whole elements";
                        if (br.offset + br.length > plans[0].work_bytes)
                            return "range past the end";
                        const uint64_t lo = br.offset / 8, hi = lo + br.length / 8;
                        const int owner = members[j];
                        for (uint64_t e = lo; e < hi; ++e) {
                            if (stage.phase == Phase::ReduceScatter) {
                                int64_t sum = 0;
                                for (int m : members) sum += buf[m][e];
                                buf[owner][e] = sum;
                            } else {
                                for (int m : members) buf[m][e] = buf[owner][e];
                            }
                        }
                    }
                }
            }
        }
    }
    return "";
}

int64_t input_value(int rank, uint64_t element) {
    return static_cast<int64_t>((rank + 1) * 1000003ull + element * 7919ull % 100003ull);
}

// Whether some chunk visits the dimensions in other than the baseline order.
bool reordered(const Plan &p, Collective coll) {
    for (const auto &c : p.schedule) {
        std::vector<int> o = coll == Collective::AllGather ? widening_order(c) : narrowing_order(c);
        std::vector<int> sorted = o;
        std::sort(sorted.begin(), sorted.end());
        if (coll == Collective::AllGather) std::reverse(sorted.begin(), sorted.end());
        if (o != sorted) return true;
    }
    return false;
}

TEST(PlanReference, ReduceScatterEveryRankEndsWithItsMpiBlock) {
    for (const char *spec : kSpecs) {
        Topology t = parse_topology(spec);
        const int n = t.size();
        bool saw_reorder = false;
        for (const auto &counts : block_count_patterns(n, 1))
            for (int chunks : kChunks)
                for (const Variant &v : kVariants) {
                    const Policy pol = v.policy;
                    SCOPED_TRACE(std::string(spec) + " chunks " + std::to_string(chunks) + " " +
                                 policy_name(pol) + " " + load_model_name(v.model) +
                                 " counts[1]=" + std::to_string(counts[1 % n]));
                    auto plans = compile_all(
                        t, request(Collective::ReduceScatter, counts, chunks, 0, pol, v.model));
                    const uint64_t total = std::accumulate(counts.begin(), counts.end(), 0ull);
                    ASSERT_EQ(plans[0].work_bytes, total * 8);
                    if (pol == Policy::Themis)
                        saw_reorder |= reordered(plans[0], Collective::ReduceScatter);
                    Buffers buf(n, std::vector<int64_t>(total));
                    for (int r = 0; r < n; ++r)
                        for (uint64_t e = 0; e < total; ++e) buf[r][e] = input_value(r, e);
                    ASSERT_EQ(execute(t, plans, buf), "");
                    // Rank r's MPI block: elements [displ[r], displ[r] + counts[r]).
                    uint64_t displ = 0;
                    for (int r = 0; r < n; ++r) {
                        for (uint64_t e = displ; e < displ + counts[r]; ++e) {
                            int64_t want = 0;
                            for (int q = 0; q < n; ++q) want += input_value(q, e);
                            ASSERT_EQ(buf[r][e], want) << "rank " << r << " element " << e;
                        }
                        displ += counts[r];
                    }
                }
        if (multi_dim(t)) {
            EXPECT_TRUE(saw_reorder) << spec << ": Themis never reordered";
        }
    }
}

TEST(PlanReference, AllGatherEveryRankEndsWithEveryBlock) {
    for (const char *spec : kSpecs) {
        Topology t = parse_topology(spec);
        const int n = t.size();
        bool saw_reorder = false;
        for (const auto &counts : block_count_patterns(n, 2))
            for (int chunks : kChunks)
                for (const Variant &v : kVariants) {
                    const Policy pol = v.policy;
                    SCOPED_TRACE(std::string(spec) + " chunks " + std::to_string(chunks) + " " +
                                 policy_name(pol) + " " + load_model_name(v.model) +
                                 " counts[1]=" + std::to_string(counts[1 % n]));
                    auto plans = compile_all(
                        t, request(Collective::AllGather, counts, chunks, 0, pol, v.model));
                    const uint64_t total = std::accumulate(counts.begin(), counts.end(), 0ull);
                    if (pol == Policy::Themis)
                        saw_reorder |= reordered(plans[0], Collective::AllGather);
                    // Each rank holds only its own block; the rest is poison.
                    Buffers buf(n, std::vector<int64_t>(total, -1));
                    std::vector<uint64_t> displ(n + 1, 0);
                    for (int r = 0; r < n; ++r) displ[r + 1] = displ[r] + counts[r];
                    for (int r = 0; r < n; ++r)
                        for (uint64_t e = displ[r]; e < displ[r + 1]; ++e)
                            buf[r][e] = input_value(r, e);
                    ASSERT_EQ(execute(t, plans, buf), "");
                    for (int r = 0; r < n; ++r)
                        for (int q = 0; q < n; ++q)
                            for (uint64_t e = displ[q]; e < displ[q + 1]; ++e)
                                ASSERT_EQ(buf[r][e], input_value(q, e))
                                    << "rank " << r << " block of " << q << " element " << e;
                }
        if (multi_dim(t)) {
            EXPECT_TRUE(saw_reorder) << spec << ": Themis never reordered";
        }
    }
}

TEST(PlanReference, AllReduceEveryRankEndsWithTheSum) {
    for (const char *spec : kSpecs) {
        Topology t = parse_topology(spec);
        const int n = t.size();
        bool saw_reorder = false;
        for (uint64_t count :
             {uint64_t(1), uint64_t(7), uint64_t(n - 1), uint64_t(n + 1), uint64_t(997)})
            for (int chunks : kChunks)
                for (const Variant &v : kVariants) {
                    SCOPED_TRACE(std::string(spec) + " count " + std::to_string(count) +
                                 " chunks " + std::to_string(chunks) + " " + policy_name(v.policy) +
                                 " " + load_model_name(v.model));
                    auto plans = compile_all(
                        t, request(Collective::AllReduce, {count}, chunks, 0, v.policy, v.model));
                    if (v.policy == Policy::Themis)
                        saw_reorder |= reordered(plans[0], Collective::AllReduce);
                    Buffers buf(n, std::vector<int64_t>(count));
                    for (int r = 0; r < n; ++r)
                        for (uint64_t e = 0; e < count; ++e) buf[r][e] = input_value(r, e);
                    ASSERT_EQ(execute(t, plans, buf), "");
                    for (uint64_t e = 0; e < count; ++e) {
                        int64_t want = 0;
                        for (int q = 0; q < n; ++q) want += input_value(q, e);
                        for (int r = 0; r < n; ++r)
                            ASSERT_EQ(buf[r][e], want) << "rank " << r << " element " << e;
                    }
                }
        if (multi_dim(t)) {
            EXPECT_TRUE(saw_reorder) << spec << ": Themis never reordered";
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pieces

TEST(PlanPieces, ReduceScatterPiecesSplitEachMpiBlockInOrder) {
    Topology t = parse_topology("2x3");
    std::vector<uint64_t> counts = {5, 0, 64, 65, 1, 130};
    for (Collective coll : {Collective::ReduceScatter, Collective::AllGather}) {
        PlanRequest req = request(coll, counts, 64, 0);
        Plan p = compile_plan(t, req);
        const int chunks = static_cast<int>(p.schedule.size());
        EXPECT_EQ(chunks, 64); // largest block has 130 elements
        auto pieces = piece_layout(t, req, p.schedule);
        ASSERT_EQ(pieces.size(), size_t(chunks));
        uint64_t displ = 0;
        for (int r = 0; r < t.size(); ++r) {
            // Chunk pieces of rank r follow each other from displ[r] to displ[r] + counts[r],
            // each of floor or ceil(counts[r] / chunks) elements.
            uint64_t pos = displ * 8;
            for (int k = 0; k < chunks; ++k) {
                ASSERT_EQ(pieces[k][r].offset, pos) << "rank " << r << " chunk " << k;
                const uint64_t len = pieces[k][r].length / 8;
                ASSERT_EQ(pieces[k][r].length % 8, 0u);
                ASSERT_TRUE(len == counts[r] / chunks || len == (counts[r] + chunks - 1) / chunks);
                pos += pieces[k][r].length;
            }
            displ += counts[r];
            ASSERT_EQ(pos, displ * 8) << "rank " << r;
        }
    }
}

TEST(PlanPieces, AllReducePiecesPartitionTheVectorInNearlyEqualParts) {
    for (const char *spec : {"2x3", "2x2x2", "5"}) {
        Topology t = parse_topology(spec);
        const int n = t.size();
        for (uint64_t count : {uint64_t(1), uint64_t(n - 1), uint64_t(1000), uint64_t(100003)}) {
            PlanRequest req = request(Collective::AllReduce, {count}, 64, 0);
            Plan p = compile_plan(t, req);
            const int chunks = static_cast<int>(p.schedule.size());
            EXPECT_EQ(chunks, static_cast<int>(std::min<uint64_t>(64, count)));
            auto pieces = piece_layout(t, req, p.schedule);
            uint64_t chunk_lo = 0;
            for (int k = 0; k < chunks; ++k) {
                Ranges in_chunk(pieces[k].begin(), pieces[k].end());
                Ranges merged = canonical(in_chunk);
                // A chunk is one contiguous range right after the previous chunk.
                ASSERT_EQ(merged.size(), 1u) << spec << " chunk " << k;
                ASSERT_EQ(merged[0].offset, chunk_lo);
                ASSERT_EQ(bytes_of(in_chunk), merged[0].length) << "pieces overlap";
                const uint64_t chunk_elems = merged[0].length / 8;
                ASSERT_TRUE(chunk_elems == count / chunks ||
                            chunk_elems == (count + chunks - 1) / chunks);
                for (const auto &pc : pieces[k]) {
                    const uint64_t e = pc.length / 8;
                    ASSERT_TRUE(e == chunk_elems / n || e == (chunk_elems + n - 1) / n);
                }
                chunk_lo += merged[0].length;
            }
            ASSERT_EQ(chunk_lo, count * 8);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Structure of the compiled ops

// The bytes an op's block j must hold, from the pieces and the stage's meaning:
//   RS: pieces of ranks that agree with me on the dims reduced before, with coord d = j;
//   AG: pieces of ranks that agree with me on the dims not gathered yet (other than d),
//       with coord d = j.
Ranges expected_block(const Topology &t, const std::vector<std::vector<ByteRange>> &pieces,
                      const ChunkSchedule &chunk, int k, int s, int me, int j) {
    const auto peers = themis_test::peers_of(t);
    const Stage &stage = chunk.stages[s];
    std::vector<bool> must_match(t.num_dims(), false);
    if (stage.phase == Phase::ReduceScatter) {
        for (int i = 0; i < s; ++i) must_match[chunk.stages[i].dim] = true;
    } else {
        std::fill(must_match.begin(), must_match.end(), true);
        for (int i = 0; i < s; ++i)
            if (chunk.stages[i].phase == Phase::AllGather) must_match[chunk.stages[i].dim] = false;
    }
    must_match[stage.dim] = false;
    const auto mine = themis_test::expected_coords(peers, me);
    Ranges out;
    for (int r = 0; r < t.size(); ++r) {
        const auto c = themis_test::expected_coords(peers, r);
        bool in = c[stage.dim] == j;
        for (int d = 0; d < t.num_dims() && in; ++d)
            if (must_match[d] && c[d] != mine[d]) in = false;
        if (in) out.push_back(pieces[k][r]);
    }
    return canonical(out);
}

TEST(PlanStructure, BlocksPartitionExactlyThePiecesInPlay) {
    for (const char *spec : {"2x4", "3x2", "2x2x2", "2x1x3"}) {
        Topology t = parse_topology(spec);
        const int n = t.size();
        for (Collective coll :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
            std::vector<uint64_t> counts = coll == Collective::AllReduce
                                               ? std::vector<uint64_t>{1001}
                                               : block_count_patterns(n, 3)[0];
            for (int chunks : {5, 64}) {
                SCOPED_TRACE(std::string(spec) + " " + collective_name(coll) + " chunks " +
                             std::to_string(chunks));
                for (int me = 0; me < n; ++me) {
                    PlanRequest req = request(coll, counts, chunks, me);
                    Plan p = compile_plan(t, req);
                    auto pieces = piece_layout(t, req, p.schedule);
                    for (const PlanOp &op : p.ops) {
                        // No two ranges of the op overlap, across all its blocks.
                        Ranges all = op.ranges;
                        ASSERT_EQ(bytes_of(canonical(all)), bytes_of(all)) << "overlap in op";
                        ASSERT_EQ(op.total_bytes(), bytes_of(all));
                        for (int j = 0; j < op.num_blocks(); ++j) {
                            Ranges got = block_ranges(op, j);
                            ASSERT_EQ(op.block_bytes(j), bytes_of(got));
                            ASSERT_EQ(canonical(got),
                                      expected_block(t, pieces, p.schedule[op.chunk], op.chunk,
                                                     op.stage, me, j))
                                << "rank " << me << " chunk " << op.chunk << " stage " << op.stage
                                << " block " << j;
                        }
                    }
                }
            }
        }
    }
}

TEST(PlanStructure, BytesMovedPerPhaseAreTotalMinusOwn) {
    // RS: each stage sends every block but mine; summed over the stages that is everything
    // but what I end with. AG mirrors it with what it receives.
    for (const char *spec : {"2x4", "4x2", "2x3x2", "3x3"}) {
        Topology t = parse_topology(spec);
        const int n = t.size();
        for (const auto &counts : block_count_patterns(n, 4))
            for (int chunks : kChunks)
                for (Collective coll :
                     {Collective::ReduceScatter, Collective::AllGather, Collective::AllReduce}) {
                    const std::vector<uint64_t> req_counts =
                        coll == Collective::AllReduce ? std::vector<uint64_t>{counts.back() * 3 + 1}
                                                      : counts;
                    for (int me = 0; me < n; ++me) {
                        PlanRequest req = request(coll, req_counts, chunks, me);
                        Plan p = compile_plan(t, req);
                        const uint64_t total =
                            std::accumulate(req_counts.begin(), req_counts.end(), 0ull) * 8;
                        uint64_t own = 0;
                        if (coll == Collective::AllReduce) {
                            for (const auto &per_rank : piece_layout(t, req, p.schedule))
                                own += per_rank[me].length;
                        } else {
                            own = counts[me] * 8;
                        }
                        uint64_t moved_rs = 0, moved_ag = 0;
                        for (const PlanOp &op : p.ops) {
                            uint64_t mine = bytes_of(block_ranges(op, op.my_block));
                            uint64_t others = bytes_of(op.ranges) - mine;
                            (op.phase == Phase::ReduceScatter ? moved_rs : moved_ag) += others;
                        }
                        SCOPED_TRACE(std::string(spec) + " " + collective_name(coll) + " rank " +
                                     std::to_string(me) + " chunks " + std::to_string(chunks));
                        if (coll != Collective::AllGather)
                            ASSERT_EQ(moved_rs, total - own);
                        else
                            ASSERT_EQ(moved_rs, 0u);
                        if (coll != Collective::ReduceScatter)
                            ASSERT_EQ(moved_ag, total - own);
                        else
                            ASSERT_EQ(moved_ag, 0u);
                    }
                }
    }
}

TEST(PlanStructure, DimQueueHoldsEveryOpOnceInAnOrderThatCannotDeadlock) {
    for (const char *spec : kSpecs) {
        Topology t = parse_topology(spec);
        for (Collective coll :
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
            for (int k_active : {1, 3})
                for (IntraPolicy intra : {IntraPolicy::Fifo, IntraPolicy::Scf}) {
                    std::vector<uint64_t> counts = coll == Collective::AllReduce
                                                       ? std::vector<uint64_t>{5000}
                                                       : std::vector<uint64_t>(t.size(), 300);
                    PlanRequest req = request(coll, counts, 64, 0);
                    req.ordering.intra = intra;
                    req.ordering.max_active = k_active;
                    std::vector<Plan> plans = compile_all(t, req);
                    SCOPED_TRACE(std::string(spec) + " " + collective_name(coll) +
                                 " K=" + std::to_string(k_active) + " " + intra_policy_name(intra));
                    for (int me = 0; me < t.size(); ++me) {
                        const Plan &p = plans[me];
                        ASSERT_EQ(p.dim_queue.size(), size_t(t.num_dims()));
                        // Ops are grouped by chunk, stages in order; previous links them.
                        auto index = op_index(p);
                        for (size_t i = 0; i < p.ops.size(); ++i) {
                            const PlanOp &op = p.ops[i];
                            ASSERT_EQ(op.dim, p.schedule[op.chunk].stages[op.stage].dim);
                            ASSERT_EQ(op.previous,
                                      op.stage == 0 ? -1 : index.at({op.chunk, op.stage - 1}));
                        }
                        // Every op exactly once, in the queue of its own dimension.
                        std::vector<int> seen(p.ops.size(), 0);
                        for (int d = 0; d < t.num_dims(); ++d)
                            for (int i : p.dim_queue[d]) {
                                ASSERT_GE(i, 0);
                                ASSERT_LT(i, static_cast<int>(p.ops.size()));
                                ASSERT_EQ(p.ops[i].dim, d);
                                ++seen[i];
                            }
                        for (size_t i = 0; i < seen.size(); ++i)
                            ASSERT_EQ(seen[i], 1) << "op " << i;
                        // Queue order + chunk stage order has no cycle (Kahn's algorithm).
                        std::vector<std::vector<int>> next(p.ops.size());
                        std::vector<int> indeg(p.ops.size(), 0);
                        auto edge = [&](int a, int b) {
                            next[a].push_back(b);
                            ++indeg[b];
                        };
                        for (const auto &q : p.dim_queue)
                            for (size_t j = 1; j < q.size(); ++j) edge(q[j - 1], q[j]);
                        for (size_t i = 0; i < p.ops.size(); ++i)
                            if (p.ops[i].previous >= 0)
                                edge(p.ops[i].previous, static_cast<int>(i));
                        std::queue<int> ready;
                        for (size_t i = 0; i < p.ops.size(); ++i)
                            if (!indeg[i]) ready.push(static_cast<int>(i));
                        size_t done = 0;
                        while (!ready.empty()) {
                            int a = ready.front();
                            ready.pop();
                            ++done;
                            for (int b : next[a])
                                if (--indeg[b] == 0) ready.push(b);
                        }
                        ASSERT_EQ(done, p.ops.size()) << "queue order contradicts stage order";
                        // Every rank issues the same (chunk, stage) sequence on each dimension.
                        for (int d = 0; d < t.num_dims(); ++d) {
                            ASSERT_EQ(p.dim_queue[d].size(), plans[0].dim_queue[d].size());
                            for (size_t j = 0; j < p.dim_queue[d].size(); ++j) {
                                const PlanOp &a = p.ops[p.dim_queue[d][j]];
                                const PlanOp &b = plans[0].ops[plans[0].dim_queue[d][j]];
                                ASSERT_EQ(a.chunk, b.chunk);
                                ASSERT_EQ(a.stage, b.stage);
                            }
                        }
                    }
                }
    }
}

void expect_same_plan(const Plan &a, const Plan &b) {
    EXPECT_EQ(a.collective, b.collective);
    EXPECT_EQ(a.work_bytes, b.work_bytes);
    EXPECT_EQ(a.dim_queue, b.dim_queue);
    EXPECT_EQ(a.predicted_time, b.predicted_time);
    EXPECT_EQ(a.busy, b.busy);
    EXPECT_EQ(a.describe(), b.describe());
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (size_t i = 0; i < a.ops.size(); ++i) {
        const PlanOp &x = a.ops[i], &y = b.ops[i];
        EXPECT_EQ(x.chunk, y.chunk);
        EXPECT_EQ(x.stage, y.stage);
        EXPECT_EQ(x.dim, y.dim);
        EXPECT_EQ(x.phase, y.phase);
        EXPECT_EQ(x.my_block, y.my_block);
        EXPECT_EQ(x.previous, y.previous);
        EXPECT_EQ(x.ranges, y.ranges);
        EXPECT_EQ(x.block_begin, y.block_begin);
    }
    ASSERT_EQ(a.schedule.size(), b.schedule.size());
    for (size_t c = 0; c < a.schedule.size(); ++c) {
        ASSERT_EQ(a.schedule[c].stages.size(), b.schedule[c].stages.size());
        for (size_t s = 0; s < a.schedule[c].stages.size(); ++s) {
            EXPECT_EQ(a.schedule[c].stages[s].dim, b.schedule[c].stages[s].dim);
            EXPECT_EQ(a.schedule[c].stages[s].input_bytes, b.schedule[c].stages[s].input_bytes);
        }
    }
}

TEST(PlanStructure, CompilingTwiceGivesTheIdenticalPlan) {
    Topology t = parse_topology("2x3x2:alg=ring,direct,hd");
    for (Collective coll :
         {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
        std::vector<uint64_t> counts = coll == Collective::AllReduce
                                           ? std::vector<uint64_t>{100003}
                                           : block_count_patterns(t.size(), 5)[5];
        PlanRequest req = request(coll, counts, 64, 7);
        req.ordering.max_active = 2;
        Plan a = compile_plan(t, req), b = compile_plan(t, req);
        EXPECT_GT(a.ops.size(), 0u);
        expect_same_plan(a, b);
    }
}

TEST(PlanStructure, EmptyCollectiveHasNoOps) {
    Topology t = parse_topology("2x2");
    for (Collective coll : {Collective::ReduceScatter, Collective::AllGather}) {
        Plan p = compile_plan(t, request(coll, {0, 0, 0, 0}, 64, 1));
        EXPECT_EQ(p.work_bytes, 0u);
        EXPECT_TRUE(p.ops.empty());
        EXPECT_EQ(p.dim_queue.size(), 2u);
        for (const auto &q : p.dim_queue) EXPECT_TRUE(q.empty());
    }
    Plan ar = compile_plan(t, request(Collective::AllReduce, {0}, 64, 0));
    EXPECT_TRUE(ar.ops.empty());
}

TEST(PlanStructure, EffectiveChunksNeverExceedTheLargestBlock) {
    EXPECT_EQ(effective_chunks(request(Collective::ReduceScatter, {0, 0, 3, 1}, 64, 0)), 3);
    EXPECT_EQ(effective_chunks(request(Collective::AllReduce, {5}, 64, 0)), 5);
    EXPECT_EQ(effective_chunks(request(Collective::AllReduce, {1000}, 64, 0)), 64);
    EXPECT_EQ(effective_chunks(request(Collective::AllGather, {0, 0}, 64, 0)), 1);
    // The plan uses that many chunks.
    Plan p = compile_plan(parse_topology("2x2"),
                          request(Collective::ReduceScatter, {0, 0, 3, 1}, 64, 0));
    EXPECT_EQ(p.schedule.size(), 3u);
}

TEST(PlanStructure, NegativeChunkRequestMeansOneChunkZeroMeansAuto) {
    // As split_bytes does for chunks < 1: negative requests use one chunk, never one
    // chunk per element; 0 lets the planner choose, up to kMaxAutoChunks.
    EXPECT_EQ(effective_chunks(request(Collective::AllReduce, {1000}, -3, 0)), 1);
    EXPECT_EQ(effective_chunks(request(Collective::ReduceScatter, {10, 20}, -1, 0)), 1);
    EXPECT_EQ(effective_chunks(request(Collective::AllReduce, {100000}, kAutoChunks, 0)),
              kMaxAutoChunks);
}

TEST(PlanStructure, MinChunkBytesIsAFloor) {
    PlanRequest r = request(Collective::AllReduce, {1000}, 64, 0);
    r.element_size = 4;       // 4000 bytes
    r.min_chunk_bytes = 1000; // at most 4 chunks
    EXPECT_EQ(effective_chunks(r), 4);
    r.min_chunk_bytes = 8000; // less than one chunk's worth: still one
    EXPECT_EQ(effective_chunks(r), 1);
    r.chunks = 2;
    r.min_chunk_bytes = 1000; // the request asks for fewer: it wins
    EXPECT_EQ(effective_chunks(r), 2);
}

TEST(PlanStructure, SinglePeerDimensionsTakeNoOps) {
    Topology t = parse_topology("1x4x1");
    Plan p = compile_plan(t, request(Collective::AllReduce, {100}, 4, 2));
    ASSERT_EQ(p.ops.size(), 8u); // 4 chunks x (RS + AG) on dim 1
    for (const auto &op : p.ops) EXPECT_EQ(op.dim, 1);
    EXPECT_TRUE(p.dim_queue[0].empty());
    EXPECT_TRUE(p.dim_queue[2].empty());
}

// ---------------------------------------------------------------------------------------
// PlanCache

TEST(PlanCacheTest, HitReturnsTheSamePlanObject) {
    PlanCache cache(4);
    Topology t = parse_topology("2x4");
    PlanRequest req = request(Collective::AllReduce, {1000}, 8, 3);
    auto a = cache.get(t, req);
    auto b = cache.get(t, req);
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(cache.hits(), 1u);
    EXPECT_EQ(cache.misses(), 1u);
    EXPECT_EQ(cache.size(), 1u);
    expect_same_plan(*a, compile_plan(t, req));
}

TEST(PlanCacheTest, CallsInFlightTogetherComeBackToFewPlans) {
    // A stream of 4 MiB All-Reduces, each planned from the load the one before left (as
    // the component plans nonblocking calls): the carried load comes back to a few values,
    // so the cache compiles a few plans, not one per call.
    Topology t = parse_topology("2x2x2:bw=50Mbps,100Mbps,200Mbps:lat=50us,30us,20us");
    PlanRequest req = request(Collective::AllReduce, {1u << 20}, 128, 0);
    req.element_size = 4;
    req.min_chunk_bytes = 256 << 10;
    req.ordering.max_active = 4;
    PlanCache cache(64);
    for (int call = 0; call < 200; ++call) req.carried_load = cache.get(t, req)->carried_load;
    EXPECT_LE(cache.misses(), 16u);
    EXPECT_GE(cache.hits(), 184u);
}

TEST(PlanCacheTest, EveryKeyFieldMakesADifferentPlan) {
    PlanCache cache(64);
    Topology t = parse_topology("2x4");
    PlanRequest base = request(Collective::ReduceScatter, std::vector<uint64_t>(8, 10), 8, 3);
    std::vector<std::pair<Topology, PlanRequest>> keys = {{t, base}};
    auto vary = [&](auto change) {
        PlanRequest r = base;
        change(r);
        keys.push_back({t, r});
    };
    vary([](PlanRequest &r) { r.collective = Collective::AllGather; });
    vary([](PlanRequest &r) { r.element_size = 4; });
    vary([](PlanRequest &r) { r.block_counts[7] = 11; });
    vary([](PlanRequest &r) { r.chunks = 4; });
    vary([](PlanRequest &r) { r.min_chunk_bytes = 4; });
    vary([](PlanRequest &r) { r.scheduler.policy = Policy::Baseline; });
    vary([](PlanRequest &r) { r.scheduler.load_model = LoadModel::Reference; });
    vary([](PlanRequest &r) { r.scheduler.threshold = 0.5; });
    vary([](PlanRequest &r) { r.ordering.intra = IntraPolicy::Fifo; });
    vary([](PlanRequest &r) { r.ordering.max_active = 2; });
    vary([](PlanRequest &r) { r.ordering.max_active_bytes = 1 << 20; });
    vary([](PlanRequest &r) { r.block_displs = {70, 60, 50, 40, 30, 20, 10, 0}; });
    vary([](PlanRequest &r) { r.rank = 4; });
    vary([](PlanRequest &r) { r.carried_load = {0, 1e-3}; });
    keys.push_back({parse_topology("2x4:lat=2us"), base});
    keys.push_back({parse_topology("4x2"), base});
    // The fill curve: a measured one, and another of it.
    keys.push_back({parse_topology("2x4:fill=1,0.56/0.78/0.94"), base});
    keys.push_back({parse_topology("2x4:fill=1,0.56/0.78/0.95"), base});
    std::set<const Plan *> distinct;
    for (const auto &k : keys) distinct.insert(cache.get(k.first, k.second).get());
    EXPECT_EQ(distinct.size(), keys.size());
    EXPECT_EQ(cache.misses(), keys.size());
    EXPECT_EQ(cache.hits(), 0u);
    // All are now cached: asking again hits every one, with the same object.
    for (const auto &k : keys) EXPECT_EQ(distinct.count(cache.get(k.first, k.second).get()), 1u);
    EXPECT_EQ(cache.hits(), keys.size());
    EXPECT_EQ(cache.misses(), keys.size());
}

TEST(PlanCacheTest, LeastRecentlyUsedIsEvictedBeyondCapacity) {
    PlanCache cache(2);
    Topology t = parse_topology("2x2");
    auto req = [](uint64_t count) { return request(Collective::AllReduce, {count}, 4, 0); };
    auto a = cache.get(t, req(10));
    auto b = cache.get(t, req(20));
    EXPECT_EQ(cache.get(t, req(10)).get(), a.get()); // a is now the most recent
    auto c = cache.get(t, req(30));                  // evicts b
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.hits(), 1u);
    EXPECT_EQ(cache.misses(), 3u);
    EXPECT_EQ(cache.get(t, req(10)).get(), a.get()); // still cached
    EXPECT_EQ(cache.get(t, req(30)).get(), c.get()); // still cached
    EXPECT_EQ(cache.hits(), 3u);
    auto b2 = cache.get(t, req(20)); // b was evicted: compiled again
    EXPECT_EQ(cache.misses(), 4u);
    EXPECT_NE(b2.get(), b.get());
    EXPECT_EQ(b2->work_bytes, 20u * 8);
    // The evicted plan stays valid for whoever still holds it.
    EXPECT_EQ(b->work_bytes, 20u * 8);
    EXPECT_EQ(cache.size(), 2u);
}

TEST(PlanCacheTest, ClearEmptiesTheCache) {
    PlanCache cache(4);
    Topology t = parse_topology("2x2");
    auto r = request(Collective::AllReduce, {10}, 4, 0);
    cache.get(t, r);
    cache.clear();
    EXPECT_EQ(cache.size(), 0u);
    const size_t misses = cache.misses();
    cache.get(t, r);
    EXPECT_EQ(cache.misses(), misses + 1);
}

TEST(PlanCacheTest, ZeroCapacityStillHoldsOnePlan) {
    PlanCache cache(0);
    Topology t = parse_topology("2x2");
    auto r = request(Collective::AllReduce, {10}, 4, 0);
    auto a = cache.get(t, r);
    EXPECT_EQ(cache.get(t, r).get(), a.get());
    EXPECT_EQ(cache.size(), 1u);
}

TEST(PlanDescribe, OneLinePerChunkWithItsOrders) {
    // 2x4 baseline All-Reduce of 4 chunks of 100 bytes: every chunk "RS 0,1 AG 1,0".
    Topology t = parse_topology("2x4");
    Plan p = compile_plan(t, request(Collective::AllReduce, {50}, 4, 0, Policy::Baseline));
    std::string d = p.describe();
    EXPECT_EQ(std::count(d.begin(), d.end(), '\n'), 4);
    EXPECT_NE(d.find("RS 0,1 AG 1,0"), std::string::npos) << d;
}

} // namespace
