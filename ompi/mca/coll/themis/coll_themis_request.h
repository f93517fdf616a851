// coll_themis_request.h: MPI requests of the nonblocking collectives themis runs.
//
// A nonblocking call returns at once with an ompi_request_t; the call behind it (a Call,
// coll_themis_call.h) advances from a callback registered with opal_progress, so MPI_Test,
// MPI_Wait and every other call that polls Open MPI's progress loop complete it; no
// helper thread. Completion runs in that callback: the call's results are in the user's
// buffers before the request is marked complete.
#pragma once

#include "coll_themis_prelude.h"

#include "ompi/request/request.h"

#include <functional>
#include <memory>

#include "coll_themis_call.h"

namespace themis {

// The number of the progress callback's pass under way on this thread; 0 outside it.
uint64_t progress_pass();

// Hands `call` to the progress loop and returns its request in *request. A request that
// fails reports to `comm`'s error handler (the call's communicator).
int start_request(std::unique_ptr<Call> call, ompi_communicator_t *comm, ompi_request_t **request);

// A persistent request (MPIX_*_init): inactive until MPI_Start, which calls `start` for
// this run's Call and hands it to the progress loop like a nonblocking call; after
// completion it is inactive again, until the next MPI_Start or MPI_Request_free.
using Starter = std::function<std::unique_ptr<Call>()>;
int persistent_request(Starter start, ompi_communicator_t *comm, ompi_request_t **request);

} // namespace themis
