// coll_themis_cuda.cpp: the CUDA driver at run time, device-memory detection, device and
// pinned memory, copies on streams, the reduction kernels (see coll_themis_cuda.h).
//
// Decision: the driver API only, through dlopen/dlsym; no CUDA runtime, not even the
// static one. The component then has no link-time CUDA dependency and loads anywhere; it
// needs no second copy of the runtime in processes whose application brings its own
// (any version); and a toolkit newer than the driver does not refuse to start, as the
// runtime does (the SASS in the fat binary still loads; only the PTX needs a recent
// driver). The price is a little bookkeeping: the kernels' module is loaded per context,
// and the function pointers are looked up by name, with the ABI versions cuda.h selects.
#include "coll_themis_cuda.h"
#include "coll_themis_cuda_driver.h"
#include "coll_themis_cuda_ipc.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <cuda.h>

#include "coll_themis_ucx.h"
#include "cuda/reduce_kernels.h"
#include "host_memory.h"

#include "opal/util/output.h"
#include "opal/util/show_help.h"

namespace themis {
namespace cuda {

namespace {

const mca_coll_themis_component_t &params() { return mca_coll_themis_component; }

// ---------------------------------------------------------------------------------------
// The driver, opened once

bool fake_driver = false;

// nullptr when there is no usable driver (then no process memory is device memory).
const Driver *load_driver() {
    // coll_themis_cuda_driver names the library: by default the soname the loader finds.
    // A path loads exactly that file, even where another libcuda.so.1 is already in the
    // process (the tests' emulated driver beside a real one; dlopen by soname would
    // return the library already loaded under that name).
    const char *name = params().cuda_driver && params().cuda_driver[0] ? params().cuda_driver
                                                                       : "libcuda.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        opal_output_verbose(1, params().output,
                            "coll:themis: no CUDA driver (%s): every buffer is host memory", dlerror());
        return nullptr;
    }
    fake_driver = dlsym(lib, "themis_fake_cuda_counters") != nullptr;
    static Driver d;
    std::string missing;
#define THEMIS_CU_LOAD(fn)                                                                       \
    d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(lib, THEMIS_CU_NAME(fn)));                     \
    if (!d.fn) missing += std::string(missing.empty() ? "" : ", ") + THEMIS_CU_NAME(fn);
    THEMIS_CU_FUNCTIONS(THEMIS_CU_LOAD)
#undef THEMIS_CU_LOAD
    // Optional: without them (an old driver) there is no device-direct node dimension.
#define THEMIS_CU_LOAD_OPTIONAL(fn)                                                              \
    d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(lib, THEMIS_CU_NAME(fn)));
    THEMIS_CU_IPC_FUNCTIONS(THEMIS_CU_LOAD_OPTIONAL)
#undef THEMIS_CU_LOAD_OPTIONAL
    if (!missing.empty()) {
        mca_coll_themis_show_help("cuda-driver-unusable", missing.c_str());
        return nullptr; // never dlclose: the application may hold the same library
    }
    return &d;
}

} // namespace

const Driver *driver() {
    if (params().cuda == THEMIS_CUDA_OFF) return nullptr;
    static const Driver *d = load_driver();
    return d;
}

const Driver &drv() {
    const Driver *d = driver();
    if (!d) throw std::logic_error("CUDA used without a driver");
    return *d;
}

void check(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return;
    const char *text = nullptr;
    if (drv().cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "unknown error";
    throw std::runtime_error(std::string("CUDA ") + what + ": " + text + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

bool driver_is_emulated() { return driver() && fake_driver; }

namespace {

// ---------------------------------------------------------------------------------------
// Memory with a size-keyed cache of released buffers (as HostMemory), over any allocator

class CachedMemory : public Memory {
  public:
    explicit CachedMemory(size_t cache_limit) : limit_(cache_limit) {}
    ~CachedMemory() override = default;
    void *acquire(size_t bytes) override {
        auto it = free_.lower_bound(bytes);
        if (it != free_.end() && it->first <= 2 * bytes) { // not much larger than needed
            void *buf = it->second;
            cached_ -= it->first;
            size_of_[buf] = it->first;
            free_.erase(it);
            outstanding_ += size_of_[buf];
            return buf;
        }
        void *buf = allocate(bytes ? bytes : 1);
        size_of_[buf] = bytes ? bytes : 1;
        outstanding_ += size_of_[buf];
        return buf;
    }
    void raise_limit(size_t limit) { limit_ = std::max(limit_, limit); }
    void release(void *buf, size_t) override {
        auto it = size_of_.find(buf);
        const size_t size = it->second;
        size_of_.erase(it);
        outstanding_ -= size;
        // Keep it while what is held in all (in use and cached) stays within the limit.
        if (cached_ + size + outstanding_ > limit_) {
            deallocate(buf);
            return;
        }
        free_.emplace(size, buf);
        cached_ += size;
    }
    // Frees the cached buffers (the driver may be gone at exit: errors are ignored).
    void drop() {
        for (auto &kv : free_) deallocate(kv.second);
        free_.clear();
        cached_ = 0;
    }

  protected:
    virtual void *allocate(size_t bytes) = 0;
    virtual void deallocate(void *buf) = 0;

  private:
    size_t limit_;
    std::multimap<size_t, void *> free_;
    std::map<void *, size_t> size_of_;
    size_t cached_ = 0;
    size_t outstanding_ = 0;
};

// Page-locked host memory, usable by every context: asynchronous copies need it.
class PinnedMemory : public CachedMemory {
  public:
    using CachedMemory::CachedMemory;
    ~PinnedMemory() override { drop(); }
    void copy(void *dst, const void *src, size_t bytes) override {
        if (bytes && dst != src) std::memcpy(dst, src, bytes);
    }

  protected:
    void *allocate(size_t bytes) override {
        void *p = nullptr;
        check(drv().cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc (staging)");
        return p;
    }
    void deallocate(void *buf) override { (void) drv().cuMemFreeHost(buf); }
};

// ---------------------------------------------------------------------------------------
// Per context: streams, copies, device memory, the kernels

// Copies in each direction on a stream of their own (PCIe copies both ways at once);
// fences are events, polled in order.
class StreamCopier : public AsyncCopier {
  public:
    StreamCopier(CUstream to_staging, CUstream to_home) : stream_{to_staging, to_home} {}
    ~StreamCopier() override {
        for (auto &q : pending_)
            for (auto &p : q) (void) drv().cuEventDestroy(p.event);
        for (CUevent e : spare_) (void) drv().cuEventDestroy(e);
    }
    void copy(Direction dir, void *dst, const void *src, size_t bytes) override {
        if (!bytes) return;
        check(drv().cuMemcpyAsync(dptr(dst), dptr(src), bytes, stream_[dir]), "cuMemcpyAsync (staging)");
        dirty_[dir] = true;
    }
    Fence fence(Direction dir) override {
        if (!dirty_[dir]) return last_[dir];
        CUevent e = nullptr;
        if (spare_.empty()) {
            check(drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        } else {
            e = spare_.back();
            spare_.pop_back();
        }
        check(drv().cuEventRecord(e, stream_[dir]), "cuEventRecord");
        pending_[dir].push_back({++last_[dir], e});
        dirty_[dir] = false;
        return last_[dir];
    }
    bool passed(Direction dir, Fence fence) override {
        auto &q = pending_[dir];
        while (!q.empty()) {
            const CUresult r = drv().cuEventQuery(q.front().event);
            if (r == CUDA_ERROR_NOT_READY) break;
            check(r, "cuEventQuery (staging copy)");
            done_[dir] = q.front().seq;
            spare_.push_back(q.front().event);
            q.pop_front();
        }
        return done_[dir] >= fence;
    }
    void wait_all() override {
        for (int dir = 0; dir < 2; ++dir) {
            check(drv().cuStreamSynchronize(stream_[dir]), "cuStreamSynchronize (staging)");
            passed(static_cast<Direction>(dir), last_[dir]);
        }
    }

  private:
    struct Pending {
        Fence seq;
        CUevent event;
    };
    CUstream stream_[2];
    std::deque<Pending> pending_[2];
    std::vector<CUevent> spare_;
    Fence last_[2] = {0, 0}, done_[2] = {0, 0};
    bool dirty_[2] = {false, false};
};

class DeviceMemory : public CachedMemory {
  public:
    DeviceMemory(size_t cache_limit, CUstream stream) : CachedMemory(cache_limit), stream_(stream) {}
    ~DeviceMemory() override { drop(); }
    void copy(void *dst, const void *src, size_t bytes) override {
        if (!bytes || dst == src) return;
        check(drv().cuMemcpyAsync(dptr(dst), dptr(src), bytes, stream_), "cuMemcpyAsync (device)");
        check(drv().cuStreamSynchronize(stream_), "cuStreamSynchronize (device copy)");
    }

  protected:
    void *allocate(size_t bytes) override {
        CUdeviceptr p = 0;
        check(drv().cuMemAlloc(&p, bytes), "cuMemAlloc (device temporary)");
        return reinterpret_cast<void *>(p);
    }
    void deallocate(void *buf) override { (void) drv().cuMemFree(dptr(buf)); }

  private:
    CUstream stream_;
};

// Device temporaries kept for reuse beyond a call, at most (device memory is precious).
constexpr size_t kDeviceCacheLimit = size_t(256) << 20;

class Device {
  public:
    Device() {
        // Blocking streams (not CU_STREAM_NON_BLOCKING): they wait for work the application
        // left on the legacy default stream, the friendly behaviour for MPI callers.
        for (CUstream &s : streams_) check(drv().cuStreamCreate(&s, CU_STREAM_DEFAULT), "cuStreamCreate");
        copier_ = std::make_unique<StreamCopier>(streams_[0], streams_[1]);
        memory_ = std::make_unique<DeviceMemory>(kDeviceCacheLimit, streams_[2]);
    }
    ~Device() {
        copier_.reset();
        memory_.reset();
        if (module_) (void) drv().cuModuleUnload(module_);
        for (CUstream s : streams_) (void) drv().cuStreamDestroy(s);
    }
    AsyncCopier &copier() { return *copier_; }
    DeviceMemory &memory() { return *memory_; }
    CUstream work() const { return streams_[2]; }

    // The kernel for (op, type), or nullptr when the kernels cannot be loaded here.
    CUfunction kernel(int op, int type) {
        if (!module_tried_) load_kernels();
        return module_ ? functions_[op][type] : nullptr;
    }

  private:
    void load_kernels() {
        module_tried_ = true;
        CUresult r = drv().cuModuleLoadData(&module_, themis_reduce_fatbin);
        std::string why;
        if (r != CUDA_SUCCESS) {
            const char *text = nullptr;
            drv().cuGetErrorString(r, &text);
            why = std::string("cuModuleLoadData: ") + (text ? text : "unknown error");
            module_ = nullptr;
        }
        for (int op = 0; module_ && op < THEMIS_REDUCE_OPS; ++op)
            for (int t = 0; module_ && t < THEMIS_REDUCE_TYPES; ++t) {
                const std::string name = std::string("themis_reduce_") + themis_reduce_op_name(op) +
                                         "_" + themis_reduce_type_name(t);
                if (drv().cuModuleGetFunction(&functions_[op][t], module_, name.c_str()) != CUDA_SUCCESS) {
                    why = "kernel " + name + " missing";
                    (void) drv().cuModuleUnload(module_);
                    module_ = nullptr;
                }
            }
        if (!module_) {
            static bool shown = false; // once per process, not per context
            if (!shown) mca_coll_themis_show_help("cuda-kernels-unavailable", why.c_str());
            shown = true;
        }
    }

    CUstream streams_[3] = {nullptr, nullptr, nullptr}; // copies in, copies out, the rest
    std::unique_ptr<StreamCopier> copier_;
    std::unique_ptr<DeviceMemory> memory_;
    CUmodule module_ = nullptr;
    bool module_tried_ = false;
    CUfunction functions_[THEMIS_REDUCE_OPS][THEMIS_REDUCE_TYPES] = {};
};

// Everything CUDA the process holds, released at component close.
struct Process {
    std::mutex lock; // set-up only; like the rest of themis, calls are not concurrent
    std::map<CUcontext, std::unique_ptr<Device>> devices;
    std::unique_ptr<PinnedMemory> pinned;
    HostMemory bounce; // host copies for host reductions of device data
    // Host copies of device buffers for the previous module (small calls): pinned, so a
    // copy is one DMA on the work stream, and kept between calls (no allocation per call).
    std::unique_ptr<PinnedMemory> views;
};
Process *process = nullptr;

Process &proc() {
    static std::once_flag once;
    std::call_once(once, [] { process = new Process; });
    return *process;
}

// The state of the calling thread's current context (set by on_device when missing).
Device &device() {
    CUcontext ctx = nullptr;
    check(drv().cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
    if (!ctx) throw std::runtime_error("CUDA: no context is current on this thread");
    Process &p = proc();
    std::lock_guard<std::mutex> guard(p.lock);
    auto &d = p.devices[ctx];
    if (!d) d = std::make_unique<Device>();
    return *d;
}

PinnedMemory &pinned() {
    Process &p = proc();
    std::lock_guard<std::mutex> guard(p.lock);
    if (!p.pinned) p.pinned = std::make_unique<PinnedMemory>(std::max<size_t>(params().staging_bytes, 1));
    return *p.pinned;
}

// Host views of small device buffers are kept up to this many bytes (pinned memory is
// precious too; larger views still work, their memory is just not kept).
constexpr size_t kViewCacheLimit = size_t(16) << 20;

PinnedMemory &views() {
    Process &p = proc();
    std::lock_guard<std::mutex> guard(p.lock);
    if (!p.views) p.views = std::make_unique<PinnedMemory>(kViewCacheLimit);
    return *p.views;
}

// ---------------------------------------------------------------------------------------
// (op, datatype) -> kernel

int kernel_op(ompi_op_t *op) {
    if (op == &ompi_mpi_op_sum.op) return THEMIS_REDUCE_SUM;
    if (op == &ompi_mpi_op_prod.op) return THEMIS_REDUCE_PROD;
    if (op == &ompi_mpi_op_min.op) return THEMIS_REDUCE_MIN;
    if (op == &ompi_mpi_op_max.op) return THEMIS_REDUCE_MAX;
    return -1;
}

// The kernel type of a predefined datatype, by the C type Open MPI's op framework uses
// for it; -1 for everything else (pairs, complex, bool, long double, Fortran types).
int kernel_type(ompi_datatype_t *dtype) {
    if (!ompi_datatype_is_predefined(dtype) || dtype->id < 0 ||
        dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED)
        return -1;
    switch (ompi_op_ddt_map[dtype->id]) {
    case OMPI_OP_BASE_TYPE_INT8_T: return THEMIS_REDUCE_I8;
    case OMPI_OP_BASE_TYPE_UINT8_T: return THEMIS_REDUCE_U8;
    case OMPI_OP_BASE_TYPE_INT16_T: return THEMIS_REDUCE_I16;
    case OMPI_OP_BASE_TYPE_UINT16_T: return THEMIS_REDUCE_U16;
    case OMPI_OP_BASE_TYPE_INT32_T: return THEMIS_REDUCE_I32;
    case OMPI_OP_BASE_TYPE_UINT32_T: return THEMIS_REDUCE_U32;
    case OMPI_OP_BASE_TYPE_INT64_T: return THEMIS_REDUCE_I64;
    case OMPI_OP_BASE_TYPE_UINT64_T: return THEMIS_REDUCE_U64;
    case OMPI_OP_BASE_TYPE_LONG: return sizeof(long) == 8 ? THEMIS_REDUCE_I64 : THEMIS_REDUCE_I32;
    case OMPI_OP_BASE_TYPE_UNSIGNED_LONG: return sizeof(long) == 8 ? THEMIS_REDUCE_U64 : THEMIS_REDUCE_U32;
    case OMPI_OP_BASE_TYPE_FLOAT: return THEMIS_REDUCE_F32;
    case OMPI_OP_BASE_TYPE_DOUBLE: return THEMIS_REDUCE_F64;
    default: return -1;
    }
}

const int kElementSize[THEMIS_REDUCE_TYPES] = {4, 8, 2, 2, 1, 1, 2, 2, 4, 4, 8, 8};

} // namespace

// ---------------------------------------------------------------------------------------
// Public

bool on_device(const void *p) {
    if (p == nullptr || p == MPI_IN_PLACE) return false;
    const Driver *d = driver();
    if (!d) return false;
    CUmemorytype type = static_cast<CUmemorytype>(0);
    unsigned int managed = 0;
    CUcontext ctx = nullptr;
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_CONTEXT};
    void *data[3] = {&type, &managed, &ctx};
    // Fails with CUDA_ERROR_NOT_INITIALIZED until the application initialises CUDA: a
    // process that has not cannot own device memory. Unknown (host) pointers succeed
    // with type 0.
    if (d->cuPointerGetAttributes(3, attrs, data, dptr(p)) != CUDA_SUCCESS) return false;
    if (type != CU_MEMORYTYPE_DEVICE || managed) return false;
    // A thread that never touched CUDA has no current context (e.g. an MPI thread beside
    // the one that allocated): use the buffer's, as Open MPI's own CUDA support does.
    CUcontext current = nullptr;
    // Never throws (callers are outside any try): a failure shows in the next CUDA call.
    if (d->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == nullptr && ctx)
        (void) d->cuCtxSetCurrent(ctx);
    return true;
}

void copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return;
    Device &dev = device();
    check(drv().cuMemcpyAsync(dptr(dst), dptr(src), bytes, dev.work()), "cuMemcpyAsync");
    check(drv().cuStreamSynchronize(dev.work()), "cuStreamSynchronize (copy)");
}

bool direct(const Context &ctx) {
    if (params().cuda != THEMIS_CUDA_AUTO) return false;
    // Test hook (test/mpi/cuda_run.sh fake): an emulated driver whose device memory the
    // host can read stands for a transport that moves device memory. Never set it with
    // a real GPU: the PML would then read device memory and crash.
    // Honoured only with the emulated driver, so that a real GPU can never run it.
    static const bool test_direct = [] {
        const char *v = std::getenv("THEMIS_TEST_CUDA_DIRECT");
        return v && std::strcmp(v, "1") == 0 && driver_is_emulated();
    }();
    if (test_direct) return true;
    // The device-direct node dimension (coll_themis_cuda_ipc.h): its transport moves
    // device memory on every dimension.
    if (ctx.device_direct()) return true;
    if (std::strcmp(ctx.transport_name(), "ucx") != 0) return false;
    std::string why;
    UcxWorker *worker = process_ucx_worker(why);
    return worker && worker->supports_cuda();
}

Memory &device_memory() { return device().memory(); }

Memory &pinned_memory() { return pinned(); }

DeviceBuffer::DeviceBuffer(size_t bytes)
    : buf_(static_cast<char *>(device().memory().acquire(bytes))), bytes_(bytes) {}

DeviceBuffer::~DeviceBuffer() {
    try {
        device().memory().release(buf_, bytes_);
    } catch (...) {
    }
}

DeviceReducer::DeviceReducer(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent)
    : op_(op), dtype_(dtype), extent_(extent) {
    const int kop = kernel_op(op), ktype = kernel_type(dtype);
    if (kop < 0 || ktype < 0 || static_cast<size_t>(kElementSize[ktype]) != extent) return;
    // 8- and 16-bit integer sums stay with Open MPI: its vectorised op component
    // saturates them (ompi issue 8045), and every rank, whatever its memory, must
    // compute what the host would.
    if (kop == THEMIS_REDUCE_SUM && ktype >= THEMIS_REDUCE_I8 && ktype <= THEMIS_REDUCE_U16) return;
    kernel_ = device().kernel(kop, ktype);
    element_size_ = kElementSize[ktype];
}

void DeviceReducer::reduce(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    if (kernel_) {
        Device &dev = device();
        CUdeviceptr d = dptr(dst), s = dptr(src);
        unsigned long long n = bytes / static_cast<size_t>(element_size_);
        void *args[] = {&d, &s, &n};
        const unsigned long long blocks =
            std::min<unsigned long long>((n + THEMIS_REDUCE_THREADS - 1) / THEMIS_REDUCE_THREADS, 8192);
        check(drv().cuLaunchKernel(static_cast<CUfunction>(kernel_), static_cast<unsigned>(blocks), 1, 1,
                                   THEMIS_REDUCE_THREADS, 1, 1, 0, dev.work(), args, nullptr),
              "cuLaunchKernel (reduction)");
        // The reduced block may be sent next, by a transport that knows nothing of streams.
        check(drv().cuStreamSynchronize(dev.work()), "cuStreamSynchronize (reduction)");
        return;
    }
    // On the host, with Open MPI's function for (op, datatype): user ops included.
    HostMemory &bounce = proc().bounce;
    char *h_dst = static_cast<char *>(bounce.acquire(bytes));
    char *h_src = static_cast<char *>(bounce.acquire(bytes));
    try {
        copy(h_dst, dst, bytes);
        copy(h_src, src, bytes);
        ompi_op_reduce(op_, h_src, h_dst, bytes / extent_, dtype_);
        copy(dst, h_dst, bytes);
    } catch (...) {
        bounce.release(h_src, bytes);
        bounce.release(h_dst, bytes);
        throw;
    }
    bounce.release(h_src, bytes);
    bounce.release(h_dst, bytes);
}

StagedRun::StagedRun(const StagingRegion &source, const StagingRegion &home,
                     const StagingRegion &result) {
    StagingConfig cfg;
    cfg.source = source;
    cfg.home = home;
    cfg.result = result;
    cfg.budget = params().staging_bytes;
    cfg.max_active = params().max_active;
    stager_ = std::make_unique<Stager>(pinned(), device().copier(), cfg);
}

RunOptions StagedRun::options() {
    RunOptions o;
    o.hooks = stager_.get();
    return o;
}

void StagedRun::finish() {
    stager_->finish();
    // The budget in force may exceed the parameter (see minimum_staging_budget): keep
    // that much pinned memory for the next call rather than allocating it again.
    pinned().raise_limit(stager_->stats().budget);
    if (params().verbose >= 5) {
        const auto &s = stager_->stats();
        opal_output_verbose(5, params().output,
                            "coll:themis: staged through host memory: budget %llu B, peak %llu B, "
                            "%llu loads (%llu B), %llu evictions (%llu B), %llu B stored",
                            (unsigned long long) s.budget, (unsigned long long) s.peak_bytes,
                            (unsigned long long) s.loads, (unsigned long long) s.load_bytes,
                            (unsigned long long) s.evictions, (unsigned long long) s.eviction_bytes,
                            (unsigned long long) s.store_bytes);
    }
}

void span_of(ompi_datatype_t *dtype, size_t count, ptrdiff_t &lo, ptrdiff_t &hi) {
    lo = hi = 0;
    if (count == 0) return;
    ptrdiff_t lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    const ptrdiff_t last = static_cast<ptrdiff_t>(count - 1) * extent;
    lo = true_lb + std::min<ptrdiff_t>(0, last);
    hi = true_lb + true_extent + std::max<ptrdiff_t>(0, last);
}

HostView::HostView(const void *buf, ompi_datatype_t *dtype, size_t count, bool copy_in)
    : user_(static_cast<char *>(const_cast<void *>(buf))), view_(user_), dtype_(dtype) {
    if (!on_device(buf)) return;
    ptrdiff_t lo = 0, hi = 0;
    span_of(dtype, count, lo, hi);
    host_bytes_ = static_cast<size_t>(hi - lo);
    host_ = static_cast<char *>(views().acquire(host_bytes_));
    view_ = host_ - lo; // the user's address shifted into the copy, as datatypes expect
    // A datatype with gaps: copy_back() writes the whole span back, gaps included, so
    // they must hold the user's bytes, not ours.
    if (copy_in || !ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        try {
            copy(host_, user_ + lo, host_bytes_);
        } catch (...) {
            views().release(host_, host_bytes_);
            throw;
        }
    }
}

HostView::~HostView() {
    try {
        if (host_) views().release(host_, host_bytes_);
    } catch (...) {
    }
}

void HostView::copy_back(size_t count) {
    if (!host_) return;
    ptrdiff_t lo = 0, hi = 0;
    span_of(dtype_, count, lo, hi);
    copy(user_ + lo, view_ + lo, static_cast<size_t>(hi - lo));
}

} // namespace cuda
} // namespace themis

extern "C" void mca_coll_themis_cuda_finalize(void) {
    using namespace themis::cuda;
    if (!process) return;
    // Before MPI_Finalize returns the application's contexts normally still exist; where
    // they are gone the driver calls fail, and the failures are ignored.
    try {
        mca_coll_themis_cuda_ipc_finalize();
        process->devices.clear();
        process->pinned.reset();
        process->views.reset();
    } catch (...) {
    }
}
