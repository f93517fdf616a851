// coll_themis_reduce.cpp: MPI_Reduce, a one-vector reduction whose result the root alone
// gets (coll_themis_reduction.h): every chunk is reduce-scattered over the dimensions in its
// own order, then gathered to the root over them reversed. The other ranks reduce in a
// temporary copy of their input (their rbuf is not significant).
#include "coll_themis_entry.h"
#include "coll_themis_op.h"
#include "coll_themis_reduction.h"
#include "cuda/collectives.h"

using namespace themis;

namespace {

// MPI_Reduce's row of the collectives' table (coll_themis_entry.h).
struct Reduce : VectorReduction {
    using Args = ReduceArgs;
    static constexpr int slot = THEMIS_COLL_REDUCE;
    static void prepare(Context &ctx, const Args &a, Call &call) {
        prepare_vector_reduction(ctx, Collective::Reduce, a.sbuf, reduce_result(ctx, a), a.count,
                                 a.dtype, a.op, call);
        call.request.root = ctx.layout().position_of[a.root];
    }
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
