// coll_themis_request.cpp: requests completed from Open MPI's progress loop.
#include "coll_themis_request.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "coll_themis_context.h"
#include "cuda/buffers.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "opal/runtime/opal_progress.h"

namespace themis {

namespace {

// Every call in flight in this process, in start order. Under MPI_THREAD_MULTIPLE every
// thread that waits runs Open MPI's progress loop, and threads start calls at once: the
// list is touched only under calls_mutex.
std::mutex calls_mutex;
std::vector<std::unique_ptr<Call>> &outstanding() {
    static std::vector<std::unique_ptr<Call>> calls;
    return calls;
}

// Persistent requests and what starts each of their runs (under starters_mutex).
std::mutex starters_mutex;
std::map<ompi_request_t *, Starter> &starters() {
    static std::map<ompi_request_t *, Starter> all;
    return all;
}

void release(ompi_request_t *request) {
    {
        std::lock_guard<std::mutex> lock(starters_mutex);
        starters().erase(request);
    }
    OMPI_REQUEST_FINI(request);
    OBJ_RELEASE(request);
}

// req_free: a request may be freed before it completes (MPI_Request_free); the call still
// runs to its end, and the request goes with it.
int free_request(ompi_request_t **request) {
    if (!REQUEST_COMPLETE(*request)) {
        std::lock_guard<std::mutex> lock(calls_mutex);
        for (const std::unique_ptr<Call> &call : outstanding())
            if (call->tracking.request == *request) call->tracking.freed = true;
    } else {
        release(*request);
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

void complete(const Call::Tracking &t, int rc) {
    t.request->req_status.MPI_ERROR = rc;
    // Also for a freed request: completion runs what MPI attached to it (the user op and
    // datatypes it retained, below).
    ompi_request_complete(t.request, true);
    if (t.freed) release(t.request);
}

// The progress callback. Stages test their messages without re-entering the progress
// loop, but a nested call (a finish that polls it) must not walk the list twice; one
// thread walks it at a time, the others' progress returns at once.
thread_local uint64_t current_pass = 0;

int progress_calls() {
    static uint64_t passes = 0; // under calls_mutex
    thread_local bool inside = false;
    if (inside) return 0;
    std::unique_lock<std::mutex> lock(calls_mutex, std::try_to_lock);
    if (!lock.owns_lock() || outstanding().empty()) return 0;
    inside = true;
    current_pass = ++passes;
    int completed = 0;
    auto &calls = outstanding();
    for (size_t i = 0; i < calls.size();) {
        int rc = OMPI_SUCCESS;
        bool done = false;
        const Call::Tracking t = calls[i]->tracking;
        {
            // Its device work runs in the context it started in, whichever thread polls;
            // so does its release (device and pinned memory are freed in a context).
            cuda::ContextScope scope(t.cuda_context);
            try {
                done = calls[i]->progress();
            } catch (const std::exception &e) {
                rc = report_failure("a nonblocking collective", e);
                done = true;
            }
            // Its temporaries and references go before the request completes.
            if (done) calls[i].reset();
        }
        if (!done) {
            ++i;
            continue;
        }
        calls.erase(calls.begin() + static_cast<long>(i));
        complete(t, rc);
        ++completed;
    }
    current_pass = 0;
    inside = false;
    return completed;
}

// A collective's request must be Open MPI's nonblocking-collective request: the MPI layer
// (MPI_Iallreduce, MPIX_Allreduce_init, ...) casts it to ompi_coll_base_nbc_request_t to
// retain a user op or derived datatype until it completes or is freed, writing past a
// plain ompi_request_t.
ompi_request_t *new_request(ompi_communicator_t *comm, bool persistent = false) {
    auto *nbc = OBJ_NEW(ompi_coll_base_nbc_request_t);
    if (nbc == nullptr) throw std::bad_alloc();
    ompi_request_t *request = &nbc->super;
    OMPI_REQUEST_INIT(request, persistent);
    request->req_state = persistent ? OMPI_REQUEST_INACTIVE : OMPI_REQUEST_ACTIVE;
    request->req_type = OMPI_REQUEST_COLL;
    // Where a failure is reported: Open MPI 5 invokes this communicator's error handler
    // (and needs one); 4.1 reports every failed collective request to MPI_COMM_WORLD.
    request->req_mpi_object.comm = comm;
    request->req_free = free_request;
    std::memset(&request->req_status, 0, sizeof request->req_status);
    return request;
}

bool registered = false; // the progress callback, from the first call to component close

// Hands a started call to the progress loop; it completes `request`.
void track(ompi_request_t *request, std::unique_ptr<Call> call) {
    call->tracking.request = request;
    call->tracking.cuda_context = cuda::current_context();
    std::lock_guard<std::mutex> lock(calls_mutex);
    // Registered once: an idle callback costs one test.
    if (!registered) {
        opal_progress_register(progress_calls);
        registered = true;
    }
    outstanding().push_back(std::move(call));
}

// req_start of a persistent request (MPI_Start, MPI_Startall): one run each.
int start_persistent(size_t count, ompi_request_t **requests) {
    for (size_t i = 0; i < count; ++i) {
        ompi_request_t *request = requests[i];
        request->req_state = OMPI_REQUEST_ACTIVE;
        request->req_complete = REQUEST_PENDING;
        std::memset(&request->req_status, 0, sizeof request->req_status);
        try {
            Starter start;
            {
                std::lock_guard<std::mutex> lock(starters_mutex);
                start = starters().at(request);
            }
            track(request, start());
        } catch (const std::exception &e) {
            request->req_status.MPI_ERROR =
                report_failure("MPI_Start of a persistent collective", e);
            ompi_request_complete(request, true);
        }
    }
    return OMPI_SUCCESS;
}

} // namespace

uint64_t progress_pass() { return current_pass; }

int start_request(std::unique_ptr<Call> call, ompi_communicator_t *comm, ompi_request_t **request) {
    *request = new_request(comm);
    track(*request, std::move(call));
    return OMPI_SUCCESS;
}

int persistent_request(Starter start, ompi_communicator_t *comm, ompi_request_t **request) {
    *request = new_request(comm, true);
    (*request)->req_start = start_persistent;
    std::lock_guard<std::mutex> lock(starters_mutex);
    starters()[*request] = std::move(start);
    return OMPI_SUCCESS;
}

} // namespace themis

extern "C" void mca_coll_themis_request_finalize(void) {
    // The component's code goes away after close: no callback may point into it.
    if (themis::registered) opal_progress_unregister(themis::progress_calls);
    themis::registered = false;
}
