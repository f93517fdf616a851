// coll_themis_entry.h: the pattern every collective entry point follows.
//
//   1. calls that come back while themis sets a communicator up, and calls themis
//      does not accelerate, go to the previous module unchanged;
//   2. the communicator's context is set up on its first eligible call;
//   3. the collective runs; a failure is reported with a help message.
//
// The nonblocking forms (start_or_delegate) decide alike, with one difference: they never
// set a communicator up. Set-up is collective and blocking, and MPI lets ranks start
// nonblocking collectives on different communicators in different orders: a rank setting
// up A while its peer sets up B would wait forever. So a communicator's nonblocking calls
// run on themis once a blocking call has set it up; before, the previous module runs them,
// and the communicator's next MPI_Barrier (blocking, entered by every rank in the same
// order as its other collectives) sets it up (coll_themis_barrier.cpp).
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

// Whether a call may set its communicator up, and with what buffers. Blocking calls set
// it up; nonblocking ones use it once set up, or ask the next barrier to set it up.
// Whether a communicator runs its node dimensions device-direct is decided then, once, by
// every rank together: only a communicator whose first call carries device buffers
// everywhere (a GPU application's gradient communicator, say) pays the device-memory path
// for host buffers later; one set up by host buffers keeps the plain transport.
enum class SetUp { AtBarrier, AtBarrierByDevice, ByHostCall, ByDeviceCall };

// The context a call runs on, or nullptr: the previous module runs it.
inline Context *eligible_context(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                 const char *unsupported, SetUp set_up) {
    if (unsupported) return nullptr;
    if (set_up == SetUp::ByHostCall || set_up == SetUp::ByDeviceCall)
        return context_for(m, comm, set_up == SetUp::ByDeviceCall);
    if (m->setup_state == THEMIS_SETUP_PENDING) {
        m->setup_wanted = true;
        m->setup_wanted_device |= set_up == SetUp::AtBarrierByDevice;
    }
    return m->context ? m->context->context.get() : nullptr;
}

template <typename Run, typename Previous>
int run_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                    const char *name, const char *unsupported, Run run, Previous previous,
                    SetUp set_up = SetUp::ByHostCall) {
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    if (m->in_setup) return previous(m);
    ++m->calls[collective];
    Context *ctx = eligible_context(m, comm, unsupported, set_up);
    if (ctx == nullptr) {
        if (unsupported)
            opal_output_verbose(5, mca_coll_themis_component.output,
                                "coll:themis: %s to the previous module: %s", name, unsupported);
        return previous(m);
    }
    // Reset on every way out: a blocking call later must not pass its load on.
    struct NonblockingCall {
        Context &ctx;
        ~NonblockingCall() { ctx.nonblocking_call = false; }
    } scope{*ctx};
    ctx->nonblocking_call = set_up == SetUp::AtBarrier || set_up == SetUp::AtBarrierByDevice;
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

// Tests only (test/mpi, mpi_np4_2x2_nonblocking_fails): with THEMIS_TEST_FAIL_NONBLOCKING
// set, every nonblocking call themis runs fails in the progress loop, as one whose
// transport failed would, so that the error's way to the caller is tested.
inline bool nonblocking_fails_for_test() {
    static const bool set = std::getenv("THEMIS_TEST_FAIL_NONBLOCKING") != nullptr;
    return set;
}

// The nonblocking form: `prepare(ctx)` gives the Prepared collective, started on the
// engine with a request completed from the progress loop; `previous(m)` hands the call
// down.
template <typename Prepare, typename Previous>
int start_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                      const char *name, const char *unsupported, ompi_request_t **request,
                      Prepare prepare, Previous previous) {
    return run_or_delegate(
        module, comm, collective, name, unsupported,
        [&](Context &ctx) {
            std::unique_ptr<PendingCall> call;
            if (nonblocking_fails_for_test())
                call = std::make_unique<FinishedCall>(OMPI_ERROR,
                                                      "THEMIS_TEST_FAIL_NONBLOCKING is set");
            else
                call = std::make_unique<EngineCall>(comm, ctx, prepare(ctx));
            int rc = start_request(std::move(call), comm, request);
            if (rc != OMPI_SUCCESS) throw std::runtime_error("starting the request failed");
        },
        previous, SetUp::AtBarrier);
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

// The persistent form (MPIX_*_init): decided once, at init, like the nonblocking form (a
// communicator set up by a blocking call, an eligible call), and alike on every rank
// whatever memory its buffers are in, so that every rank's starts run the same module's
// same form. Taken: every MPI_Start runs `prepare` on the engine, or with a device buffer
// `device(&started)` (device_call below). Not taken: `previous(m, sbuf, rbuf, request)`,
// the module below's persistent form; with a device buffer on `host_copies()`, copied in
// again at every start (ThroughHostPersistent). `keep`: what the request holds until
// freed (the module below's own persistent forms may not: Open MPI 4.1.4 retains nothing
// for a request that is inactive at init).
template <typename Prepare, typename Device, typename Previous, typename Copies>
int init_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                     const char *name, const char *unsupported, const void *sbuf, void *rbuf,
                     ompi_request_t **request, std::vector<opal_object_t *> keep, Prepare prepare,
                     Device device, Previous previous, Copies host_copies) {
    const bool on_device = any_on_device(sbuf, rbuf);
    auto kept = std::make_shared<Retained>(std::move(keep));
    return run_or_delegate(
        module, comm, collective, name, unsupported,
        [&](Context &ctx) {
            Context *c = &ctx;
            Starter start = [=]() -> std::unique_ptr<PendingCall> {
                (void)kept; // held as long as the request
                if (!on_device) return std::make_unique<EngineCall>(comm, *c, prepare(*c));
                std::unique_ptr<PendingCall> started;
                const int rc = device(&started);
                return started ? std::move(started) : std::make_unique<FinishedCall>(rc);
            };
            if (persistent_request(std::move(start), comm, request) != OMPI_SUCCESS)
                throw std::runtime_error("making the persistent request failed");
        },
        [&](mca_coll_themis_module_t *m) -> int {
#if THEMIS_HAVE_CUDA
            if (on_device) {
                try {
                    auto copies = std::make_shared<HostCopies>(host_copies());
                    ompi_request_t *inner = nullptr;
                    const int rc = previous(m, copies->send->get(), copies->recv->get(), &inner);
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
            return previous(m, sbuf, rbuf, request);
        },
        on_device ? SetUp::AtBarrierByDevice : SetUp::AtBarrier);
}

#if THEMIS_HAVE_CUDA
// A call with a device buffer: themis's device path (`prepare(ctx)`, a Prepared collective
// whose bytes may be in device memory, coll_themis_cuda.h) or the module below on
// `host_copies()` (`previous(m, send, recv, request)`; a CUDA failure becomes an MPI error,
// as inside themis). Blocking (`started` null): run to the end, and it may set the
// communicator up; `previous` gets a null request and runs the blocking form. Nonblocking
// or persistent: *started becomes the call in flight on the engine, or the module's
// nonblocking form on the host copies (`previous` gets where to put its request).
template <typename Prepare, typename Copies, typename Previous>
int device_call(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                const char *name, const char *unsupported, Prepare prepare, Copies host_copies,
                Previous previous, std::unique_ptr<PendingCall> *started) {
    auto through_host = [&](mca_coll_themis_module_t *m) -> int {
        try {
            HostCopies copies = host_copies();
            ompi_request_t *inner = nullptr;
            const int rc =
                previous(m, copies.send->get(), copies.recv->get(), started ? &inner : nullptr);
            if (rc != OMPI_SUCCESS) return rc;
            if (started)
                *started = std::make_unique<ThroughHostCall>(
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
            [&](Context &ctx) { run_prepared(ctx, prepare(ctx)); }, through_host,
            SetUp::ByDeviceCall);
    const int rc = run_or_delegate(
        module, comm, collective, name, unsupported,
        [&](Context &ctx) { *started = std::make_unique<EngineCall>(comm, ctx, prepare(ctx)); },
        through_host, SetUp::AtBarrierByDevice);
    if (!*started) *started = std::make_unique<FinishedCall>(rc);
    return rc;
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
