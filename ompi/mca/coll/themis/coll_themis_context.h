// coll_themis_context.h: what themis keeps per communicator, set up lazily.
//
// On the first eligible call the ranks agree on the rank layout (dimensions from
// coll_themis_dims and process locality), duplicate the communicator into a private
// one that never selects themis, and build the engine, transport and plan cache.
// Any rank that cannot do so makes every rank decline: themis never runs on some
// ranks of a communicator and not on others.
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <mutex>
#include <string>

#include "coll_themis.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_call.h"
#include "coll_themis_crossover.h"
#include "coll_themis_params.h"
#include "coll_themis_refine.h"
#include "coll_themis_settings.h"
#include "coll_themis_trace.h"
#include "crossover.h"
#include "engine.h"
#include "host_memory.h"
#include "plan_cache.h"
#include "rank_layout.h"

namespace themis {

struct GroupSetup;

// A set-up communicator's calls on its engine: it plans them (settings_), starts and drives
// them on the engine over the communicator's transports, and hands what they show to its
// rate refinement (refinement_) and its trace (trace_); blocking calls come from its pool.
class Context {
  public:
    // Collective over `comm`; returns nullptr (and says why at verbose level 1) when
    // themis declines the communicator (coll_themis_setup.cpp).
    static std::unique_ptr<Context> create(mca_coll_themis_module_t *module,
                                           ompi_communicator_t *comm, bool device_buffers);
    // Local: `comm` set up as `setup` says, connected again (coll_themis_inherit.h); throws
    // when it cannot connect.
    static std::unique_ptr<Context> from_setup(mca_coll_themis_module_t *module,
                                               ompi_communicator_t *comm, const std::string &key,
                                               const GroupSetup &setup);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const RankLayout &layout() const { return layout_; }
    // The key of its group (coll_themis_inherit.h).
    const std::string &key() const { return key_; }
    // The least times the module below and themis could take for `bytes` of `coll` on this
    // network (src/crossover.h), from the rates it plans with; 0 where those are the spec's
    // defaults, which say nothing of the network.
    Crossover::Bounds crossover_bounds(Collective coll, size_t bytes) const;
    // Where its set-up came from: "new" (made now), "inherited" (an earlier communicator's of
    // its group: coll_themis_inherit.h), "spare" (a freed one's context taken over).
    const char *setup_source() const { return setup_source_; }
    // Whether no call is in flight on it, nor an agreement, and it writes no trace: it may
    // serve another communicator of its group (coll_themis_inherit.h, spares).
    bool idle();
    // It serves `comm` now (module `module`), set up as `setup` says (a spare taken over):
    // its rates, refinement and settings start again from there; its engine, transports,
    // buffers and plans stay.
    void rebind(mca_coll_themis_module_t *module, ompi_communicator_t *comm,
                const GroupSetup &setup);
    // Its levels' names, comma-separated (the event selected).
    std::string levels() const;
    // Opens this rank's stage-timing CSV when coll_themis_trace asks for one.
    void open_trace();
    const char *transport_name() const { return transport_->name(); }
    // Whether the transport is handed device pointers (UCX with CUDA; decided at set-up).
    bool transport_moves_device() const { return moves_device_; }
    int position() const { return position_; }
    HostMemory &memory() { return *memory_; }
    // Device-direct mode (cuda/ipc.h): the engine's transport moves device
    // memory on every dimension, node dimensions by CUDA IPC.
    bool device_direct() const { return device_transport_ != nullptr; }

    // Fills `req` in for a collective on this communicator (coll_themis_settings.h); the
    // caller adds the sizes.
    void plan_request(PlanRequest &req, Collective coll, uint64_t element_size) {
        settings_.fill(req, coll, element_size);
    }
    // The same as a new request, with its block counts.
    PlanRequest request(Collective coll, uint64_t element_size, std::vector<uint64_t> block_counts);

    // A blank call for a blocking call, back in the pool when the lease ends.
    using Lease = CallPool::Lease;
    Lease lease() { return pool_.lease(); }
    // Runs a prepared call (coll_themis_call.h) to its end, its results out: a blocking call.
    // True when it ends a window of the rate refinement (rate_refiner.h): the caller then
    // has the ranks agree on rate_evidence() and hands the sums to revise_rates()
    // (coll_themis_refine.h).
    bool run(Call &call);
    // This rank's evidence of the window that just ended (rate_refiner.h).
    const std::vector<double> &rate_evidence() { return refinement_.evidence(); }
    // The ranks' summed evidence: revises the rates the plans are made from where they are
    // off (verbose 1: event "rates"), the same on every rank, and keeps them where the
    // measured ones were kept (keep_revised_rates()).
    void revise_rates(const std::vector<double> &agreed);
    // Starts a prepared call and returns at once (a nonblocking call); collectives in flight
    // together share the dimensions' queues in start order (engine.h), and each is planned
    // from the load the nonblocking call before it left unbalanced
    // (PlanRequest::carried_load). Call::progress() completes it. While the agreement of a
    // window that a nonblocking call ended is in flight, the call waits (Call's state
    // Waiting) and starts, in order, when it completes (release_waiting()).
    void start(Call &call);
    // From the progress loop, for a waiting call: polls the agreement; true once the call
    // has started (on the revised rates).
    bool release_waiting(Call &call);

  private:
    friend class Call;
    Context(mca_coll_themis_module_t *module, ompi_communicator_t *comm, RankLayout layout,
            std::string key);
    // Plans `call` and starts it on the engine; `nonblocking`: calls after it may run beside
    // it (its carried load passes on).
    void begin(Call &call, bool nonblocking);
    // begin() for a nonblocking call, counted by the refinement.
    void begin_nonblocking(Call &call);
    // A completed agreement: revises the rates, then starts the waiting calls.
    void poll_agreement();
    // Polls the progress loop until no agreement is in flight (a blocking call).
    void finish_agreement();
    // Progresses every collective in flight on the communicator; true once `call` is
    // complete (its stage timings then written to the trace, if any). In the progress
    // callback it steps aside (false) while another thread uses the engine.
    bool drive(Call &call);
    // Takes `call` off the engine's queues (complete or not).
    void leave(Call &call);
    // A complete call's stage timings to the trace, once.
    void write_trace(Call &call);
    // Plans from `rates` (its topology becomes the layout's), revised by `refiner` (or none).
    void adopt_rates(const CalibratedTopology &rates, std::unique_ptr<RateRefiner> refiner);
    // The engine on `rates`, then adopt_rates().
    void start_engine(const CalibratedTopology &rates, std::unique_ptr<RateRefiner> refiner);
    // What the engine runs on: a wrapper of transport_, or transport_ itself.
    Transport &engine_transport();
    // The communicator's base transport, connected.
    void adopt_transport(std::unique_ptr<Transport> transport);

    mca_coll_themis_module_t *module_;
    ompi_communicator_t *comm_;
    RankLayout layout_;
    int position_;
    std::string key_; // its group's (coll_themis_inherit.h)
    const char *setup_source_ = "new";
    std::unique_ptr<Transport> transport_;
    // It moves device memory (or, in tests, stands for one that does: cuda/buffers.h).
    bool moves_device_ = false;
    std::unique_ptr<Transport> device_transport_; // device-direct mode: wraps transport_
    std::unique_ptr<Transport> node_transport_;   // single-copy node dimensions: wraps transport_
    // Temporaries, shared by the live communicators of its group (coll_themis_inherit.h): a
    // new one's first call then finds warm buffers.
    std::shared_ptr<HostMemory> memory_ = std::make_shared<HostMemory>();
    std::unique_ptr<Engine> engine_;
    // Under MPI_THREAD_MULTIPLE one thread may start or run a collective on the
    // communicator while another's progress loop drives the calls in flight on it (MPI
    // orders a communicator's collectives, not the progress of other threads): every use of
    // the engine and its transport, the plan cache, the load carried, the refinement and the
    // trace holds this lock.
    std::recursive_mutex engine_lock_;
    PlanCache cache_;
    PlanSettings settings_;
    CallPool pool_;
    Refinement refinement_; // none where no measured rate can be revised (its on())
    StageTrace trace_;
    bool rates_known_ = false; // every bandwidth given, measured or cached (not a default)
    uint64_t driven_pass_ = 0; // the progress callback's pass that last drove the engine
    // What the last call left the next one's load tracker: a nonblocking call's
    // Plan::carried_load, nothing after a blocking call. Every rank starts a communicator's
    // collectives in the same order, so every rank plans from the same value.
    std::vector<double> carried_load_;
};

// The module's context once its set-up ended; nullptr while it runs or when themis
// declined the communicator.
Context *context_of(const mca_coll_themis_module_t *module);

// A running communicator's agreement (collective, from a blocking call on it): `n` doubles
// reduced by `op` into `out` through the module below's allreduce; false if it failed.
bool agree_doubles(mca_coll_themis_module_t *m, const double *in, double *out, int n,
                   ompi_op_t *op);

// The same agreement begun beside the calls, on the private duplicate `dup`: its nonblocking
// allreduce, `in` and `out` kept until its request completes; nullptr if it did not start.
ompi_request_t *start_agreement(ompi_communicator_t *dup, const double *in, double *out, int n,
                                ompi_op_t *op);

// Prints a failure inside a themis collective and turns it into an Open MPI error code.
int report_failure(const char *collective, const std::exception &e);

} // namespace themis

// The C-visible name of the per-communicator state, from the start of its set-up on.
struct themis_context {
    std::unique_ptr<themis::Context> context; // set up: themis runs the communicator
    ompi_communicator_t *dup = nullptr;       // the private duplicate, once made
    // Declined after a set-up: the private duplicate's collectives, where its eligible
    // nonblocking and persistent calls go (coll_themis_setup_task.h).
    mca_coll_themis_module_t *fallback = nullptr;
    // Where themis gets faster than the module below, per collective and size, measured on
    // the communicator's blocking calls (coll_themis_crossover.h).
    themis::Crossover crossover{THEMIS_COLLECTIVE_COUNT};
    themis::TrialAgreements trials; // its agreements in flight, on `dup`
    themis_context() = default;
    themis_context(const themis_context &) = delete;
    themis_context &operator=(const themis_context &) = delete;
    ~themis_context();
};
