// coll_themis_entry.h: the pattern every collective entry point follows.
//
//   1. calls themis does not accelerate go to the previous module unchanged, at once;
//   2. the communicator's set-up starts on its first eligible call, blocking or not
//      (coll_themis_setup_task.h): a blocking call waits for it, a nonblocking or
//      persistent one returns at once and is held until it ends;
//   3. the collective runs on themis, or, if the communicator was declined, on the module
//      below (nonblocking and persistent calls on the private duplicate's, see
//      coll_themis_setup_task.h); a failure is reported with a help message.
//
// A collective is prepared (inputs in place, plan request, what completes it), then
// run to the end (blocking) or started and completed from the progress loop.
//
// With CUDA (coll_themis_cuda.h) each entry point first asks whether its buffers are
// device memory; if so the same decision is taken with a device-aware Prepared collective
// and `previous` on host copies (device_call below: the memory kind changes how this rank's
// bytes move, never whether themis runs). A nonblocking call on device buffers runs on
// the engine from the progress loop like one on host buffers.
#pragma once

#include "coll_themis_context.h"
#include "coll_themis_cuda.h"
#include "coll_themis_request.h"
#include "coll_themis_setup_task.h"
#include "coll_themis_test_hooks.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace themis {

// A collective ready for the engine.
struct Prepared {
    PlanRequest request;
    char *work = nullptr;
    std::unique_ptr<Reducer> reducer;
    RunOptions options;           // device buffers: device temporaries or staging hooks
    std::function<void()> finish; // once complete: results out, temporaries back (or empty)
    // Adds `step` after what finish does already.
    void then(std::function<void()> step) {
        finish = [first = std::move(finish), step = std::move(step)] {
            if (first) first();
            step();
        };
    }
};

inline void run_prepared(Context &ctx, Prepared p) {
    ctx.run(p.request, p.work, *p.reducer, p.options);
    if (p.finish) p.finish();
}

// A prepared collective in flight for a nonblocking call; it holds the communicator (and
// with it the engine) until complete, even if the user frees it meanwhile.
class EngineCall : public PendingCall {
  public:
    EngineCall(ompi_communicator_t *comm, Context &ctx, Prepared p)
        : comm_(comm), p_(std::move(p)) {
        OBJ_RETAIN(comm_);
        started_ = ctx.start(p_.request, p_.work, *p_.reducer, p_.options);
    }
    ~EngineCall() override {
        started_.reset();
        p_ = Prepared();
        OBJ_RELEASE(comm_);
    }
    bool progress() override {
        if (!started_->progress()) return false;
        if (p_.finish) {
            p_.finish();
            p_.finish = nullptr;
        }
        return true;
    }

  private:
    ompi_communicator_t *comm_;
    Prepared p_;
    std::unique_ptr<StartedRun> started_;
};

// The layer a declined communicator's eligible nonblocking and persistent calls go to:
// its private duplicate's, where there is one (coll_themis_setup_task.h).
inline mca_coll_themis_module_t *below_for_nonblocking(mca_coll_themis_module_t *m) {
    return m->context && m->context->fallback ? m->context->fallback : m;
}

inline void say_unsupported(const char *name, const char *unsupported) {
    opal_output_verbose(5, mca_coll_themis_component.output,
                        "coll:themis: %s to the previous module: %s", name, unsupported);
}

// The blocking form: `run(ctx)` on themis, or `previous(m)` hands the call down.
// `device_buffers`: the call's buffers are device memory (CUDA builds).
template <typename Run, typename Previous>
int run_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                    const char *name, const char *unsupported, Run run, Previous previous,
                    bool device_buffers = false) {
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    ++m->calls[collective];
    if (unsupported) {
        say_unsupported(name, unsupported);
        return previous(m);
    }
    begin_setup(m, comm, device_buffers);
    finish_setup(m);
    Context *ctx = context_of(m);
    if (ctx == nullptr) return previous(m);
    try {
        run(*ctx);
    } catch (const std::exception &e) {
        return report_failure(name, e);
    }
    ++m->accelerated[collective];
    return OMPI_SUCCESS;
}

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

// A call the module below runs on a request of its own: complete with it.
class BelowCall : public PendingCall {
  public:
    explicit BelowCall(ompi_request_t *inner) : inner_(inner) {}
    bool progress() override {
        if (!REQUEST_COMPLETE(inner_)) return false;
        const int rc = inner_->req_status.MPI_ERROR;
        ompi_request_free(&inner_);
        if (rc != OMPI_SUCCESS) throw std::runtime_error("the previous module's call failed");
        return true;
    }

  private:
    ompi_request_t *inner_;
};

// `previous(b, sbuf, rbuf, &request)`, the nonblocking form of layer `b`, as a call.
template <typename Previous> std::unique_ptr<PendingCall>
below_call(const Previous &previous, mca_coll_themis_module_t *b, const void *sbuf, void *rbuf) {
    ompi_request_t *inner = nullptr;
    const int rc = previous(b, sbuf, rbuf, &inner);
    if (rc != OMPI_SUCCESS)
        return std::make_unique<FinishedCall>(rc, "the previous module could not start the call");
    return std::make_unique<BelowCall>(inner);
}

// An eligible nonblocking call (or a persistent request's run): on themis, `on_themis(ctx)`
// gives the call in flight; declined, `on_below(b)` hands it to layer b. It starts the
// communicator's set-up if need be, and is held while that runs (coll_themis_setup_task.h).
template <typename OnThemis, typename OnBelow> std::unique_ptr<PendingCall>
nonblocking_call(mca_coll_themis_module_t *m, ompi_communicator_t *comm, int collective,
                 const char *name, bool device_buffers, OnThemis on_themis, OnBelow on_below) {
    begin_setup(m, comm, device_buffers);
    Launch launch = [=]() -> std::unique_ptr<PendingCall> {
        try {
            Context *ctx = context_of(m);
            if (ctx == nullptr) return on_below(below_for_nonblocking(m));
            // Its runs pass their load on, whichever path runs it on this rank.
            struct NonblockingCall {
                Context &ctx;
                ~NonblockingCall() { ctx.nonblocking_call = false; }
            } scope{*ctx};
            ctx->nonblocking_call = true;
            std::unique_ptr<PendingCall> call = on_themis(*ctx);
            ++m->accelerated[collective];
            return call;
        } catch (const std::exception &e) {
            return std::make_unique<FinishedCall>(report_failure(name, e));
        }
    };
    return setup_running(m) ? hold_until_setup(m, std::move(launch)) : launch();
}

// The engine's call for a host-buffer collective `prepare(ctx)` gives.
template <typename Prepare> std::unique_ptr<PendingCall>
engine_call(ompi_communicator_t *comm, Context &ctx, const Prepare &prepare) {
    // Tests (mpi_np4_2x2_nonblocking_fails): fails in the progress loop, as a call whose
    // transport failed would, so that the error's way to the caller is tested.
    if (test_hooks().fail_nonblocking)
        return std::make_unique<FinishedCall>(OMPI_ERROR, "THEMIS_TEST_FAIL_NONBLOCKING is set");
    return std::make_unique<EngineCall>(comm, ctx, prepare(ctx));
}

// The nonblocking form on host buffers: `prepare(ctx)` gives the Prepared collective,
// started on the engine with a request completed from the progress loop;
// `previous(b, sbuf, rbuf, request)` is layer b's nonblocking form.
template <typename Prepare, typename Previous>
int start_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                      const char *name, const char *unsupported, const void *sbuf, void *rbuf,
                      ompi_request_t **request, Prepare prepare, Previous previous) {
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    ++m->calls[collective];
    if (unsupported) {
        say_unsupported(name, unsupported);
        return previous(m, sbuf, rbuf, request);
    }
    return start_request(
        nonblocking_call(
            m, comm, collective, name, false,
            [=](Context &ctx) { return engine_call(comm, ctx, prepare); },
            [=](mca_coll_themis_module_t *b) { return below_call(previous, b, sbuf, rbuf); }),
        comm, request);
}

// Whether either buffer is device memory (CUDA builds).
inline bool any_on_device(const void *a, const void *b) {
#if THEMIS_HAVE_CUDA
    return cuda::on_device(a) || cuda::on_device(b);
#else
    (void)a;
    (void)b;
    return false;
#endif
}

// Open MPI objects (communicator, datatypes, op) as the objects they derive from.
template <typename... T> std::vector<opal_object_t *> objects(T *...p) {
    return {reinterpret_cast<opal_object_t *>(p)...};
}

// What a persistent request keeps alive between its runs: the communicator (and with it
// the engine), the datatypes and the op, which the user may free after the init call.
class Retained {
  public:
    explicit Retained(std::vector<opal_object_t *> objects) : objects_(std::move(objects)) {
        for (opal_object_t *o : objects_) OBJ_RETAIN(o);
    }
    ~Retained() {
        for (opal_object_t *o : objects_) OBJ_RELEASE(o);
    }
    Retained(const Retained &) = delete;
    Retained &operator=(const Retained &) = delete;

  private:
    std::vector<opal_object_t *> objects_;
};

#if THEMIS_HAVE_CUDA
// Host copies of a call's device buffers for the module below, which cannot take device
// memory: the send and receive views, and how many receive elements go back after it.
struct HostCopies {
    std::unique_ptr<cuda::HostView> send, recv;
    size_t back = 0;
};

// A call the module below runs on host copies: complete once the module's request is (its
// own progress moves it), then the results go back to the device. A nonblocking call's
// request is freed then; a persistent one's is left inactive for its next start.
class ThroughHostCall : public PendingCall {
  public:
    ThroughHostCall(ompi_request_t *inner, std::shared_ptr<HostCopies> copies, bool persistent)
        : inner_(inner), copies_(std::move(copies)), persistent_(persistent) {}
    bool progress() override {
        if (!REQUEST_COMPLETE(inner_)) return false;
        const int rc = inner_->req_status.MPI_ERROR;
        if (persistent_) {
            int completed = 0; // complete: made inactive, as MPI_Test does
            ompi_request_test(&inner_, &completed, MPI_STATUS_IGNORE);
        } else {
            ompi_request_free(&inner_);
        }
        if (rc != OMPI_SUCCESS) throw std::runtime_error("the previous module's call failed");
        copies_->recv->copy_back(copies_->back);
        return true;
    }

  private:
    ompi_request_t *inner_;
    std::shared_ptr<HostCopies> copies_;
    bool persistent_;
};

// The module below's persistent request on host copies of a call's device buffers, made
// once at init; every start copies the device data in again and starts it.
class ThroughHostPersistent {
  public:
    ThroughHostPersistent(ompi_request_t *inner, std::shared_ptr<HostCopies> copies)
        : inner_(inner), copies_(std::move(copies)) {}
    ~ThroughHostPersistent() { ompi_request_free(&inner_); }
    ThroughHostPersistent(const ThroughHostPersistent &) = delete;
    ThroughHostPersistent &operator=(const ThroughHostPersistent &) = delete;
    std::unique_ptr<PendingCall> start() {
        copies_->send->refresh();
        copies_->recv->refresh(); // in place it holds the input
        // An empty call may get a request that is complete from the start and cannot be
        // started (Open MPI's ompi_request_empty); MPI_Start leaves it as it is.
        if (inner_->req_start == nullptr) return std::make_unique<FinishedCall>(OMPI_SUCCESS);
        ompi_request_t *started = inner_;
        const int rc = inner_->req_start(1, &started); // what MPI_Start does
        if (rc != OMPI_SUCCESS) return std::make_unique<FinishedCall>(rc, "MPI_Start failed");
        return std::make_unique<ThroughHostCall>(inner_, copies_, true);
    }

  private:
    ompi_request_t *inner_;
    std::shared_ptr<HostCopies> copies_;
};
#endif

// The persistent form (MPIX_*_init). Eligible: a request of themis's whose every
// MPI_Start runs like a nonblocking call (nonblocking_call: on the engine, `prepare`, or
// with a device buffer `device(&started)`, device_call below; declined: `previous(b, sbuf,
// rbuf, request)`, layer b's nonblocking form), so that every rank's starts take the same
// way whatever its buffers' memory and however far its set-up has come. Not eligible: the
// module below's persistent form, `previous_init(m, sbuf, rbuf, request)`; with a device
// buffer on `host_copies()`, copied in again at every start (ThroughHostPersistent).
// `keep`: what the request holds until freed (the module below's own persistent forms may
// not: Open MPI 4.1.4 retains nothing for a request that is inactive at init). Its starts
// are counted as calls.
template <typename Prepare, typename Device, typename PreviousInit, typename Previous,
          typename Copies>
int init_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                     const char *name, const char *unsupported, const void *sbuf, void *rbuf,
                     ompi_request_t **request, std::vector<opal_object_t *> keep, Prepare prepare,
                     Device device, PreviousInit previous_init, Previous previous,
                     Copies host_copies) {
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    const bool on_device = any_on_device(sbuf, rbuf);
    auto kept = std::make_shared<Retained>(std::move(keep));
    if (unsupported) {
        ++m->calls[collective];
        say_unsupported(name, unsupported);
#if THEMIS_HAVE_CUDA
        if (on_device) {
            try {
                auto copies = std::make_shared<HostCopies>(host_copies());
                ompi_request_t *inner = nullptr;
                const int rc = previous_init(m, copies->send->get(), copies->recv->get(), &inner);
                if (rc != OMPI_SUCCESS) return rc;
                auto through = std::make_shared<ThroughHostPersistent>(inner, copies);
                return persistent_request(
                    [=] {
                        (void)kept;
                        return through->start();
                    },
                    comm, request);
            } catch (const std::exception &e) {
                return report_failure(name, e);
            }
        }
#else
        (void)host_copies;
#endif
        return previous_init(m, sbuf, rbuf, request);
    }
    begin_setup(m, comm, on_device);
    Starter start = [=]() -> std::unique_ptr<PendingCall> {
        (void)kept; // held as long as the request
        if (on_device) {
            std::unique_ptr<PendingCall> started;
            const int rc = device(&started);
            return started ? std::move(started) : std::make_unique<FinishedCall>(rc);
        }
        ++m->calls[collective];
        return nonblocking_call(
            m, comm, collective, name, false,
            [=](Context &ctx) { return engine_call(comm, ctx, prepare); },
            [=](mca_coll_themis_module_t *b) { return below_call(previous, b, sbuf, rbuf); });
    };
    const int rc = persistent_request(std::move(start), comm, request);
    return rc != OMPI_SUCCESS ? report_failure(name, std::runtime_error("no persistent request"))
                              : OMPI_SUCCESS;
}

#if THEMIS_HAVE_CUDA
// A call with a device buffer: themis's device path (`prepare(ctx)`, a Prepared collective
// whose bytes may be in device memory, coll_themis_cuda.h) or layer b on `host_copies()`
// (`previous(b, send, recv, request)`; a CUDA failure becomes an MPI error, as inside
// themis). Blocking (`started` null): run to the end; `previous` gets a null request and
// runs the blocking form. Nonblocking or persistent: *started becomes the call in flight
// (nonblocking_call), `previous` gets where to put its request.
template <typename Prepare, typename Copies, typename Previous>
int device_call(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                const char *name, const char *unsupported, Prepare prepare, Copies host_copies,
                Previous previous, std::unique_ptr<PendingCall> *started) {
    // Layer b on host copies; `out` null: the blocking form, else its call in flight.
    auto through_host = [=](mca_coll_themis_module_t *b, std::unique_ptr<PendingCall> *out) -> int {
        try {
            HostCopies copies = host_copies();
            ompi_request_t *inner = nullptr;
            const int rc =
                previous(b, copies.send->get(), copies.recv->get(), out ? &inner : nullptr);
            if (rc != OMPI_SUCCESS) return rc;
            if (out)
                *out = std::make_unique<ThroughHostCall>(
                    inner, std::make_shared<HostCopies>(std::move(copies)), false);
            else
                copies.recv->copy_back(copies.back);
            return OMPI_SUCCESS;
        } catch (const std::exception &e) {
            return report_failure(name, e);
        }
    };
    if (started == nullptr)
        return run_or_delegate(
            module, comm, collective, name, unsupported,
            [&](Context &ctx) { run_prepared(ctx, prepare(ctx)); },
            [&](mca_coll_themis_module_t *m) { return through_host(m, nullptr); }, true);
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    ++m->calls[collective];
    if (unsupported) {
        say_unsupported(name, unsupported);
        const int rc = through_host(m, started);
        if (!*started) *started = std::make_unique<FinishedCall>(rc);
        return rc;
    }
    *started = nonblocking_call(
        m, comm, collective, name, true,
        [=](Context &ctx) { return std::make_unique<EngineCall>(comm, ctx, prepare(ctx)); },
        [=](mca_coll_themis_module_t *b) -> std::unique_ptr<PendingCall> {
            std::unique_ptr<PendingCall> call;
            const int rc = through_host(b, &call);
            if (!call) call = std::make_unique<FinishedCall>(rc);
            return call;
        });
    return OMPI_SUCCESS;
}

// The nonblocking form with a device buffer: `device(&started)` as device_call above.
template <typename Device>
int start_on_device(Device device, ompi_communicator_t *comm, ompi_request_t **request) {
    std::unique_ptr<PendingCall> started;
    const int rc = device(&started);
    return rc != OMPI_SUCCESS ? rc : start_request(std::move(started), comm, request);
}
#endif

// Whether a message of `bytes` is worth themis's set-up (else: the previous module).
inline const char *too_small(size_t bytes) {
    return bytes < mca_coll_themis_component.min_bytes ? "below coll_themis_min_bytes" : nullptr;
}

} // namespace themis
