// coll_themis_setup_task.cpp: set-ups as tasks advanced from the progress loop (see
// coll_themis_setup_task.h): the task list, the progress callback that resumes tasks on
// their own stacks (coll_themis_fiber.h) and the polls inside them that step aside, and
// held calls.
#include "coll_themis_prelude.h"

#include "coll_themis_setup_task.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coll_themis_context.h"
#include "coll_themis_fiber.h"
#include "cuda/buffers.h"
#include "opal/runtime/opal_progress.h"

namespace themis {
namespace {

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
    void *cuda_context = cuda::current_context(); // the set-up's device work runs there
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
    cuda::ContextScope scope(task.cuda_context);
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

} // namespace themis

extern "C" void mca_coll_themis_setup_finalize(void) {
    if (themis::registered) opal_progress_unregister(themis::progress_setups);
    themis::registered = false;
}
