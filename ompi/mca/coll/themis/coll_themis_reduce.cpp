// coll_themis_reduce.cpp: MPI_Reduce, a one-vector reduction whose result the root alone
// gets (coll_themis_reduction.h): every chunk is reduce-scattered over the dimensions in its
// own order, then gathered to the root over them reversed. The other ranks reduce in a
// temporary copy of their input (their rbuf is not significant).
#include "coll_themis_entry.h"
#include "coll_themis_op.h"
#include "coll_themis_reduction.h"

using namespace themis;

namespace {

// MPI_Reduce's row of the collectives' table (coll_themis_entry.h).
struct Reduce : VectorReduction {
    struct Args : VectorReduction::Args {
        int root;
    };
    static constexpr int slot = THEMIS_COLL_REDUCE;
    // Where this rank's result goes: rbuf at the root, nowhere elsewhere.
    static void *result(const Context &ctx, const Args &a) {
        return ctx.layout().rank_at[ctx.position()] == a.root ? a.rbuf : nullptr;
    }
    static void prepare(Context &ctx, const Args &a, Call &call) {
        prepare_vector_reduction(ctx, Collective::Reduce, a.sbuf, result(ctx, a), a.count, a.dtype,
                                 a.op, call);
        call.request.root = ctx.layout().position_of[a.root];
    }
#if THEMIS_HAVE_CUDA
    static void prepare_device(Context &ctx, const Args &a, Call &call) {
        prepare_vector_reduction_device(ctx, Collective::Reduce, a.sbuf, result(ctx, a), a.count,
                                        a.dtype, a.op, call);
        call.request.root = ctx.layout().position_of[a.root];
    }
    static cuda::HostCopies host_copies(const Args &a, ompi_communicator_t *comm) {
        // Elsewhere than at the root rbuf is not significant (and may be anything).
        const bool root = ompi_comm_rank(comm) == a.root;
        return vector_reduction_copies(a.sbuf, root ? a.rbuf : nullptr, a.count, a.dtype);
    }
#endif
    static int below(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                     ompi_request_t **request) {
        return request ? b->previous_ireduce(s, r, a.count, a.dtype, a.op, a.root, b->comm, request,
                                             b->previous_ireduce_module)
                       : b->previous_reduce(s, r, a.count, a.dtype, a.op, a.root, b->comm,
                                            b->previous_reduce_module);
    }
    static int below_init(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                          ompi_info_t *info, ompi_request_t **request) {
        return b->previous_reduce_init(s, r, a.count, a.dtype, a.op, a.root, b->comm, info, request,
                                       b->previous_reduce_init_module);
    }
    static std::vector<opal_object_t *> objects(const Args &a, ompi_communicator_t *comm) {
        return themis::objects(comm, a.dtype, a.op);
    }
};

} // namespace

THEMIS_ENTRY_POINTS(reduce, Reduce, (Reduce::Args{sbuf, rbuf, count, dtype, op, root}))
