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
#include "cuda/buffers.h"
#include "coll_themis_entry.h"
#include "coll_themis_op.h"
#if THEMIS_HAVE_CUDA
#include "cuda/host_fallback.h"
#endif

namespace themis {

// What the adapters of the one-vector reductions share (coll_themis_entry.h): their arguments
// but the root, which types and ops themis takes, and the bytes a call moves.
struct VectorReduction {
    struct Args {
        const void *sbuf;
        void *rbuf;
        int count;
        ompi_datatype_t *dtype;
        ompi_op_t *op;
    };
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

#if THEMIS_HAVE_CUDA
// The same on buffers that may be device memory (cuda/buffers.h): predefined datatypes
// only (reduction_unsupported).
void prepare_vector_reduction_device(Context &ctx, Collective coll, const void *sbuf, void *rbuf,
                                     int count, ompi_datatype_t *dtype, ompi_op_t *op, Call &call);

// Host copies of the buffers for the module below.
cuda::HostCopies vector_reduction_copies(const void *sbuf, void *rbuf, int count,
                                         ompi_datatype_t *dtype);
#endif

} // namespace themis
