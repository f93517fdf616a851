// cuda/device.h: what themis keeps per CUDA context: three streams (copies to staging,
// copies home, everything else), the staging copier, device temporaries, and the
// reduction kernels' module, loaded on first use.
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include <memory>
#include <mutex>
#include <string>

#include <cuda.h>

#include "cuda/copier.h"
#include "cuda/memory.h"
#include "cuda/reduce_kernels.h"

namespace themis {
namespace cuda {

class Device {
  public:
    Device();
    ~Device();
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;

    AsyncCopier &copier() { return *copier_; }
    // Device temporaries; its copies (any kinds of memory) wait until done.
    DeviceMemory &memory() { return *memory_; }

    // The kernel for (op, type), or nullptr when the kernels cannot be loaded here.
    CUfunction kernel(int op, int type);
    // dst = dst op src over `elements` elements by `kernel`, waiting until done: the
    // reduced block may be sent next, by a transport that knows nothing of streams.
    void reduce(CUfunction kernel, void *dst, const void *src, size_t elements);

  private:
    CUstream streams_[3] = {nullptr, nullptr, nullptr}; // copies in, copies out, the rest
    std::unique_ptr<StreamCopier> copier_;
    std::unique_ptr<DeviceMemory> memory_;
    CUmodule module_ = nullptr;
    std::once_flag kernels_loaded_; // by the first call that needs them, in any thread
    CUfunction functions_[THEMIS_REDUCE_OPS][THEMIS_REDUCE_TYPES] = {};

    CUstream work() const { return streams_[2]; }
    void load_kernels();
    std::string find_kernels();
};

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
