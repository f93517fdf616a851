// coll_themis_settings.cpp: a communicator's planning settings (coll_themis_settings.h).
#include "coll_themis_settings.h"

#include <atomic>

#include "coll_themis.h"
#include "coll_themis_params.h"

namespace themis {

namespace {

// Bumped by every call of the info keys' subscription callback (info_generation()).
std::atomic<uint64_t> info_changes{0};

} // namespace

uint64_t info_generation() { return info_changes.load(std::memory_order_acquire); }

std::string info(ompi_communicator_t *comm, const char *key) {
    char value[32];
    return themis_info_get(comm->super.s_info, key, value, sizeof value) ? value : "";
}

int info_choice(ompi_communicator_t *comm, const char *key, int parameter) {
    const mca_base_var_enum_value_t *value =
        mca_coll_themis_info_value(key, info(comm, key).c_str());
    return value ? value->value : parameter;
}

void PlanSettings::resolve(ompi_communicator_t *comm, int position) {
    comm_ = comm;
    position_ = position;
    // Noted first: an info key set while this runs is resolved again at the next call.
    info_generation_ = info_generation();
    PlanRequest &req = request_;
    // The planner (src/planner.h) picks the count when chunks is 0 (auto, the default);
    // chunks no smaller than min_chunk_bytes either way, so small messages are not cut
    // to pieces.
    req.chunks = params().chunks;
    req.min_chunk_bytes = params().min_chunk_bytes;
    // MPI_Comm_set_info / MPI_Comm_dup_with_info may choose the policy per communicator.
    req.scheduler.policy =
        info_choice(comm, "themis_policy", params().policy) == THEMIS_POLICY_BASELINE
            ? Policy::Baseline
            : Policy::Themis;
    req.scheduler.load_model =
        params().load_model == THEMIS_LOAD_REFERENCE ? LoadModel::Reference : LoadModel::Latency;
    req.scheduler.threshold = params().threshold;
    req.ordering.intra =
        params().intra_policy == THEMIS_INTRA_FIFO ? IntraPolicy::Fifo : IntraPolicy::Scf;
    req.ordering.max_active = params().max_active;
    req.ordering.max_active_bytes = static_cast<double>(params().max_active_bytes);
    req.rank = position;
    carry_load_ = params().carry_load;
    verbose_ = params().verbose;
}

void PlanSettings::fill(PlanRequest &req, Collective coll, uint64_t element_size) {
    if (info_generation_ != info_generation()) resolve(comm_, position_);
    req = request_; // its lists empty: req's keep their room
    req.collective = coll;
    req.element_size = element_size;
}

} // namespace themis

extern "C" void mca_coll_themis_info_changed(void) {
    themis::info_changes.fetch_add(1, std::memory_order_acq_rel);
}
