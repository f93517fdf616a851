// cuda/buffers.h: CUDA device buffers in coll/themis (when built with CUDA, THEMIS_HAVE_CUDA;
// without it only the first few functions exist, as what they are then: every buffer is host
// memory, so the glue calls them in both builds).
//
// No hard dependency: the component links neither libcuda nor the CUDA runtime. The driver
// (libcuda.so.1) is opened with dlopen on the first call that looks at a buffer, and every
// driver function is found with dlsym; the reduction kernels are a fat binary embedded in
// the component and loaded with cuModuleLoadData. Where there is no driver, or the process
// never initialised CUDA (then it cannot own device memory), every buffer is host memory
// and each call costs one predictable branch: themis behaves exactly as without CUDA.
//
// What a call with a device buffer does (memory kinds may differ between ranks, and never
// change whether themis runs a call, only how this rank's bytes move):
//   not accelerated (below min_bytes, op or datatype themis leaves alone, declined
//   communicator)         copy to host, previous module, copy back (HostView);
//   transport moves device memory (UCX built with CUDA)
//                         the plan runs on device memory: device temporaries, device
//                         copies, reductions by CUDA kernels (DeviceReducer);
//   otherwise             the plan runs on host staging buffers, chunk by chunk, with
//                         asynchronous copies on CUDA streams (StagedRun, src/staging.h).
#pragma once

#include "coll_themis_prelude.h"

#include "transport.h"

namespace themis {
namespace cuda {

#if THEMIS_HAVE_CUDA

// Whether `p` is CUDA device memory, asked of the driver on every call (nothing is cached
// per pointer: memory is freed and reused). Managed memory counts as host memory: the CPU
// can reach it. Also makes the pointer's context current when the thread has none.
// Never throws.
bool on_device(const void *p);

// The CUDA context current on this thread; nullptr: none, or no CUDA in this process.
// Never throws.
void *current_context();

// Makes `context` (from current_context(); nullptr: leaves the thread alone) the thread's
// current context while it lives, then restores the one before. A nonblocking call started
// on one thread may be progressed by another (any MPI call of an MPI_THREAD_MULTIPLE
// program runs Open MPI's progress loop), which may have no context or another.
class ContextScope {
  public:
    explicit ContextScope(void *context);
    ~ContextScope();
    ContextScope(const ContextScope &) = delete;
    ContextScope &operator=(const ContextScope &) = delete;

  private:
    void *previous_ = nullptr;
    bool switched_ = false;
};

// The memory the engine's temporaries come from: device memory in device-direct mode
// (`device_direct`), else nullptr (the context's host memory).
Memory *engine_memory(bool device_direct);

// Tests (test/cuda/cuda_run.sh, fake_direct_*: THEMIS_TEST_CUDA_DIRECT=1): whether a
// communicator's transport stands for one that moves device memory, asked once at its set-up.
// Only with the emulated driver, whose device memory the host can read: with a real GPU the
// PML would read device memory and crash.
bool stands_for_device_transport();

#else // Without CUDA every buffer is host memory, and no thread has a context to keep.

inline bool on_device(const void *) { return false; }
inline void *current_context() { return nullptr; }
class ContextScope {
  public:
    explicit ContextScope(void *) {}
};
inline Memory *engine_memory(bool) { return nullptr; }
inline bool stands_for_device_transport() { return false; }

#endif // THEMIS_HAVE_CUDA

} // namespace cuda
} // namespace themis

#if THEMIS_HAVE_CUDA

#include <cstddef>
#include <memory>

#include "coll_themis_context.h"
#include "coll_themis_op.h"
#include "engine.h"
#include "staging.h"

#include "ompi/op/op.h"

namespace themis {
namespace cuda {

// Copies `bytes` between any two kinds of memory and waits for the copy.
void copy(void *dst, const void *src, size_t bytes);

// Whether this communicator's transport moves device memory itself (UCX with CUDA and
// coll_themis_cuda=auto); otherwise device data is staged.
bool direct(const Context &ctx);

// Device temporaries (cuMemAlloc, kept for reuse), device-to-device copies: the engine's
// Memory when the work buffer is in device memory.
Memory &device_memory();

// Pinned host buffers (the staging pool; copies between them are host copies).
Memory &pinned_memory();

// A device temporary for the length of a call.
class DeviceBuffer {
  public:
    explicit DeviceBuffer(size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    char *get() const { return buf_; }

  private:
    char *buf_;
    size_t bytes_;
};

// dst = src op dst over device data: a CUDA kernel for sum, prod, min and max over the
// floating and integer types (8- and 16-bit sums excepted, see cuda/kernel_choice.h),
// anything else on the host after copying both operands there, with Open MPI's own
// functions (holding the op, as OpReducer does, for a nonblocking call).
class DeviceReducer : public Reducer {
  public:
    DeviceReducer(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent);
    void reduce(void *dst, const void *src, size_t bytes) override;
    size_t element_bytes() const override { return host_.element_bytes(); }
    bool on_gpu() const { return kernel_ != nullptr; }

  private:
    OpReducer host_;
    void *kernel_ = nullptr; // CUfunction
    size_t element_size_ = 0;
};

// A staged run over device data: hooks for Context::run, staging through pinned host
// buffers within coll_themis_staging_bytes, copies on the device's copy streams.
class StagedRun {
  public:
    StagedRun(const StagingRegion &source, const StagingRegion &home, const StagingRegion &result);
    RunOptions options();
    // After the run: waits until every result is in place.
    void finish();

  private:
    std::unique_ptr<Stager> stager_;
};

// A host stand-in for a user buffer of `count` elements of `dtype` that may be device
// memory: the bytes the datatype spans, copied in when asked (and always when the
// datatype has gaps, which copy_back() rewrites); host buffers (and MPI_IN_PLACE) pass
// through untouched.
class HostView {
  public:
    HostView(const void *buf, ompi_datatype_t *dtype, size_t count, bool copy_in);
    ~HostView();
    HostView(const HostView &) = delete;
    HostView &operator=(const HostView &) = delete;
    void *get() const { return view_; }
    // Copies the span of the first `count` elements back to the user's buffer.
    void copy_back(size_t count);
    // Copies the user's bytes in again where they matter (as at construction: asked for,
    // or a datatype with gaps), for a persistent call's next start.
    void refresh();

  private:
    char *user_;
    char *view_;
    char *host_ = nullptr;
    size_t host_bytes_ = 0;
    bool copies_in_ = false; // a host copy whose user bytes are read (see refresh)
    ompi_datatype_t *dtype_;
};

// The bytes `count` elements of `dtype` span from the buffer's address: [lo, hi).
void span_of(ompi_datatype_t *dtype, size_t count, ptrdiff_t &lo, ptrdiff_t &hi);

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
