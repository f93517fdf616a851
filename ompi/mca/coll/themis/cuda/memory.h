// cuda/memory.h: the CUDA kinds of memory behind the one caching policy of
// src/buffer_cache.h: pinned host memory (a HostMemory over cuMemHostAlloc) and device
// memory (cuMemAlloc, copies on a stream).
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include <cuda.h>

#include "buffer_cache.h"
#include "transport.h"

namespace themis {
namespace cuda {

// Page-locked host memory, usable by every context: asynchronous copies need it.
extern const RawAllocator kPinnedAllocator;

// Device temporaries of the current context, copies between them on `stream`.
class DeviceMemory : public Memory {
  public:
    DeviceMemory(size_t cache_limit, CUstream stream);
    void copy(void *dst, const void *src, size_t bytes) override;
    void *acquire(size_t bytes) override { return cache_.acquire(bytes); }
    void release(void *buf, size_t) override { cache_.release(buf); }

  private:
    BufferCache cache_;
    CUstream stream_;
};

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
