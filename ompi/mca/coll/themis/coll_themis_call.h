// coll_themis_call.h: a collective call in flight, the one type the glue has for it.
//
// Every call an entry point takes on (coll_themis_entry.h) is a Call, blocking or not,
// from the moment it is taken to its completion, in one of these states:
//
//   on themis  its collective's adapter prepared it (request, work buffer, reducer, how
//              the results come out) and its context runs it on the communicator's engine
//              (Context::run for a blocking call, Context::start for the others)
//   below      the module below runs it on a request of its own (a declined communicator,
//              or device buffers through host copies); complete with that request
//   finished   nothing left to run: its result (a failure said, or nothing to move)
//   held       a nonblocking call that came while its communicator's set-up runs; when the
//              set-up ends it is launched into one of the states above, in MPI order
//              (coll_themis_setup_task.h)
//   waiting    prepared for themis, started while the agreement of the rates' revision is in
//              flight: on themis when it completes, in MPI order (coll_themis_refine.h)
//
// A blocking call runs to its end inside the entry point; the others are handed to the
// progress loop, which completes their request (coll_themis_request.h). A blocking call
// on themis comes from its context's pool (Context::lease): its request, reducer,
// execution and lists keep their room from one call to the next, so a repeated call
// allocates nothing.
#pragma once

#include "coll_themis_prelude.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ompi/communicator/communicator.h"
#include "ompi/request/request.h"

#include "coll_themis_op.h"
#include "engine.h"
#include "plan.h"

namespace themis {

class Context;

// Results that come out of a temporary work buffer once a call on themis is complete:
// `count` elements of `dtype` from `from` to `to` (nothing when count is 0).
struct CopyOut {
    ompi_datatype_t *dtype = nullptr;
    size_t count = 0;
    void *to = nullptr;
    const char *from = nullptr;
};

// A temporary buffer of a call (its work buffer), given back to `memory` once the call is
// complete or abandoned.
struct Temporary {
    Memory *memory = nullptr;
    char *buf = nullptr;
    size_t bytes = 0;
};

class Call {
  public:
    // The default message of a call that finished with an error said elsewhere.
    static constexpr const char *kSaidAbove = "the collective failed (said above)";

    Call() = default;
    ~Call();
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;

    // ---- On themis: what the collective's adapter prepares before the context runs it.
    PlanRequest request; // the settings from Context::plan_request, the sizes from the adapter
    char *work = nullptr;
    RunOptions options; // device buffers: device temporaries or staging hooks
    CopyOut copy_out;   // results out of a temporary work buffer
    Temporary temp;     // given back after copy_out
    // Room an adapter may use from call to call (reduce_scatter's displacements).
    std::vector<uint64_t> scratch;
    // The reducer: the op (ompi_op_reduce), none (data moves only), or one of the call's
    // own (device kernels).
    void reduce_with(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent);
    void reduce_nothing();
    void reduce_with(std::unique_ptr<Reducer> reducer);
    Reducer &reducer() { return *reducer_; }
    // Adds a step after the results are out (copy_out, temp) and the steps added before it
    // (device copies, host views); it may allocate, the host path adds none.
    void then(std::function<void()> step);

    // ---- The other states.
    // The module below's request; `persistent`: left inactive when complete (the module
    // below's persistent request, started again later), else freed.
    void below(ompi_request_t *inner, bool persistent = false);
    // Complete at its next progress, with `rc` (an error throws `why`).
    void finished(int rc, std::string why = kSaidAbove);
    // Held (and `comm` kept) until launch(), which fills the call in with `launch`.
    void hold(std::function<void(Call &)> launch, ompi_communicator_t *comm);
    // The set-up ended: the held call becomes what `launch` makes of it (finished with the
    // error, if it throws). Another thread may progress the call meanwhile.
    void launch();

    // Keeps `comm` (and with it its engine) until the call is complete, even if the user
    // frees it meanwhile (a nonblocking call); once per call.
    void retain(ompi_communicator_t *comm);
    // Advances the call; true once complete, its results in the user's buffers. Throws
    // when it failed.
    bool progress();
    // Back to a blank call: leaves the engine's queues if it was on them, and gives back
    // what it holds (buffers, the op, the communicator), in that order.
    void clear();

    // What the request that completes it needs (coll_themis_request.cpp).
    struct Tracking {
        ompi_request_t *request = nullptr;
        bool freed = false;           // MPI_Request_free came first
        void *cuda_context = nullptr; // CUDA builds: the context current where it started
    } tracking;

  private:
    friend class Context;
    enum class State { Blank, Held, Waiting, Themis, Below, Finished };
    // copy_out, temp, then the added steps: once.
    void results_out();

    State state_ = State::Blank;
    Reducer *reducer_ = nullptr;
    OpReducer op_reducer_;
    NoReducer no_reducer_;
    std::unique_ptr<Reducer> own_reducer_;
    std::function<void()> then_;
    ompi_communicator_t *retained_ = nullptr;
    // On themis (Context): where it runs, and its stage timings when traced.
    Context *context_ = nullptr;
    std::optional<Execution> execution_;
    std::vector<StageRun> runs_;
    bool traced_ = false;
    bool trace_written_ = false;
    // Below.
    ompi_request_t *inner_ = nullptr;
    bool persistent_ = false;
    // Finished.
    int rc_ = OMPI_SUCCESS;
    std::string why_;
    // Held: `held_` is set before the call is shared and never changes; `launched_` tells
    // the thread that progresses it that launch() has filled it in.
    bool held_ = false;
    std::atomic<bool> launched_{false};
    std::function<void(Call &)> launch_;
};

// Blank calls for a communicator's blocking calls, kept with their room: a call on themis
// returns to the pool when its lease ends, so that nothing is allocated once warm.
class CallPool {
  public:
    class Lease {
      public:
        Lease(CallPool &pool, std::unique_ptr<Call> call) : pool_(pool), call_(std::move(call)) {}
        ~Lease() { pool_.back(std::move(call_)); }
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        Call &operator*() const { return *call_; }
        Call *operator->() const { return call_.get(); }

      private:
        CallPool &pool_;
        std::unique_ptr<Call> call_;
    };
    // A blank call, from the pool if it holds one; any thread.
    Lease lease();

  private:
    void back(std::unique_ptr<Call> call);

    std::mutex lock_;
    std::vector<std::unique_ptr<Call>> calls_;
};

} // namespace themis
