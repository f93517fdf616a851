// plan: compile a schedule into this rank's per-dimension op lists (see plan.h).
#include "plan.h"

#include "planner.h"

#include <algorithm>
#include <sstream>

namespace themis {

uint64_t PlanOp::block_bytes(int j) const {
    uint64_t sum = 0;
    for (uint32_t i = block_begin[j]; i < block_begin[j + 1]; ++i) sum += ranges[i].length;
    return sum;
}

uint64_t PlanOp::total_bytes() const {
    uint64_t sum = 0;
    for (const auto &r : ranges) sum += r.length;
    return sum;
}

std::string Plan::describe() const {
    std::ostringstream os;
    for (size_t c = 0; c < schedule.size(); ++c) {
        os << "chunk " << c << " (" << static_cast<uint64_t>(schedule[c].bytes) << " B):";
        Phase last = Phase::ReduceScatter;
        bool first = true;
        for (const Stage &s : schedule[c].stages) {
            if (first || s.phase != last)
                os << ' ' << phase_name(s.phase) << ' ';
            else
                os << ',';
            os << s.dim;
            last = s.phase;
            first = false;
        }
        os << '\n';
    }
    return os.str();
}

namespace {

// The k-th of `parts` nearly equal parts of `total` (the first total % parts get one more).
uint64_t part_size(uint64_t total, uint64_t parts, uint64_t k) {
    return total / parts + (k < total % parts ? 1 : 0);
}
uint64_t part_offset(uint64_t total, uint64_t parts, uint64_t k) {
    return k * (total / parts) + std::min<uint64_t>(k, total % parts);
}

uint64_t total_elements(const PlanRequest &req) {
    uint64_t sum = 0;
    for (uint64_t c : req.block_counts) sum += c;
    return sum;
}

void coalesce(std::vector<ByteRange> &rs) {
    std::sort(rs.begin(), rs.end(),
              [](const ByteRange &a, const ByteRange &b) { return a.offset < b.offset; });
    size_t out = 0;
    for (const ByteRange &r : rs) {
        if (r.length == 0) continue;
        if (out > 0 && rs[out - 1].offset + rs[out - 1].length == r.offset)
            rs[out - 1].length += r.length;
        else
            rs[out++] = r;
    }
    rs.resize(out);
}

// Calls fn(rank) for every rank equal to `base` on all dimensions but those in `free`.
template <typename Fn>
void for_each_rank(const Topology &topo, int base, const std::vector<int> &free, Fn fn) {
    std::vector<int> digit(free.size(), 0);
    for (int d : free) base = topo.with_coord(base, d, 0);
    while (true) {
        int r = base;
        for (size_t i = 0; i < free.size(); ++i) r = topo.with_coord(r, free[i], digit[i]);
        fn(r);
        size_t i = 0;
        while (i < free.size() && ++digit[i] == topo.dim(free[i]).peers) digit[i++] = 0;
        if (i == free.size()) return;
    }
}

// The dimensions whose coordinate is free inside one block of stage s of a chunk.
std::vector<int> free_dims(const Topology &topo, const ChunkSchedule &chunk, int s) {
    const Stage &stage = chunk.stages[s];
    std::vector<bool> fixed(topo.num_dims(), false);
    if (phase_info(stage.phase).narrows) {
        // Still in play: ranks that match me on the dimensions already narrowed.
        for (int i = 0; i < s; ++i) fixed[chunk.stages[i].dim] = true;
        fixed[stage.dim] = true;
    } else {
        // Collected so far: ranks that match me on the dimensions not widened yet.
        std::fill(fixed.begin(), fixed.end(), true);
        for (int i = 0; i < s; ++i)
            if (!phase_info(chunk.stages[i].phase).narrows) fixed[chunk.stages[i].dim] = false;
    }
    std::vector<int> free;
    for (int d = 0; d < topo.num_dims(); ++d)
        if (!fixed[d] && topo.dim(d).peers > 1) free.push_back(d);
    return free;
}

// One-vector pieces sit in the chunk's narrowing order, first dimension most significant, and
// the free dimensions of every block are those after the stage's dimension in that order:
// a block is then one run of consecutive pieces, from the rank with every free coordinate
// 0 to the rank with every free coordinate at its maximum. Found in O(dimensions).
bool is_suffix_of_order(const std::vector<int> &order, int dim, const std::vector<int> &free) {
    auto at = std::find(order.begin(), order.end(), dim);
    if (at == order.end() || static_cast<size_t>(order.end() - at - 1) != free.size()) return false;
    // An order names each dimension once, and free_dims lists them ascending.
    return std::all_of(at + 1, order.end(),
                       [&](int d) { return std::binary_search(free.begin(), free.end(), d); });
}

ByteRange run_of_pieces(const Topology &topo, int base, const std::vector<int> &free,
                        const PieceLayout &layout, int chunk) {
    int lo = base, hi = base;
    for (int d : free) {
        lo = topo.with_coord(lo, d, 0);
        hi = topo.with_coord(hi, d, topo.dim(d).peers - 1);
    }
    const ByteRange first = layout.piece(chunk, lo), last = layout.piece(chunk, hi);
    return {first.offset, last.offset + last.length - first.offset};
}

// Whether `rank` is in the group of `cast`: it matches the source on every other dimension.
bool in_group(const Topology &topo, const GroupCast &cast, int rank) {
    return topo.with_coord(rank, cast.dim, topo.coord(cast.source, cast.dim)) == cast.source;
}

// This rank's op for stage s of chunk k, its ranges not yet set.
PlanOp stage_op(const Topology &topo, int rank, const ChunkSchedule &chunk, int k, int s) {
    const Stage &stage = chunk.stages[s];
    PlanOp op;
    op.chunk = k;
    op.stage = s;
    op.dim = stage.dim;
    op.phase = stage.phase;
    op.my_block = topo.coord(rank, stage.dim);
    return op;
}

// This rank's op for stage s of chunk k (a group cast its group takes part in), its bytes
// elements [start, start + count) of the vector: block j, target j's share; the source's
// and every other peer's blocks empty.
PlanOp cast_op(const Topology &topo, const PlanRequest &req, const ChunkSchedule &chunk, int k,
               int s, uint64_t start, uint64_t count) {
    const Stage &stage = chunk.stages[s];
    const GroupCast &cast = chunk.tree[stage.cast];
    PlanOp op = stage_op(topo, req.rank, chunk, k, s);
    op.root_block = topo.coord(cast.source, stage.dim);
    for (int v : cast.targets) op.targets.push_back(topo.coord(v, stage.dim));
    op.idle = req.rank != cast.source &&
              std::find(cast.targets.begin(), cast.targets.end(), req.rank) == cast.targets.end();
    const uint64_t es = req.element_size, parts = op.targets.size();
    op.block_begin.push_back(0);
    for (int j = 0; j < topo.dim(stage.dim).peers; ++j) {
        const auto at = std::find(op.targets.begin(), op.targets.end(), j);
        if (!op.idle && at != op.targets.end()) {
            const uint64_t t = static_cast<uint64_t>(at - op.targets.begin());
            const uint64_t n = part_size(count, parts, t);
            if (n > 0) op.ranges.push_back({(start + part_offset(count, parts, t)) * es, n * es});
        }
        op.block_begin.push_back(static_cast<uint32_t>(op.ranges.size()));
    }
    return op;
}

// A rooted collective's ops (plan.h, "Rooted stages"): every chunk's casts whose group holds
// this rank, in the chunk's stage order, each after this rank's previous one of the chunk.
void compile_casts(const Topology &topo, const PlanRequest &req, const Ordering &order,
                   Plan &plan) {
    const uint64_t count = req.block_counts.at(0);
    const uint64_t chunks = plan.schedule.size();
    std::vector<std::vector<int>> op_of(chunks);
    for (uint64_t k = 0; k < chunks; ++k) {
        const ChunkSchedule &chunk = plan.schedule[k];
        op_of[k].assign(chunk.stages.size(), -1);
        int previous = -1;
        for (int s = 0; s < static_cast<int>(chunk.stages.size()); ++s) {
            if (!in_group(topo, chunk.tree[chunk.stages[s].cast], req.rank)) continue;
            PlanOp op = cast_op(topo, req, chunk, int(k), s, part_offset(count, chunks, k),
                                part_size(count, chunks, k));
            op.previous = previous;
            previous = op_of[k][s] = static_cast<int>(plan.ops.size());
            plan.ops.push_back(std::move(op));
        }
    }
    for (int d = 0; d < topo.num_dims(); ++d)
        for (const StageRef &ref : order.dim_order[d])
            if (op_of[ref.chunk][ref.stage] >= 0)
                plan.dim_queue[d].push_back(op_of[ref.chunk][ref.stage]);
}

} // namespace

std::vector<double> chunk_bytes(const PlanRequest &req, int chunks) {
    std::vector<double> bytes(chunks);
    for (int k = 0; k < chunks; ++k) {
        uint64_t elements = 0;
        if (collective_info(req.collective).one_vector)
            elements = part_size(req.block_counts.at(0), chunks, k);
        else
            for (uint64_t c : req.block_counts) elements += part_size(c, chunks, k);
        bytes[k] = static_cast<double>(elements * req.element_size);
    }
    return bytes;
}

PieceLayout::PieceLayout(const Topology &topo, const PlanRequest &req,
                         const std::vector<ChunkSchedule> &schedule)
    : topo_(topo), req_(req), chunks_(schedule.size()) {
    if (collective_info(req.collective).one_vector) {
        const uint64_t count = req.block_counts.at(0);
        const uint64_t n = static_cast<uint64_t>(topo.size());
        for (size_t k = 0; k < schedule.size(); ++k) {
            const uint64_t len = part_size(count, chunks_, k);
            parts_.push_back(
                {narrowing_order(schedule[k]), part_offset(count, chunks_, k), len / n, len % n});
        }
        for (int r = 0; r < topo.size(); ++r)
            for (int d = 0; d < topo.num_dims(); ++d) coords_.push_back(topo.coord(r, d));
        return;
    }
    uint64_t packed = 0;
    for (size_t r = 0; r < req.block_counts.size(); ++r) {
        displs_.push_back(req.block_displs.empty() ? packed : req.block_displs.at(r));
        packed += req.block_counts[r];
    }
}

ByteRange PieceLayout::piece(int chunk, int rank) const {
    const uint64_t es = req_.element_size;
    if (collective_info(req_.collective).one_vector) {
        // The chunk's part of the vector, cut into one piece per rank, ranks in the
        // mixed-radix order of the chunk's RS order (first dimension most significant):
        // the blocks of every stage of the chunk are then contiguous.
        const ChunkPart &part = parts_[chunk];
        const int *coord = &coords_[static_cast<size_t>(rank) * topo_.num_dims()];
        uint64_t p = 0;
        for (int d : part.order) p = p * topo_.dim(d).peers + coord[d];
        const uint64_t offset = p * part.base + std::min(p, part.extra);
        return {(part.start + offset) * es, (part.base + (p < part.extra ? 1 : 0)) * es};
    }
    // The chunk's part of the rank's own block.
    const uint64_t count = req_.block_counts.at(rank);
    return {(displs_[rank] + part_offset(count, chunks_, chunk)) * es,
            part_size(count, chunks_, chunk) * es};
}

std::vector<std::vector<ByteRange>> piece_layout(const Topology &topo, const PlanRequest &req,
                                                 const std::vector<ChunkSchedule> &schedule) {
    const PieceLayout layout(topo, req, schedule);
    std::vector<std::vector<ByteRange>> pieces(schedule.size(),
                                               std::vector<ByteRange>(topo.size()));
    for (size_t k = 0; k < schedule.size(); ++k)
        for (int r = 0; r < topo.size(); ++r) pieces[k][r] = layout.piece(static_cast<int>(k), r);
    return pieces;
}

Plan compile_plan(const Topology &topo, const PlanRequest &req) {
    Plan plan;
    plan.collective = req.collective;
    plan.work_bytes = total_elements(req) * req.element_size;
    plan.dim_queue.resize(topo.num_dims());
    if (plan.work_bytes == 0) return plan;

    Prediction chosen = predict_plan(topo, req);
    const int chunks = static_cast<int>(chosen.schedule.size());
    plan.carried_load = carried_after(chosen, req);
    plan.schedule = std::move(chosen.schedule);
    const Ordering &order = chosen.ordering;
    for (const Dimension &d : chosen.topology.dims()) plan.algorithms.push_back(d.algorithm);
    plan.predicted_time = order.makespan;
    plan.busy = order.busy;

    if (collective_info(req.collective).rooted) {
        compile_casts(topo, req, order, plan);
        return plan;
    }
    const PieceLayout layout(topo, req, plan.schedule);
    std::vector<int> first_op(chunks);
    plan.ops.reserve(chunks * plan.schedule.front().stages.size());
    std::vector<ByteRange> block; // one block's ranges, reused
    for (int k = 0; k < chunks; ++k) {
        first_op[k] = static_cast<int>(plan.ops.size());
        const ChunkSchedule &chunk = plan.schedule[k];
        const std::vector<int> order = narrowing_order(chunk);
        for (int s = 0; s < static_cast<int>(chunk.stages.size()); ++s) {
            const Stage &stage = chunk.stages[s];
            PlanOp op = stage_op(topo, req.rank, chunk, k, s);
            op.previous = s ? static_cast<int>(plan.ops.size()) - 1 : -1;
            const std::vector<int> free = free_dims(topo, chunk, s);
            const bool contiguous = collective_info(req.collective).one_vector &&
                                    is_suffix_of_order(order, stage.dim, free);
            op.block_begin.push_back(0);
            for (int j = 0; j < topo.dim(stage.dim).peers; ++j) {
                const int base = topo.with_coord(req.rank, stage.dim, j);
                block.clear();
                if (contiguous)
                    block.push_back(run_of_pieces(topo, base, free, layout, k));
                else
                    for_each_rank(topo, base, free,
                                  [&](int r) { block.push_back(layout.piece(k, r)); });
                coalesce(block);
                op.ranges.insert(op.ranges.end(), block.begin(), block.end());
                op.block_begin.push_back(static_cast<uint32_t>(op.ranges.size()));
            }
            plan.ops.push_back(std::move(op));
        }
    }
    for (int d = 0; d < topo.num_dims(); ++d)
        for (const StageRef &ref : order.dim_order[d])
            plan.dim_queue[d].push_back(first_op[ref.chunk] + ref.stage);
    return plan;
}

} // namespace themis
