// cuda/buffers.cpp: device buffers in the collectives (see cuda/buffers.h), over
// the CUDA glue in cuda/: driver (the driver API through dlopen), memory (pinned and device
// memory, cached as host memory is), copier (staging copies on streams), device (a
// context's streams, memory and kernels), process (the process's CUDA state),
// kernel_choice ((op, datatype) -> kernel).
#include "cuda/buffers.h"
#include "coll_themis_test_hooks.h"
#include "cuda/ipc.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/driver.h"
#include "cuda/kernel_choice.h"
#include "cuda/process.h"

#include "opal/util/output.h"

namespace themis {
namespace cuda {

namespace {

const mca_coll_themis_component_t &params() { return mca_coll_themis_component; }

} // namespace

bool on_device(const void *p) {
    if (p == nullptr || p == MPI_IN_PLACE) return false;
    const Driver *d = driver();
    if (!d) return false;
    CUmemorytype type = static_cast<CUmemorytype>(0);
    unsigned int managed = 0;
    CUcontext ctx = nullptr;
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_CONTEXT};
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
        (void)d->cuCtxSetCurrent(ctx);
    return true;
}

void *current_context() {
    const Driver *d = driver();
    CUcontext current = nullptr;
    if (!d || d->cuCtxGetCurrent(&current) != CUDA_SUCCESS) return nullptr;
    return current;
}

ContextScope::ContextScope(void *context) {
    if (context == nullptr) return;
    previous_ = current_context();
    if (previous_ == context) return;
    switched_ = driver()->cuCtxSetCurrent(static_cast<CUcontext>(context)) == CUDA_SUCCESS;
}

ContextScope::~ContextScope() {
    if (switched_) (void)driver()->cuCtxSetCurrent(static_cast<CUcontext>(previous_));
}

void copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return; // nothing to copy needs no current context
    current_device().memory().copy(dst, src, bytes);
}

bool direct(const Context &ctx) {
    if (params().cuda != THEMIS_CUDA_AUTO) return false;
    // The device-direct node dimension (cuda/ipc.h): its transport moves
    // device memory on every dimension.
    if (ctx.device_direct()) return true;
    return ctx.transport_moves_device();
}

Memory &device_memory() { return current_device().memory(); }

Memory &pinned_memory() { return staging_memory(); }

Memory *engine_memory(bool device_direct) { return device_direct ? &device_memory() : nullptr; }

bool stands_for_device_transport() { return test_hooks().cuda_direct && driver_is_emulated(); }

DeviceBuffer::DeviceBuffer(size_t bytes)
    : buf_(static_cast<char *>(current_device().memory().acquire(bytes))), bytes_(bytes) {}

DeviceBuffer::~DeviceBuffer() {
    try {
        current_device().memory().release(buf_, bytes_);
    } catch (...) {}
}

DeviceReducer::DeviceReducer(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent)
    : host_(op, dtype, extent) {
    const std::optional<KernelChoice> choice = choose_kernel(op, dtype, extent);
    if (!choice) return;
    kernel_ = current_device().kernel(choice->op, choice->type);
    element_size_ = choice->element_size;
}

void DeviceReducer::reduce(void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    if (kernel_) {
        current_device().reduce(static_cast<CUfunction>(kernel_), dst, src, bytes / element_size_);
        return;
    }
    // On the host, with Open MPI's function for (op, datatype): user ops included.
    HostMemory &bounce = bounce_memory();
    char *h_dst = static_cast<char *>(bounce.acquire(bytes));
    char *h_src = static_cast<char *>(bounce.acquire(bytes));
    try {
        copy(h_dst, dst, bytes);
        copy(h_src, src, bytes);
        host_.reduce(h_dst, h_src, bytes);
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
    stager_ = std::make_unique<Stager>(staging_memory(), current_device().copier(), cfg);
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
    staging_memory().cache().raise_limit(stager_->stats().budget);
    if (log_enabled(5)) {
        const auto &s = stager_->stats();
        LogEvent("staging")
            .add("budget", (unsigned long long)s.budget)
            .add("peak_bytes", (unsigned long long)s.peak_bytes)
            .add("loads", (unsigned long long)s.loads)
            .add("load_bytes", (unsigned long long)s.load_bytes)
            .add("evictions", (unsigned long long)s.evictions)
            .add("eviction_bytes", (unsigned long long)s.eviction_bytes)
            .add("stored_bytes", (unsigned long long)s.store_bytes)
            .emit(5, nullptr);
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
    host_ = static_cast<char *>(view_memory().acquire(host_bytes_));
    view_ = host_ - lo; // the user's address shifted into the copy, as datatypes expect
    // A datatype with gaps: copy_back() writes the whole span back, gaps included, so
    // they must hold the user's bytes, not ours.
    copies_in_ = copy_in || !ompi_datatype_is_contiguous_memory_layout(dtype, count);
    try {
        refresh();
    } catch (...) {
        view_memory().release(host_, host_bytes_);
        throw;
    }
}

HostView::~HostView() {
    try {
        if (host_) view_memory().release(host_, host_bytes_);
    } catch (...) {}
}

void HostView::refresh() {
    if (copies_in_) copy(host_, user_ + (host_ - view_), host_bytes_); // view_ = host_ - lo
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
    // Before MPI_Finalize returns the application's contexts normally still exist; where
    // they are gone the driver calls fail, and the failures are ignored.
    try {
        mca_coll_themis_cuda_ipc_finalize();
        themis::cuda::release_process();
    } catch (...) {}
}
