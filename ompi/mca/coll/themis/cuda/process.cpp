// cuda/process.cpp: the process's CUDA state (see process.h).
#include "cuda/process.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "coll_themis.h"
#include "cuda/driver.h"

namespace themis {
namespace cuda {

namespace {

struct Process {
    std::mutex lock; // set-up only; like the rest of themis, calls are not concurrent
    std::map<CUcontext, std::unique_ptr<Device>> devices;
    std::unique_ptr<HostMemory> staging;
    std::unique_ptr<HostMemory> views;
    HostMemory bounce;
};
Process *process = nullptr;

Process &proc() {
    static std::once_flag once;
    std::call_once(once, [] { process = new Process; });
    return *process;
}

HostMemory &pinned_pool(std::unique_ptr<HostMemory> &pool, size_t cache_limit) {
    std::lock_guard<std::mutex> guard(proc().lock);
    if (!pool) pool = std::make_unique<HostMemory>(kPinnedAllocator, cache_limit);
    return *pool;
}

// Pinned memory kept per pool: coll_themis_staging_bytes.
size_t pinned_limit() { return std::max<size_t>(mca_coll_themis_component.staging_bytes, 1); }

} // namespace

Device &current_device() {
    CUcontext ctx = nullptr;
    check(drv().cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
    if (!ctx) throw std::runtime_error("CUDA: no context is current on this thread");
    Process &p = proc();
    std::lock_guard<std::mutex> guard(p.lock);
    auto &d = p.devices[ctx];
    if (!d) d = std::make_unique<Device>();
    return *d;
}

HostMemory &staging_memory() { return pinned_pool(proc().staging, pinned_limit()); }

// Host views are kept within the same bound, and at least 16 MiB: pinned allocations are
// slow, and a call that allocates and frees its views each time spends most of its time
// there (docs/cuda.md; the H100 run in bench/results/gpu_h100_device.txt).
HostMemory &view_memory() {
    return pinned_pool(proc().views, std::max(pinned_limit(), size_t(16) << 20));
}

HostMemory &bounce_memory() { return proc().bounce; }

void release_process() {
    if (!process) return;
    process->devices.clear();
    process->staging.reset();
    process->views.reset();
}

} // namespace cuda
} // namespace themis
