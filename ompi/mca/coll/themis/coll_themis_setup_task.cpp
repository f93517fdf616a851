// coll_themis_setup_task.cpp: set-ups as tasks advanced from the progress loop (see
// coll_themis_setup_task.h): the task's own stack, the progress callback that resumes
// tasks and the polls inside them that step aside, held calls, and the private duplicate
// and exchanges every step runs on.
#include "coll_themis_prelude.h"

#include "coll_themis_setup_task.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coll_themis_context.h"
#include "cuda/buffers.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define THEMIS_ASAN_FIBERS 1
#endif

namespace themis {
namespace {

// The private duplicate's context id is agreed over the parent by point-to-point messages
// with a tag of its own (Open MPI's group mode, as MPI_Comm_create_group): negative, as
// collectives' tags are, far below where the collective components' tags run (libnbc's
// count down from -27 by one per call on a communicator), and within the 24 bits pml/ucx
// carries. One per parent: Open MPI orders concurrent id agreements by a priority made from
// the tag (sign-extended over the parent's id: the tag alone), so set-ups of different
// communicators must not share one, or rounds of two agreements interleave and fail.
constexpr int kSetupTagBase = -(1 << 22);
constexpr uint32_t kSetupTagSpan = 1 << 16;
int setup_tag(ompi_communicator_t *parent) {
    return kSetupTagBase - int(themis_comm_id(parent) % kSetupTagSpan);
}

// ---------------------------------------------------------------- the task's own stack
// A body run on a stack of its own: resume() runs it until it steps aside (yield(), from
// inside) or ends. Never resumed from inside another one.
class Fiber {
  public:
    explicit Fiber(std::function<void()> body) : body_(std::move(body)) {
        stack_ = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (stack_ == MAP_FAILED) throw std::runtime_error("no memory for a set-up stack");
        mprotect(stack_, kGuardBytes, PROT_NONE); // an overflow faults instead of corrupting
        getcontext(&self_);
        self_.uc_stack.ss_sp = stack_;
        self_.uc_stack.ss_size = kStackBytes;
        self_.uc_link = nullptr;
        const auto p = reinterpret_cast<uintptr_t>(this);
        makecontext(&self_, reinterpret_cast<void (*)()>(&Fiber::entry), 2,
                    unsigned(p & 0xffffffffu), unsigned(p >> 32));
    }
    ~Fiber() { munmap(stack_, kStackBytes); }
    Fiber(const Fiber &) = delete;
    Fiber &operator=(const Fiber &) = delete;

    bool done() const { return done_; }
    void resume() {
        running_ = this;
        switch_to(&caller_, &self_, stack_, kStackBytes, false);
        running_ = nullptr;
    }
    // Inside a fiber: hands the thread back to the one that resumed it.
    static Fiber *running() { return running_; }
    void yield() { switch_to(&self_, &caller_, caller_bottom_, caller_size_, true); }

  private:
    // Deep enough for what a set-up calls (UCX and CUDA initialisation); only the pages
    // touched are ever backed by memory.
    static constexpr size_t kStackBytes = size_t(8) << 20;
    static constexpr size_t kGuardBytes = 4096;

    static void entry(unsigned lo, unsigned hi) {
        auto *f = reinterpret_cast<Fiber *>(uintptr_t(lo) | (uintptr_t(hi) << 32));
        f->arrived();
        f->body_(); // catches everything itself
        f->done_ = true;
        f->leave_for_good();
    }
    // `inside`: called on the fiber's stack; when it is resumed, AddressSanitizer (where
    // built with it) learns the resumer's stack, the one the next yield goes back to.
    void switch_to(ucontext_t *from, ucontext_t *to, const void *to_bottom, size_t to_size,
                   bool inside) {
#if THEMIS_ASAN_FIBERS
        void *fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, to_bottom, to_size);
        swapcontext(from, to);
        __sanitizer_finish_switch_fiber(fake, inside ? &caller_bottom_ : nullptr,
                                        inside ? &caller_size_ : nullptr);
#else
        (void)to_bottom;
        (void)to_size;
        (void)inside;
        swapcontext(from, to);
#endif
    }
    void arrived() {
#if THEMIS_ASAN_FIBERS
        __sanitizer_finish_switch_fiber(nullptr, &caller_bottom_, &caller_size_);
#endif
    }
    void leave_for_good() {
#if THEMIS_ASAN_FIBERS
        __sanitizer_start_switch_fiber(nullptr, caller_bottom_, caller_size_);
#endif
        setcontext(&caller_);
    }

    std::function<void()> body_;
    void *stack_ = nullptr;
    ucontext_t self_{}, caller_{};
    const void *caller_bottom_ = nullptr;
    size_t caller_size_ = 0;
    bool done_ = false;
    static thread_local Fiber *running_;
};
thread_local Fiber *Fiber::running_ = nullptr;

// ------------------------------------------------------------------------------ tasks
struct SetupTask {
    mca_coll_themis_module_t *m;
    ompi_communicator_t *comm;
    bool device_buffers;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    int rounds = 0; // its collective exchanges (count_setup_round)
    std::thread::id owner = std::this_thread::get_id();
    std::unique_ptr<Fiber> fiber;
    std::unique_ptr<Context> result;
    // Calls held until it ends, in the order they came; each one's request owns it, and
    // cannot complete before it is launched.
    std::vector<Call *> held;
#if THEMIS_HAVE_CUDA
    void *cuda_context = cuda::current_context(); // the set-up's device work runs there
#endif
};

std::mutex tasks_lock; // the list, and each task's held calls
std::vector<std::unique_ptr<SetupTask>> &tasks() {
    static std::vector<std::unique_ptr<SetupTask>> all;
    return all;
}
bool registered = false;                   // the progress callback
thread_local SetupTask *resumed = nullptr; // the task this thread runs, while it runs
// Tasks in the list: the progress callback, called on every poll of the whole process,
// returns at once without the lock while there are none.
std::atomic<int> task_count{0};

// The task's body: the set-up (Context::create makes the private duplicate where it needs
// one); every failure ends in a declined communicator (said by Context::create, or here).
void run_setup(SetupTask &task) {
    try {
        task.result = Context::create(task.m, task.comm, task.device_buffers);
    } catch (const std::exception &e) {
        LogEvent("declined")
            .add("reason", "setup_failed")
            .add("where", "here")
            .add("why", e.what())
            .emit(1, task.comm);
    }
}

// The task ended: the communicator gets its context (or is declined) and every held call
// is launched, in order, before any later call can start.
void conclude(SetupTask &task) {
    mca_coll_themis_module_t *m = task.m;
    themis_context &state = *m->context;
    state.context = std::move(task.result);
    if (!state.context && state.dup) state.fallback = mca_coll_themis_fallback_new(state.dup);
    std::vector<Call *> held;
    {
        std::lock_guard<std::mutex> hold(tasks_lock);
        m->setup_state = state.context ? THEMIS_SETUP_READY : THEMIS_SETUP_DECLINED;
        held.swap(task.held);
    }
    LogEvent("setup_end")
        .add("state", state.context ? "ready" : "declined")
        .add("source", state.context ? state.context->setup_source() : "new")
        .add("rounds", task.rounds)
        .add("seconds",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - task.start).count(),
             "%.6f")
        .emit(1, task.comm);
    if (!held.empty())
        LogEvent("held")
            .add("calls", held.size())
            .add("on", state.context ? "themis" : "below")
            .emit(1, task.comm);
    for (Call *call : held) call->launch();
    OBJ_RELEASE(task.comm);
}

// Resumes `task` until it steps aside or ends; true when it ended.
bool advance(SetupTask &task) {
#if THEMIS_HAVE_CUDA
    cuda::ContextScope scope(task.cuda_context);
#endif
    resumed = &task;
    task.fiber->resume();
    resumed = nullptr;
    return task.fiber->done();
}

// The progress callback. Inside a set-up it steps aside: the task waits, the thread goes
// back to whoever resumed it. Outside, it advances every set-up this thread started (a
// task keeps to its thread: its frames may hold that thread's state).
int progress_setups() {
    if (Fiber *f = Fiber::running()) {
        f->yield();
        return 0;
    }
    thread_local bool inside = false; // a launch below that polls the loop again
    if (inside || task_count.load(std::memory_order_acquire) == 0) return 0;
    std::vector<SetupTask *> mine;
    {
        std::lock_guard<std::mutex> hold(tasks_lock);
        for (const auto &t : tasks())
            if (t->owner == std::this_thread::get_id()) mine.push_back(t.get());
    }
    if (mine.empty()) return 0;
    inside = true;
    int ended = 0;
    for (SetupTask *t : mine) {
        if (!advance(*t)) continue;
        conclude(*t);
        std::lock_guard<std::mutex> hold(tasks_lock);
        auto &all = tasks();
        all.erase(
            std::find_if(all.begin(), all.end(), [&](const auto &p) { return p.get() == t; }));
        task_count.fetch_sub(1, std::memory_order_release);
        ++ended;
    }
    inside = false;
    return ended;
}

} // namespace

ompi_communicator_t *private_duplicate(ompi_communicator_t *comm) {
    ompi_communicator_t *dup = nullptr;
    if (themis_comm_set_intra(&dup, comm) != OMPI_SUCCESS)
        throw std::runtime_error("making the private communicator failed");
    int tag = setup_tag(comm);
    ompi_request_t *request = nullptr;
    auto wait = [&](int rc, const char *what) {
        if (rc == OMPI_SUCCESS) {
            while (!REQUEST_COMPLETE(request)) opal_progress();
            rc = request->req_status.MPI_ERROR;
            ompi_comm_request_return(reinterpret_cast<ompi_comm_request_t *>(request));
        }
        if (rc != OMPI_SUCCESS) throw std::runtime_error(what);
    };
    try {
        wait(ompi_comm_nextcid_nb(dup, comm, nullptr, &tag, nullptr, false, OMPI_COMM_CID_GROUP,
                                  &request),
             "agreeing on the private communicator's id failed");
    } catch (...) {
        OBJ_RELEASE(dup);
        throw;
    }
    snprintf(dup->c_name, MPI_MAX_OBJECT_NAME, "themis private %u of %u", themis_comm_id(dup),
             themis_comm_id(comm));
    // Its collectives are the module below's: they never come back to themis.
    if (dup->super.s_info == nullptr) dup->super.s_info = OBJ_NEW(opal_info_t);
    opal_info_set(dup->super.s_info, "ompi_comm_coll_preference", "^themis");
    wait(ompi_comm_activate_nb(&dup, comm, nullptr, &tag, nullptr, false, OMPI_COMM_CID_GROUP,
                               &request),
         "activating the private communicator failed");
    return dup;
}

void begin_setup(mca_coll_themis_module_t *m, ompi_communicator_t *comm, bool device_buffers) {
    if (m->setup_state != THEMIS_SETUP_PENDING) return;
    m->setup_state = THEMIS_SETUP_RUNNING;
    m->context = new themis_context;
    LogEvent("setup").add("buffers", device_buffers ? "device" : "host").emit(1, comm);
    auto task = std::make_unique<SetupTask>();
    SetupTask *t = task.get();
    t->m = m;
    t->comm = comm;
    t->device_buffers = device_buffers;
    OBJ_RETAIN(comm);
    t->fiber = std::make_unique<Fiber>([t] { run_setup(*t); });
    {
        std::lock_guard<std::mutex> hold(tasks_lock);
        tasks().push_back(std::move(task));
        task_count.fetch_add(1, std::memory_order_release);
        if (!registered) {
            opal_progress_register(progress_setups);
            registered = true;
        }
    }
    // Its first step starts now; the call goes on when it first waits.
    opal_progress();
}

void finish_setup(mca_coll_themis_module_t *m) {
    while (m->setup_state == THEMIS_SETUP_RUNNING) opal_progress();
}

void hold_until_setup(mca_coll_themis_module_t *m, Call &call, Launch launch) {
    // The set-up needs the communicator until then, even if the user frees it.
    call.hold(std::move(launch), m->comm);
    {
        std::lock_guard<std::mutex> hold(tasks_lock);
        if (m->setup_state == THEMIS_SETUP_RUNNING) {
            for (const auto &t : tasks())
                if (t->m == m) t->held.push_back(&call);
            return;
        }
    }
    call.launch(); // it ended meanwhile (another thread)
}

void count_setup_round() {
    if (resumed) ++resumed->rounds;
}

void setup_wait(ompi_request_t *request, const char *what) {
    count_setup_round();
    while (!REQUEST_COMPLETE(request)) opal_progress();
    const int rc = request->req_status.MPI_ERROR;
    ompi_request_free(&request);
    if (rc != OMPI_SUCCESS) throw std::runtime_error(what);
}

void setup_allreduce(mca_coll_themis_module_t *m, const void *in, void *out, int count,
                     ompi_datatype_t *type, ompi_op_t *op) {
    ompi_communicator_t *dup = m->context->dup;
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallreduce(in, out, count, type, op, dup, &request,
                                     dup->c_coll->coll_iallreduce_module) != OMPI_SUCCESS)
        throw std::runtime_error("a set-up reduction failed to start");
    setup_wait(request, "a set-up reduction failed");
}

void setup_allgather(mca_coll_themis_module_t *m, const void *mine, void *all, int bytes) {
    ompi_communicator_t *dup = m->context->dup;
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallgather(mine, bytes, &ompi_mpi_byte.dt, all, bytes, &ompi_mpi_byte.dt,
                                     dup, &request,
                                     dup->c_coll->coll_iallgather_module) != OMPI_SUCCESS)
        throw std::runtime_error("a set-up exchange failed to start");
    setup_wait(request, "a set-up exchange failed");
}

} // namespace themis

extern "C" void mca_coll_themis_setup_finalize(void) {
    if (themis::registered) opal_progress_unregister(themis::progress_setups);
    themis::registered = false;
}
