// coll_themis_context.h: what themis keeps per communicator, set up lazily.
//
// On the first eligible call the ranks agree on the rank layout (dimensions from
// coll_themis_dims and process locality), duplicate the communicator into a private
// one that never selects themis, and build the engine, transport and plan cache.
// Any rank that cannot do so makes every rank decline: themis never runs on some
// ranks of a communicator and not on others.
#pragma once

#include "coll_themis_prelude.h"

#include <fstream>
#include <memory>
#include <mutex>
#include <string>

#include "coll_themis.h"
#include "coll_themis_params.h"
#include "engine.h"
#include "host_memory.h"
#include "plan_cache.h"
#include "rank_layout.h"

namespace themis {

class Context;

// A collective started on a communicator's engine (Context::start); the communicator
// must outlive it.
class StartedRun {
  public:
    // Progresses every collective in flight on the communicator; true once this one is
    // complete (its stage timings then written to the trace, if any). In the progress
    // callback it steps aside (false) while another thread uses the engine.
    bool progress();
    ~StartedRun();

  private:
    friend class Context;
    explicit StartedRun(Context &ctx) : ctx_(ctx) {}
    Context &ctx_;
    std::shared_ptr<const Plan> plan_;
    bool traced_ = false;
    bool trace_written_ = false;
    std::vector<StageRun> runs_;
    std::unique_ptr<Execution> execution_;
};

class Context {
  public:
    // Collective over `comm`; returns nullptr (and says why at verbose level 1) when
    // themis declines the communicator.
    static std::unique_ptr<Context> create(mca_coll_themis_module_t *module,
                                           ompi_communicator_t *comm, bool device_buffers);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const RankLayout &layout() const { return layout_; }
    const char *transport_name() const { return transport_->name(); }
    // Whether the transport is handed device pointers (UCX with CUDA).
    bool transport_moves_device() const { return transport_->moves_device_memory(); }
    int position() const { return position_; }
    HostMemory &memory() { return memory_; }
    // Device-direct mode (coll_themis_cuda_ipc.h): the engine's transport moves device
    // memory on every dimension, node dimensions by CUDA IPC.
    bool device_direct() const { return device_transport_ != nullptr; }

    // The request for a collective on this communicator, with the parameters in force
    // (MCA parameters, the communicator's themis_policy info key).
    PlanRequest request(Collective coll, uint64_t element_size,
                        std::vector<uint64_t> block_counts) const;
    // Runs it over `work`, a buffer laid out as the request says (or wherever
    // `options` says: device buffers, see coll_themis_cuda.h).
    void run(const PlanRequest &req, char *work, Reducer &reducer,
             const RunOptions &options = RunOptions());
    // Whether the MPI call under way is a nonblocking or persistent one, set by the entry
    // points around it: its runs pass their load on as start()'s do, whichever path runs it
    // on this rank (a device buffer runs the blocking path), so every rank plans alike.
    bool nonblocking_call = false;
    // Starts it and returns at once (a nonblocking call); collectives in flight together
    // share the dimensions' queues in start order (engine.h), and each is planned from the
    // load the nonblocking call before it left unbalanced (PlanRequest::carried_load).
    std::unique_ptr<StartedRun> start(const PlanRequest &req, char *work, Reducer &reducer,
                                      const RunOptions &options = RunOptions());

  private:
    friend class StartedRun;
    Context(ompi_communicator_t *comm, RankLayout layout);
    // Appends a completed call's stage timings to the trace.
    void write_trace(const StartedRun &run);
    // Picks and connects the base transport (collective; coll_themis_transports.h).
    void connect(mca_coll_themis_module_t *m);
    // Sets the rates the spec does not give (collective; see coll_themis_calibrate.h) and
    // builds the engine on them; adds to `selected` (the log's event) the dimensions with
    // every number and its source, and the levels. `host_of`: every communicator rank's
    // hostname.
    void calibrate(mca_coll_themis_module_t *m, const std::vector<std::string> &host_of,
                   LogEvent &selected);
    Policy policy() const;
    // A themis info key's value on the communicator ("" when unset).
    std::string info(const char *key) const;
    // The value of a themis info key on the communicator (mca_coll_themis_info_keys), else
    // `parameter`, the value of the MCA parameter it overrides.
    int info_choice(const char *key, int parameter) const;
    // Opens this rank's stage-timing CSV when coll_themis_trace asks for one.
    void open_trace();
    // Collective: sets up device-direct mode where every rank can (CUDA builds); says why not.
    void setup_device_direct(mca_coll_themis_module_t *m, const std::vector<int> &node_of,
                             bool all_cuda);
    // Collective: node-local dimensions by single copy where coll_themis_node_transport and
    // the measurements choose it (coll_themis_node_transport.h); says what and why.
    void setup_node_transport(mca_coll_themis_module_t *m, const std::vector<int> &node_of);
    // What the engine runs on: a wrapper of transport_, or transport_ itself.
    Transport &engine_transport();

    ompi_communicator_t *comm_;
    RankLayout layout_;
    int position_;
    std::unique_ptr<Transport> transport_;
    std::unique_ptr<Transport> device_transport_; // device-direct mode: wraps transport_
    std::unique_ptr<Transport> node_transport_;   // single-copy node dimensions: wraps transport_
    HostMemory memory_;
    std::unique_ptr<Engine> engine_;
    // Under MPI_THREAD_MULTIPLE one thread may start or run a collective on the
    // communicator while another's progress loop drives the calls in flight on it (MPI
    // orders a communicator's collectives, not the progress of other threads): every use of
    // the engine and its transport, the plan cache, the load carried and the trace holds
    // this lock.
    std::recursive_mutex engine_lock_;
    PlanCache cache_;
    std::ofstream trace_; // open: every call's stage timings are appended
    long traced_calls_ = 0;
    uint64_t driven_pass_ = 0; // the progress callback's pass that last drove the engine
    // What the last call left the next one's load tracker: a nonblocking call's
    // Plan::carried_load, nothing after a blocking call. Every rank starts a communicator's
    // collectives in the same order, so every rank plans from the same value.
    std::vector<double> carried_load_;
    // Plans and starts a call; `nonblocking`: calls after it may run beside it.
    std::unique_ptr<StartedRun> begin(const PlanRequest &req, char *work, Reducer &reducer,
                                      const RunOptions &options, bool nonblocking);
};

// The module's context once its set-up ended; nullptr while it runs or when themis
// declined the communicator.
Context *context_of(const mca_coll_themis_module_t *module);

// Set-up's agreement: true on every rank when `ok` is true on every rank (collective).
bool all_agree(mca_coll_themis_module_t *m, ompi_communicator_t *comm, bool ok);

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
    themis_context() = default;
    themis_context(const themis_context &) = delete;
    themis_context &operator=(const themis_context &) = delete;
    ~themis_context();
};
