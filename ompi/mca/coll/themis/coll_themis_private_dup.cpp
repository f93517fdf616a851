// coll_themis_private_dup.cpp: the set-up's private duplicate (coll_themis_private_dup.h).
#include "coll_themis_private_dup.h"

#include <cstdio>
#include <stdexcept>

#include "coll_themis_compat.h"
#include "opal/util/info.h"

namespace themis {
namespace {

// The private duplicate's context id is agreed over the parent by point-to-point messages
// with a tag of its own (Open MPI's group mode, as MPI_Comm_create_group): negative, as
// collectives' tags are, far below where the collective components' tags run (libnbc's
// count down from -27 by one per call on a communicator), and within the 24 bits pml/ucx
// carries. One per parent: Open MPI orders concurrent id agreements by a priority made from
// the tag (sign-extended over the parent's id: the tag alone), so set-ups of different
// communicators must not share one, or rounds of two agreements interleave and fail.
constexpr int kSetupTagBase = -(1 << 22);
constexpr uint32_t kSetupTagSpan = 1 << 16;
int setup_tag(ompi_communicator_t *parent) {
    return kSetupTagBase - int(themis_comm_id(parent) % kSetupTagSpan);
}

} // namespace

ompi_communicator_t *private_duplicate(ompi_communicator_t *comm) {
    ompi_communicator_t *dup = nullptr;
    if (themis_comm_set_intra(&dup, comm) != OMPI_SUCCESS)
        throw std::runtime_error("making the private communicator failed");
    int tag = setup_tag(comm);
    ompi_request_t *request = nullptr;
    auto wait = [&](int rc, const char *what) {
        if (rc == OMPI_SUCCESS) {
            while (!REQUEST_COMPLETE(request)) opal_progress();
            rc = request->req_status.MPI_ERROR;
            ompi_comm_request_return(reinterpret_cast<ompi_comm_request_t *>(request));
        }
        if (rc != OMPI_SUCCESS) throw std::runtime_error(what);
    };
    try {
        wait(ompi_comm_nextcid_nb(dup, comm, nullptr, &tag, nullptr, false, OMPI_COMM_CID_GROUP,
                                  &request),
             "agreeing on the private communicator's id failed");
    } catch (...) {
        OBJ_RELEASE(dup);
        throw;
    }
    snprintf(dup->c_name, MPI_MAX_OBJECT_NAME, "themis private %u of %u", themis_comm_id(dup),
             themis_comm_id(comm));
    // Its collectives are the module below's: they never come back to themis.
    if (dup->super.s_info == nullptr) dup->super.s_info = OBJ_NEW(opal_info_t);
    opal_info_set(dup->super.s_info, "ompi_comm_coll_preference", "^themis");
    wait(ompi_comm_activate_nb(&dup, comm, nullptr, &tag, nullptr, false, OMPI_COMM_CID_GROUP,
                               &request),
         "activating the private communicator failed");
    return dup;
}

} // namespace themis
