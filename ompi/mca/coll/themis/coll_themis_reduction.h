// coll_themis_reduction.h: how a reduction of one vector (MPI_Allreduce, MPI_Reduce) is
// prepared for the engine, on host and on device buffers.
//
// The result is built in place in rbuf (after copying sbuf there): every chunk is
// reduce-scattered, then all-gathered (All-Reduce) or gathered to the root (Reduce), over
// the dimensions in its own order. A datatype with gaps (e.g. MPI_SHORT_INT,
// MPI_DOUBLE_INT) runs in a temporary buffer, so themis never writes into rbuf's gaps or
// past the end of the user's buffer. A rank that gets no result (a Reduce's others: rbuf
// null) runs in a temporary copy of its input.
#pragma once

#include "coll_themis_prelude.h"

#include "coll_themis_call.h"
#include "coll_themis_context.h"
#include "coll_themis_entry.h"
#include "coll_themis_op.h"

namespace themis {

// MPI_Allreduce's arguments, and MPI_Reduce's but the root.
struct VectorReductionArgs {
    const void *sbuf;
    void *rbuf;
    int count;
    ompi_datatype_t *dtype;
    ompi_op_t *op;
};

struct ReduceArgs : VectorReductionArgs {
    int root;
};

// Where a Reduce's result goes on this rank: rbuf at the root, nowhere elsewhere.
inline void *reduce_result(const Context &ctx, const ReduceArgs &a) {
    return ctx.layout().rank_at[ctx.position()] == a.root ? a.rbuf : nullptr;
}

// What the adapters of the one-vector reductions share (coll_themis_entry.h): which types and
// ops themis takes, and the bytes a call moves.
struct VectorReduction {
    using Args = VectorReductionArgs;
    static const char *unsupported(const Args &a, ompi_communicator_t *) {
        return reduction_unsupported(a.dtype, a.op);
    }
    static size_t bytes(const Args &a, ompi_communicator_t *) {
        return type_bytes(a.dtype, static_cast<size_t>(a.count));
    }
};

// Prepares `call` (blank) on host buffers; `rbuf` null: no result on this rank. The request's
// root, if any, is the caller's.
void prepare_vector_reduction(Context &ctx, Collective coll, const void *sbuf, void *rbuf,
                              int count, ompi_datatype_t *dtype, ompi_op_t *op, Call &call);

// The request: one block of `count` elements of `extent` bytes.
void plan_vector(Context &ctx, Collective coll, Call &call, size_t extent, int count);

} // namespace themis
