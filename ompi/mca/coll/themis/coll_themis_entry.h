// coll_themis_entry.h: how every collective's entry points run, from one table.
//
// Each collective is an adapter (coll_themis_<collective>.cpp: what makes a call
// unsupported, how it is prepared on host and on device buffers, how it is handed down)
// and a row of THEMIS_ENTRY_POINTS, which makes its blocking, nonblocking and persistent
// entry points, all run by Entry<Adapter> below:
//
//   1. calls themis does not accelerate go to the previous module unchanged, at once, as do
//      calls too small for themis (coll_themis_crossover.h: the size where themis gets
//      faster, measured on the blocking calls, or coll_themis_min_bytes);
//   2. the communicator's set-up starts on its first eligible call, blocking or not
//      (coll_themis_setup_task.h): a blocking call waits for it, a nonblocking or
//      persistent one returns at once and is held until it ends;
//   3. the collective runs on themis, or, if the communicator was declined, on the module
//      below (nonblocking and persistent calls on the private duplicate's, see
//      coll_themis_setup_task.h); a failure is reported with a help message.
//
// Every call taken on is a Call (coll_themis_call.h). On themis, its adapter prepares it
// (inputs in place, plan request, how its results come out), then it runs to the end
// (blocking: a call of the context's pool, nothing allocated once warm) or is started and
// completed from the progress loop. With CUDA (cuda/buffers.h) the same decision is
// taken for device buffers, with a device-aware preparation and the module below on host
// copies (cuda/host_fallback.h): the memory kind changes how this rank's bytes move, never
// whether themis runs.
//
// An adapter C gives:
//   C::Args                          one call's arguments, by value (a call may be held:
//                                    a copy owns what it points to), its buffers among
//                                    them as sbuf and rbuf
//   C::slot                          its blocking form's slot (THEMIS_COLL_*); the
//                                    nonblocking and persistent ones follow in THEMIS_SLOTS
//   C::unsupported(a, comm)          why themis leaves it to the module below (its types,
//                                    op or layout), or nullptr
//   C::bytes(a, comm)                its size in bytes, the same on every rank, which
//                                    decides with coll_themis_crossover.h where it runs
//   C::prepare(ctx, a, call)         prepares `call` (blank) on host buffers
//   C::below(b, a, s, r, request)    layer b's form on buffers s, r: blocking when request
//                                    is null, else nonblocking
//   C::below_init(b, a, s, r, info, request)  layer b's persistent form
//   C::objects(a, comm)              what a persistent request holds while it lives
// and, for C::Args (CUDA builds: cuda/collectives.h, found by the arguments' type),
//   prepare_on_device(ctx, a, call)  C::prepare on buffers that may be device memory
//   host_copies(a, comm)             host copies of its buffers for the module below
#pragma once

#include "coll_themis_call.h"
#include "coll_themis_context.h"
#include "coll_themis_crossover.h"
#include "coll_themis_refine.h"
#include "cuda/buffers.h"
#include "coll_themis_request.h"
#include "coll_themis_setup_task.h"
#include "coll_themis_test_hooks.h"
#if THEMIS_HAVE_CUDA
#include "cuda/host_fallback.h"
#endif

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace themis {

// Whether either buffer is device memory (CUDA builds).
inline bool any_on_device(const void *a, const void *b) {
    return cuda::on_device(a) || cuda::on_device(b);
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

// The layer a declined communicator's eligible nonblocking and persistent calls go to:
// its private duplicate's, where there is one (coll_themis_setup_task.h).
inline mca_coll_themis_module_t *below_for_nonblocking(mca_coll_themis_module_t *m) {
    return m->context && m->context->fallback ? m->context->fallback : m;
}

inline void say_unsupported(const char *name, const char *unsupported) {
    opal_output_verbose(5, mca_coll_themis_component.output,
                        "coll:themis: %s to the previous module: %s", name, unsupported);
}

// An eligible nonblocking call (or a persistent request's run) as a call in flight: on
// themis, `on_themis(ctx, call)` prepares and starts it; declined, `on_below(b, call)` hands
// it to layer b. It starts the communicator's set-up if need be, and is held while that
// runs (coll_themis_setup_task.h).
template <typename OnThemis, typename OnBelow>
std::unique_ptr<Call> nonblocking_call(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                       int slot, const char *name, bool device_buffers,
                                       OnThemis on_themis, OnBelow on_below) {
    begin_setup(m, comm, device_buffers);
    auto call = std::make_unique<Call>();
    auto launch = [=](Call &c) {
        try {
            Context *ctx = context_of(m);
            if (ctx == nullptr) return on_below(below_for_nonblocking(m), c);
            on_themis(*ctx, c);
            ++m->accelerated[slot];
        } catch (const std::exception &e) {
            c.finished(report_failure(name, e));
        }
    };
    if (setup_running(m))
        hold_until_setup(m, *call, launch);
    else
        launch(*call);
    return call;
}

// THEMIS_SLOTS lists the blocking forms, then the nonblocking and the persistent ones in the
// same order: a collective's form f is at its blocking slot + f x kCollectives.
enum Form { kBlocking, kNonblocking, kPersistent };
constexpr int kCollectives = THEMIS_COLLECTIVE_COUNT;
static_assert(THEMIS_COLL_IALLREDUCE == THEMIS_COLL_ALLREDUCE + kCollectives &&
                  THEMIS_COLL_ALLREDUCE_INIT == THEMIS_COLL_ALLREDUCE + 2 * kCollectives &&
                  THEMIS_COLL_COUNT == 3 * kCollectives,
              "THEMIS_SLOTS: blocking, nonblocking, persistent, in the same order");

// Each slot's MPI name, for messages.
inline const char *mpi_name(int slot) {
#define THEMIS_MPI_NAME(X, name, id, mpi, core) "MPI_" #mpi,
#define THEMIS_IMPI_NAME(X, name, id, mpi, core) "MPI_I" #name,
#define THEMIS_INIT_MPI_NAME(X, name, id, mpi, core) THEMIS_INIT_NAME(#mpi),
    static const char *const names[THEMIS_COLL_COUNT] = {
        THEMIS_COLLECTIVES(THEMIS_MPI_NAME, _) THEMIS_COLLECTIVES(THEMIS_IMPI_NAME, _)
            THEMIS_COLLECTIVES(THEMIS_INIT_MPI_NAME, _)};
#undef THEMIS_MPI_NAME
#undef THEMIS_IMPI_NAME
#undef THEMIS_INIT_MPI_NAME
    return names[slot];
}

// The three forms of collective C (see the top of this file).
template <class C> struct Entry {
    using Args = typename C::Args;

    static constexpr int slot(Form form) { return C::slot + form * kCollectives; }
    static const char *name(Form form) { return mpi_name(slot(form)); }
    static mca_coll_themis_module_t *themis_module(mca_coll_base_module_t *module) {
        return reinterpret_cast<mca_coll_themis_module_t *>(module);
    }
    static bool on_device(const Args &a) { return any_on_device(a.sbuf, a.rbuf); }
    // Counts a call of `form`; the reason it goes to the module below as it is (said at
    // verbose level 5), or nullptr.
    static const char *counted(mca_coll_themis_module_t *m, Form form, const Args &a,
                               ompi_communicator_t *comm) {
        ++m->calls[slot(form)];
        return handed_down(m, form, a, comm);
    }
    // The reason a call of `form` goes to the module below as it is (said at verbose level
    // 5), or nullptr.
    static const char *handed_down(mca_coll_themis_module_t *m, Form form, const Args &a,
                                   ompi_communicator_t *comm) {
        const char *why = C::unsupported(a, comm);
        if (!why) why = size_unsupported(m, C::slot, form == kBlocking, C::bytes(a, comm));
        if (why) say_unsupported(name(form), why);
        return why;
    }

    // Prepares a blank call on themis.
    static void prepare(Context &ctx, const Args &a, bool device, Call &call) {
#if THEMIS_HAVE_CUDA
        if (device) return prepare_on_device(ctx, a, call); // cuda/collectives.h
#else
        (void)device;
#endif
        C::prepare(ctx, a, call);
    }

    // Layer b on the call: `out` null, its blocking form to the end; else *out becomes its
    // nonblocking call in flight. Device buffers go through host copies.
    static int below(mca_coll_themis_module_t *b, const Args &a, ompi_communicator_t *comm,
                     const char *name, bool device, Call *out) {
#if THEMIS_HAVE_CUDA
        if (device) {
            try {
                return cuda::through_host([&] { return host_copies(a, comm); },
                                          [&](const void *s, void *r, ompi_request_t **req) {
                                              return C::below(b, a, s, r, req);
                                          },
                                          out);
            } catch (const std::exception &e) {
                return report_failure(name, e);
            }
        }
#else
        (void)comm;
        (void)name;
        (void)device;
#endif
        ompi_request_t *inner = nullptr;
        const int rc = C::below(b, a, a.sbuf, a.rbuf, out ? &inner : nullptr);
        if (rc == OMPI_SUCCESS && out) out->below(inner);
        return rc;
    }

    // An eligible nonblocking call or persistent run, in flight.
    static std::unique_ptr<Call> in_flight(mca_coll_themis_module_t *m, const Args &a,
                                           ompi_communicator_t *comm, Form form, bool device) {
        const char *name = Entry::name(form);
        return nonblocking_call(
            m, comm, slot(form), name, device,
            [=](Context &ctx, Call &call) {
                // Tests (mpi_np4_2x2_nonblocking_fails): fails in the progress loop, as a
                // call whose transport failed would, so that the error's way is tested.
                if (test_hooks().fail_nonblocking)
                    return call.finished(OMPI_ERROR, "THEMIS_TEST_FAIL_NONBLOCKING is set");
                prepare(ctx, a, device, call);
                call.retain(comm);
                ctx.start(call);
            },
            [=](mca_coll_themis_module_t *b, Call &call) {
                const int rc = below(b, a, comm, name, device, &call);
                if (rc != OMPI_SUCCESS) call.finished(rc);
            });
    }

    // A blocking call: on themis or the module below as the crossover's step says (where
    // it is measured), the run timed where the step asks.
    static int blocking(const Args &a, ompi_communicator_t *comm, mca_coll_base_module_t *module) {
        mca_coll_themis_module_t *m = themis_module(module);
        const bool device = on_device(a);
        if (counted(m, kBlocking, a, comm))
            return below(m, a, comm, name(kBlocking), device, nullptr);
        begin_setup(m, comm, device);
        finish_setup(m);
        Context *ctx = context_of(m);
        if (ctx == nullptr) return below(m, a, comm, name(kBlocking), device, nullptr);
        if (!crossover_measured()) return on_themis(m, *ctx, a, device);
        const size_t bytes = C::bytes(a, comm);
        const Crossover::Step step = crossover_step(m, C::slot, bytes);
        using clock = std::chrono::steady_clock;
        const clock::time_point start = step.timed ? clock::now() : clock::time_point();
        const int rc = step.runner == Crossover::Runner::kThemis
                           ? on_themis(m, *ctx, a, device)
                           : below(m, a, comm, name(kBlocking), device, nullptr);
        if (step.timed && rc == OMPI_SUCCESS)
            crossover_record(m, C::slot, bytes, step.runner,
                             std::chrono::duration<double>(clock::now() - start).count());
        if (step.share) crossover_share(m, C::slot, bytes); // every rank, whatever rc says
        return rc;
    }

    // A blocking call on themis, to the end.
    static int on_themis(mca_coll_themis_module_t *m, Context &ctx, const Args &a, bool device) {
        try {
            Context::Lease call = ctx.lease();
            prepare(ctx, a, device, *call);
            if (ctx.run(*call)) refine_rates(m, ctx);
        } catch (const std::exception &e) {
            return report_failure(name(kBlocking), e);
        }
        ++m->accelerated[slot(kBlocking)];
        return OMPI_SUCCESS;
    }

    static int nonblocking(const Args &a, ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module) {
        mca_coll_themis_module_t *m = themis_module(module);
        const bool device = on_device(a);
        if (counted(m, kNonblocking, a, comm)) {
            // Host buffers: the module below's own request, as it made it.
            if (!device) return C::below(m, a, a.sbuf, a.rbuf, request);
            auto call = std::make_unique<Call>();
            const int rc = below(m, a, comm, name(kNonblocking), device, call.get());
            return rc != OMPI_SUCCESS ? rc : start_request(std::move(call), comm, request);
        }
        return start_request(in_flight(m, a, comm, kNonblocking, device), comm, request);
    }

    // Eligible: a request of themis's whose every MPI_Start runs like a nonblocking call,
    // so that every rank's starts take the same way whatever its buffers' memory and however
    // far its set-up has come. Not eligible: the module below's persistent form, with a
    // device buffer on host copies that every start refreshes (cuda::ThroughHostPersistent).
    // Starts that pass through themis's request are counted as calls (the init is none); a
    // request of the module below's own, whose starts themis never sees, is counted as such.
    // The request holds the communicator, datatypes and op (Open MPI 4.1.4 retains nothing
    // for a request that is inactive at init).
    static int persistent(const Args &a, ompi_communicator_t *comm, ompi_info_t *info,
                          ompi_request_t **request, mca_coll_base_module_t *module) {
        mca_coll_themis_module_t *m = themis_module(module);
        const char *name = Entry::name(kPersistent);
        const bool device = on_device(a);
        auto kept = std::make_shared<Retained>(C::objects(a, comm));
        if (handed_down(m, kPersistent, a, comm)) {
#if THEMIS_HAVE_CUDA
            if (device) {
                try {
                    auto through = cuda::ThroughHostPersistent::make(
                        host_copies(a, comm), [&](const void *s, void *r, ompi_request_t **req) {
                            return C::below_init(m, a, s, r, info, req);
                        });
                    return persistent_request(
                        [=] {
                            (void)kept;
                            ++m->calls[slot(kPersistent)];
                            return through->start();
                        },
                        comm, request);
                } catch (const std::exception &e) {
                    return report_failure(name, e);
                }
            }
#endif
            ++m->below_requests[slot(kPersistent)];
            return C::below_init(m, a, a.sbuf, a.rbuf, info, request);
        }
        begin_setup(m, comm, device);
        Starter start = [=]() -> std::unique_ptr<Call> {
            (void)kept; // held as long as the request
            ++m->calls[slot(kPersistent)];
            return in_flight(m, a, comm, kPersistent, device);
        };
        if (persistent_request(std::move(start), comm, request) != OMPI_SUCCESS)
            return report_failure(name, std::runtime_error("making the persistent request failed"));
        return OMPI_SUCCESS;
    }
};

// The blocking, nonblocking and persistent entry points of collective `slot` (Open MPI's
// coll_<slot>, coll_i<slot>, coll_<slot>_init, with the parameters THEMIS_PARAMS_<slot>),
// run by Entry<Adapter>: ARGS makes Adapter::Args of those parameters (it may use `comm`).
#define THEMIS_ENTRY_POINTS(slot, Adapter, ARGS)                                                   \
    extern "C" int mca_coll_themis_##slot(THEMIS_PARAMS(slot), ompi_communicator_t *comm,          \
                                          mca_coll_base_module_t *module) {                        \
        return themis::Entry<Adapter>::blocking(ARGS, comm, module);                               \
    }                                                                                              \
    extern "C" int mca_coll_themis_i##slot(THEMIS_PARAMS(slot), ompi_communicator_t *comm,         \
                                           ompi_request_t **request,                               \
                                           mca_coll_base_module_t *module) {                       \
        return themis::Entry<Adapter>::nonblocking(ARGS, comm, request, module);                   \
    }                                                                                              \
    extern "C" int mca_coll_themis_##slot##_init(THEMIS_PARAMS(slot), ompi_communicator_t *comm,   \
                                                 ompi_info_t *info, ompi_request_t **request,      \
                                                 mca_coll_base_module_t *module) {                 \
        return themis::Entry<Adapter>::persistent(ARGS, comm, info, request, module);              \
    }

// The bytes of `elements` of `dtype`.
inline size_t type_bytes(ompi_datatype_t *dtype, size_t elements) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    return type_size * elements;
}

} // namespace themis
