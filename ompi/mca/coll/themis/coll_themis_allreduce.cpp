// coll_themis_allreduce.cpp: MPI_Allreduce, a one-vector reduction whose result every rank
// gets (coll_themis_reduction.h).
#include "coll_themis_entry.h"
#include "coll_themis_op.h"
#include "coll_themis_reduction.h"
#include "cuda/collectives.h"

using namespace themis;

namespace {

// MPI_Allreduce's row of the collectives' table (coll_themis_entry.h).
struct Allreduce : VectorReduction {
    static constexpr int slot = THEMIS_COLL_ALLREDUCE;
    static void prepare(Context &ctx, const Args &a, Call &call) {
        prepare_vector_reduction(ctx, Collective::AllReduce, a.sbuf, a.rbuf, a.count, a.dtype, a.op,
                                 call);
    }
    static int below(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                     ompi_request_t **request) {
        return request ? b->previous_iallreduce(s, r, a.count, a.dtype, a.op, b->comm, request,
                                                b->previous_iallreduce_module)
                       : b->previous_allreduce(s, r, a.count, a.dtype, a.op, b->comm,
                                               b->previous_allreduce_module);
    }
    static int below_init(mca_coll_themis_module_t *b, const Args &a, const void *s, void *r,
                          ompi_info_t *info, ompi_request_t **request) {
        return b->previous_allreduce_init(s, r, a.count, a.dtype, a.op, b->comm, info, request,
                                          b->previous_allreduce_init_module);
    }
    static std::vector<opal_object_t *> objects(const Args &a, ompi_communicator_t *comm) {
        return themis::objects(comm, a.dtype, a.op);
    }
};

} // namespace

THEMIS_ENTRY_POINTS(allreduce, Allreduce, (Allreduce::Args{sbuf, rbuf, count, dtype, op}))
