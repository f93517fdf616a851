// engine: runs a compiled plan over a Transport.
//
// Each dimension issues its ops strictly in plan order, up to K (max_active) at a time;
// an op starts once it is at the head of its dimension's queue, a slot is free, the
// chunk's previous stage has completed here and, unless the dimension is idle, the
// stage's bytes fit under max_active_bytes together with those already running there.
// The byte bound exists because a dimension's stages to one peer share one connection,
// which carries their data in the order it entered: past the bytes that keep a link busy,
// more stages in flight only delay the one the plan wants done first (the default bound's
// measurement: docs/design.md, "Why the defaults"). Because every rank of a dimension group
// issues the same ops in the same order, the groups never wait on each other in a cycle.
//
// One Engine per communicator: it numbers the ops of each dimension across calls, so the
// tags of concurrent or successive collectives never meet.
//
// Collectives in flight together (nonblocking calls) share the dimensions' queues: each
// dimension has one K and one byte bound for all of them and serves them in the order they
// were started (MPI makes every rank start a communicator's collectives in the same
// order); within one collective, every rank issues its ops in its plan's order. A later
// collective may start an op on a dimension while the earlier ones' next ops there wait
// for their chunks' previous stages, so that each call's pipeline start fills the slots
// the earlier call's pipeline end leaves idle (ordering.h models it: CrossCall::FillIdle;
// for calls of few chunks it matters most). What keeps that free of deadlock: the oldest
// collective in flight on this rank may always use a slot (later ones take at most K - 1)
// and counts only its own stages against the byte bound. The oldest collective not yet
// complete everywhere is the oldest in flight on every rank that still runs it, so its
// ops, issued in the same order everywhere, can always start once their chunks allow: it
// completes, and then the next one becomes the oldest.
//
// A call whose data does not simply sit in one host buffer (device memory staged through
// host buffers, see staging.h) passes RunOptions: its own Memory for temporaries, and
// ChunkHooks that say when a chunk's data is in place and where its bytes are. The ops,
// their order and their messages stay exactly those of the plan, so ranks that use hooks
// and ranks that do not run the same collective together.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "plan.h"
#include "stage.h"
#include "topology.h"
#include "transport.h"

namespace themis {

// Per-chunk hooks of one execution: they let a caller keep a chunk's bytes elsewhere than
// in the work buffer (staging.h) and say when they are in place.
class ChunkHooks {
  public:
    virtual ~ChunkHooks() = default;
    // Called once, before anything else, with the plan the execution runs.
    virtual void begin(const Plan &plan) = 0;
    // Whether `op` may start now: asked once the op is otherwise ready to start (head of its
    // dimension's queue, a slot and room under the byte bound free, its chunk's previous
    // stage done). False keeps the op, and the ops behind it in its queue, waiting; it is
    // asked again on a later progress().
    virtual bool ready(const PlanOp &op) = 0;
    // Where the work buffer's bytes `range` of `op`'s chunk are while `op` runs (between
    // ready() returning true and stage_done()); `range` is one of op.ranges.
    virtual char *locate(const PlanOp &op, const ByteRange &range) = 0;
    // `op` has completed on this rank.
    virtual void stage_done(const PlanOp &op) = 0;
    // The last stage of `chunk` has completed on this rank (after its stage_done).
    virtual void chunk_finished(int chunk) = 0;
};

// How one call reaches its data; the defaults are the engine's Memory and the work buffer.
struct RunOptions {
    Memory *memory = nullptr;    // temporaries and packing copies
    ChunkHooks *hooks = nullptr; // set: every byte is found through hooks->locate()
    // Set: every op's ready, start and end times on this rank, seconds from the start of
    // the call, appended in completion order (trace.h writes them as CSV).
    std::vector<StageRun> *trace = nullptr;
};

class Engine;

// One collective in flight on an engine: progress() until it returns true. It joins its
// engine's queues when started and leaves them when done, reset or destroyed. One object
// runs one collective after another (start() again once done): the second and later runs
// of a plan no larger than an earlier one allocate nothing.
class Execution {
  public:
    // Idle until start().
    explicit Execution(Engine &engine) : engine_(engine) {}
    // Starts at once.
    Execution(Engine &engine, std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
              const RunOptions &options = {});
    ~Execution();
    Execution(const Execution &) = delete;
    Execution &operator=(const Execution &) = delete;
    // Runs `plan` over the work buffer, `reducer` applying the call's op; the previous run,
    // if any, must be done (or reset). Makes no progress itself (Engine::start does).
    void start(std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
               const RunOptions &options = {});
    // Progresses every collective of the engine; true once this one is complete.
    bool progress();
    bool done() const { return remaining_ == 0; }
    // Leaves the engine's queues (a run not complete is abandoned: its stages are dropped)
    // and lets go of the plan; start() may run another.
    void reset();
    const Plan *plan() const { return plan_.get(); }
    Engine &engine() const { return engine_; }

  private:
    friend class Engine;
    enum class Next { Started, ChunkWaits, Blocked, None };
    // Starts this execution's next op on dimension d if it may start now: ChunkWaits when
    // the op waits for its chunk's previous stage, Blocked when for a slot, bytes under the
    // bound or its data; None when it has no more ops there. `oldest`: no execution of the
    // engine started before this one is still in flight.
    Next start_next(int d, bool oldest);
    void finish(int op);
    double now() const;

    Engine &engine_;
    std::shared_ptr<const Plan> plan_;
    char *work_ = nullptr;
    Reducer *reducer_ = nullptr;
    Memory *memory_ = nullptr;
    ChunkHooks *hooks_ = nullptr;
    std::vector<bool> last_stage_;   // per op, with hooks: the chunk's last stage
    std::vector<size_t> next_;       // per dimension: next position in dim_queue
    std::vector<uint64_t> op_bytes_; // per op, its bytes; empty: no byte bound
    std::vector<bool> op_done_;
    std::vector<int> tag_base_; // per op
    size_t remaining_ = 0;
    bool queued_ = false; // in the engine's list of executions
    std::vector<StageRun> *trace_ = nullptr;
    std::chrono::steady_clock::time_point t0_;
    std::vector<StageRun> timing_; // per op, with a trace
};

class Engine {
  public:
    // max_active_bytes: 0 = no bound beyond max_active.
    Engine(const Topology &topo, Transport &transport, Memory &memory, int max_active,
           uint64_t max_active_bytes = 0);

    // Starts a plan over the work buffer; `reducer` applies this call's op.
    std::unique_ptr<Execution> start(std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
                                     const RunOptions &options = {});
    // Starts `execution` (idle, or done) on a plan, as above, without allocating it.
    void start(Execution &execution, std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
               const RunOptions &options = {});
    // Starts and drives a plan to completion.
    void run(std::shared_ptr<const Plan> plan, char *work, Reducer &reducer,
             const RunOptions &options = {});
    // Drives a started execution to completion (and, meanwhile, every other one): the one
    // loop that waits for a collective, the MPI glue's blocking calls included. `lock`, if
    // given, is held around each step (the engine's and its transport's), not between them.
    void wait(Execution &execution, std::recursive_mutex *lock = nullptr);
    // Advances every execution in flight; safe to call from within itself (a transport
    // that polls a progress loop which comes back here): the inner call returns at once.
    void progress();
    // Executions started and not yet complete.
    size_t in_flight() const { return executions_.size(); }

    const Topology &topology() const { return topo_; }
    Transport &transport() { return transport_; }
    Memory &memory() { return memory_; }
    int max_active() const { return max_active_; }
    uint64_t max_active_bytes() const { return max_active_bytes_; }
    // Seconds dimension d has had a stage of any execution running since the engine was made
    // (the union of its stages' intervals; the one running now up to now): the busy time
    // the rate refiner (rate_refiner.h) compares with a plan's Plan::busy.
    double busy_seconds(int d) const;

  private:
    friend class Execution;
    struct Active {
        Execution *execution;
        int op;
        uint64_t bytes; // counted against the byte bound (0 without one)
        Algorithm kind;
        std::unique_ptr<StageAlgorithm> algorithm;
    };
    // The stage algorithm for `ctx`: a finished one of its kind started over, or a new one.
    std::unique_ptr<StageAlgorithm> stage_algorithm(Algorithm kind, const StageContext &ctx);
    // Keeps a finished (or abandoned) stage algorithm for a later stage of its kind.
    void keep(Active &active);
    // Tag base of the next op issued on dimension d.
    int next_tag_base(int d);
    // The first execution in start order that is not complete, or nullptr.
    const Execution *oldest() const;
    // Starts ops on dimension d, executions in start order, while slots and bytes allow.
    void start_ready_ops(int d);
    // Whether `execution`'s next op of `bytes` may take a slot on dimension d (see above).
    bool may_start(int d, const Execution &execution, bool oldest, uint64_t bytes) const;
    // Whether a stage of `bytes` may join those running on dimension d: an idle dimension
    // takes any stage, so every stage can run.
    bool fits(int d, uint64_t bytes) const;
    // Progresses the stages running on dimension d; true when one finished.
    bool progress_active(int d);
    void forget(Execution *execution);
    // Dimension d's stage list becomes non-empty (busy) or empty (idle): its busy time.
    void mark_busy(int d);
    void mark_idle(int d);

    Topology topo_;
    Transport &transport_;
    Memory &memory_;
    int max_active_;
    uint64_t max_active_bytes_;
    std::vector<uint64_t> op_counter_;        // per dimension, across calls
    std::vector<Execution *> executions_;     // in flight, in start order
    std::vector<std::vector<Active>> active_; // per dimension, all executions' stages
    std::vector<uint64_t> active_bytes_;      // per dimension, with a byte bound
    std::vector<double> busy_total_;          // per dimension: seconds of busy intervals ended
    std::vector<std::chrono::steady_clock::time_point> busy_since_; // per dimension, when busy
    // Per algorithm (enum order): finished stage algorithms, kept so that the stages of
    // later ops and calls allocate nothing.
    std::vector<std::vector<std::unique_ptr<StageAlgorithm>>> spare_;
    bool progressing_ = false;
};

} // namespace themis
