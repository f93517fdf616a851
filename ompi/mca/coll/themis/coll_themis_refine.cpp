// coll_themis_refine.cpp: the rate refinement's glue (coll_themis_refine.h).
#include "coll_themis_refine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "coll_themis_context.h"
#include "coll_themis_log.h"
#include "coll_themis_params.h"
#include "ompi/op/op.h"

namespace themis {

void RefineQuestion::ask(Agreement &agreement) {
    same_calls_ = agreement.same(uint64_t(params().refine_calls));
    uint64_t threshold = 0;
    static_assert(sizeof threshold == sizeof params().refine_threshold, "a double's bits");
    std::memcpy(&threshold, &params().refine_threshold, sizeof threshold);
    same_threshold_ = agreement.same(threshold);
}

std::unique_ptr<RateRefiner> RefineQuestion::settle(const Agreement &agreement,
                                                    const CalibratedTopology &rates,
                                                    std::optional<LogEvent> &said) const {
    if (!agreement.holds(same_calls_) || !agreement.holds(same_threshold_)) {
        said = LogEvent("mismatch");
        said->add("param", agreement.holds(same_calls_) ? "coll_themis_refine_threshold"
                                                        : "coll_themis_refine_calls")
            .add("fallback", "no_refinement");
        return nullptr;
    }
    return make_refiner(rates);
}

std::unique_ptr<RateRefiner> make_refiner(const CalibratedTopology &rates) {
    return make_rate_refiner(rates.topology, rates.bandwidth_source, params().refine_calls,
                             params().refine_threshold);
}

void refine_rates(mca_coll_themis_module_t *m, Context &ctx) {
    const std::vector<double> &mine = ctx.rate_evidence();
    thread_local std::vector<double> sums; // its room kept: nothing allocated once warm
    sums.assign(mine.size(), 0.0);
    // A failed agreement revises nothing here; Open MPI's error handler has the last word.
    if (!agree_doubles(m, mine.data(), sums.data(), int(mine.size()), &ompi_mpi_op_sum.op))
        sums.assign(mine.size(), 0.0);
    ctx.revise_rates(sums);
}

ompi_request_t *start_refine_agreement(mca_coll_themis_module_t *m, const double *in, double *out,
                                       int n) {
    ompi_communicator_t *dup = m->context->dup;
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallreduce(in, out, n, &ompi_mpi_double.dt, &ompi_mpi_op_sum.op, dup,
                                     &request, dup->c_coll->coll_iallreduce_module) != OMPI_SUCCESS)
        return nullptr;
    return request;
}

} // namespace themis
