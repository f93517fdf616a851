// coll_themis_context.h: what themis keeps per communicator, set up lazily.
//
// On the first eligible call the ranks agree on the rank layout (dimensions from
// coll_themis_dims and process locality), duplicate the communicator into a private
// one that never selects themis, and build the engine, transport and plan cache.
// Any rank that cannot do so makes every rank decline: themis never runs on some
// ranks of a communicator and not on others.
#pragma once

#include "coll_themis_prelude.h"

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "coll_themis.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_call.h"
#include "coll_themis_params.h"
#include "crossover.h"
#include "engine.h"
#include "host_memory.h"
#include "plan_cache.h"
#include "rank_layout.h"
#include "rate_refiner.h"

namespace themis {

struct GroupSetup;

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
    // Whether the transport is handed device pointers (UCX with CUDA).
    bool transport_moves_device() const { return transport_->moves_device_memory(); }
    int position() const { return position_; }
    HostMemory &memory() { return *memory_; }
    // Device-direct mode (cuda/ipc.h): the engine's transport moves device
    // memory on every dimension, node dimensions by CUDA IPC.
    bool device_direct() const { return device_transport_ != nullptr; }

    // Fills `req` in for a collective on this communicator: the settings in force (MCA
    // parameters, the communicator's themis_policy info key), the collective and the element
    // size; the caller adds the sizes. The settings are resolved at set-up and again after
    // MPI_Comm_set_info, not per call; `req`'s lists keep their room (cleared).
    void plan_request(PlanRequest &req, Collective coll, uint64_t element_size);
    // The same as a new request, with its block counts.
    PlanRequest request(Collective coll, uint64_t element_size, std::vector<uint64_t> block_counts);

    // A blank call of this context's pool for a blocking call, back in the pool when the
    // lease ends (a call on themis kept for the next: nothing allocated once warm).
    class Lease {
      public:
        Lease(Context &ctx, std::unique_ptr<Call> call) : ctx_(ctx), call_(std::move(call)) {}
        ~Lease();
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        Call &operator*() const { return *call_; }
        Call *operator->() const { return call_.get(); }

      private:
        Context &ctx_;
        std::unique_ptr<Call> call_;
    };
    Lease lease();
    // Runs a prepared call (coll_themis_call.h) to its end, its results out: a blocking call.
    // True when it ends a window of the rate refinement (rate_refiner.h): the caller then
    // has the ranks agree on rate_evidence() and hands the sums to revise_rates()
    // (coll_themis_refine.h).
    bool run(Call &call);
    // This rank's evidence of the window that just ended (rate_refiner.h).
    const std::vector<double> &rate_evidence() { return refiner_->evidence(); }
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
    // begin() for a nonblocking call, counted by the refiner: watched for evidence when alone
    // on the engine; the window's agreement started when it ends one.
    void begin_nonblocking(Call &call);
    // A completed agreement: revises the rates, then starts the waiting calls.
    void poll_agreement();
    // Polls the progress loop until no agreement is in flight (a blocking call).
    void finish_agreement();
    // Every dimension's busy seconds so far; those since `before`, as the refiner reads them.
    const std::vector<double> &busy_now();
    const std::vector<double> &busy_since(const std::vector<double> &before);
    // At every drive of the call alone on the engine (sole_): the longest gap between
    // drives; `done`: its evidence to the refiner, when it has some.
    void watch_sole(Call &call, bool done);
    // Progresses every collective in flight on the communicator; true once `call` is
    // complete (its stage timings then written to the trace, if any). In the progress
    // callback it steps aside (false) while another thread uses the engine.
    bool drive(Call &call);
    // Takes `call` off the engine's queues (complete or not).
    void leave(Call &call);
    // A complete call's stage timings to the trace, once.
    void write_trace(Call &call);
    // Resolves the settings every call's request starts from (plan_request).
    void resolve_settings();
    // A leased call back into the pool, blank.
    void pool_back(std::unique_ptr<Call> call);
    // Plans from `rates` (its topology becomes the layout's), revised by `refiner` (or none).
    void adopt_rates(const CalibratedTopology &rates, std::unique_ptr<RateRefiner> refiner);
    // adopt_rates(), and the engine on them.
    void start_engine(const CalibratedTopology &rates, std::unique_ptr<RateRefiner> refiner);
    // Collective: sets up device-direct mode where every rank can (CUDA builds); says why not.
    void setup_device_direct(mca_coll_themis_module_t *m, const std::vector<int> &node_of,
                             bool all_cuda);
    // What the engine runs on: a wrapper of transport_, or transport_ itself.
    Transport &engine_transport();

    mca_coll_themis_module_t *module_;
    ompi_communicator_t *comm_;
    RankLayout layout_;
    int position_;
    std::string key_; // its group's (coll_themis_inherit.h)
    const char *setup_source_ = "new";
    std::unique_ptr<Transport> transport_;
    std::unique_ptr<Transport> device_transport_; // device-direct mode: wraps transport_
    std::unique_ptr<Transport> node_transport_;   // single-copy node dimensions: wraps transport_
    // Temporaries, shared by the live communicators of its group (coll_themis_inherit.h): a
    // new one's first call then finds warm buffers.
    std::shared_ptr<HostMemory> memory_ = std::make_shared<HostMemory>();
    std::unique_ptr<Engine> engine_;
    // Under MPI_THREAD_MULTIPLE one thread may start or run a collective on the
    // communicator while another's progress loop drives the calls in flight on it (MPI
    // orders a communicator's collectives, not the progress of other threads): every use of
    // the engine and its transport, the plan cache, the load carried and the trace holds
    // this lock.
    std::recursive_mutex engine_lock_;
    PlanCache cache_;
    // The rate refinement (coll_themis_refine.h): none where no measured rate can be revised.
    std::unique_ptr<RateRefiner> refiner_;
    RatesKept rates_kept_;     // where the revised rates replace the measured ones
    bool rates_known_ = false; // every bandwidth given, measured or cached (not a default)
    // Starts the agreement of a window a nonblocking call ended (start_refine_agreement()).
    std::function<ompi_request_t *(const double *, double *, int)> start_agreement_;
    ompi_request_t *agreement_ = nullptr; // in flight
    std::vector<double> agreement_in_, agreement_out_;
    std::vector<Call *> waiting_; // nonblocking calls started while it is in flight, in order
    // per dimension: busy seconds before a blocking call, the latest reading, since a call
    std::vector<double> busy_before_, busy_now_, busy_measured_;
    long refined_calls_ = 0; // calls the refiner counted
    // The nonblocking call alone on the engine since it started, if any: its busy seconds
    // then, its last drive, the longest gap between two drives so far.
    const Call *sole_ = nullptr;
    std::vector<double> sole_busy_before_;
    std::chrono::steady_clock::time_point sole_last_drive_;
    double sole_longest_gap_ = 0;
    std::ofstream trace_; // open: every call's stage timings are appended
    long traced_calls_ = 0;
    uint64_t driven_pass_ = 0; // the progress callback's pass that last drove the engine
    // What the last call left the next one's load tracker: a nonblocking call's
    // Plan::carried_load, nothing after a blocking call. Every rank starts a communicator's
    // collectives in the same order, so every rank plans from the same value.
    std::vector<double> carried_load_;
    // What every call's request starts from: the parameters in force and the
    // communicator's info keys, resolved by resolve_settings() (at set-up, and on the first
    // call after an info key changed: info_generation).
    struct Settings {
        PlanRequest request; // every field but the sizes (its lists empty)
        bool carry_load = false;
        int verbose = 0;
        uint64_t info_generation = 0; // of the info keys it was resolved from
        bool resolved = false;
    } settings_;
    // Blank calls for blocking calls (lease()), kept with their room.
    std::mutex pool_lock_;
    std::vector<std::unique_ptr<Call>> pool_;
};

// The value of the themis info key `key` on `comm` ("" when unset).
std::string info(ompi_communicator_t *comm, const char *key);
// The value of a themis info key on `comm` (mca_coll_themis_info_keys), else `parameter`, the
// value of the MCA parameter it overrides.
int info_choice(ompi_communicator_t *comm, const char *key, int parameter);

// Set by the info keys' subscription callback (coll_themis_module.c) each time Open MPI
// hands it a themis info key's value (MPI_Comm_set_info, a communicator's creation):
// contexts resolve their settings again on their next call.
uint64_t info_generation();

// The module's context once its set-up ended; nullptr while it runs or when themis
// declined the communicator.
Context *context_of(const mca_coll_themis_module_t *module);

// A running communicator's agreement (collective, from a blocking call on it): `n` doubles
// reduced by `op` into `out` through the module below's allreduce; false if it failed.
bool agree_doubles(mca_coll_themis_module_t *m, const double *in, double *out, int n,
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
    themis_context() = default;
    themis_context(const themis_context &) = delete;
    themis_context &operator=(const themis_context &) = delete;
    ~themis_context();
};
