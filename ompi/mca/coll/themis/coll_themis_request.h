// coll_themis_request.h: MPI requests of the nonblocking collectives themis runs.
//
// A nonblocking call returns at once with an ompi_request_t; the work behind it (a
// PendingCall) advances from a callback registered with opal_progress, so MPI_Test,
// MPI_Wait and every other call that polls Open MPI's progress loop complete it; no
// helper thread. Completion runs in that callback: the call's results are in the user's
// buffers before the request is marked complete.
#pragma once

#include "coll_themis_prelude.h"

#include "ompi/request/request.h"

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace themis {

class PendingCall {
  public:
    virtual ~PendingCall() = default;
    // Advances the call; true once its results are in the user's buffers. May throw:
    // the request then completes with an error.
    virtual bool progress() = 0;
};

// A call that failed before it was started (its error said, or `why` says it): its
// request completes at the next progress, with that error.
class FinishedCall : public PendingCall {
  public:
    explicit FinishedCall(int rc, std::string why = "the collective failed (said above)")
        : rc_(rc), why_(std::move(why)) {}
    bool progress() override {
        if (rc_ != OMPI_SUCCESS) throw std::runtime_error(why_);
        return true;
    }

  private:
    int rc_;
    std::string why_;
};

// The number of the progress callback's pass under way on this thread; 0 outside it.
uint64_t progress_pass();

// Hands `call` to the progress loop and returns its request in *request. A request that
// fails reports to `comm`'s error handler (the call's communicator).
int start_request(std::unique_ptr<PendingCall> call, ompi_communicator_t *comm,
                  ompi_request_t **request);

// A persistent request (MPIX_*_init): inactive until MPI_Start, which calls `start` for
// this run's PendingCall and hands it to the progress loop like a nonblocking call; after
// completion it is inactive again, until the next MPI_Start or MPI_Request_free.
using Starter = std::function<std::unique_ptr<PendingCall>()>;
int persistent_request(Starter start, ompi_communicator_t *comm, ompi_request_t **request);

} // namespace themis
