// host_memory: Memory on host buffers (memcpy); temporary buffers are kept for reuse by a
// BufferCache (buffer_cache.h): from malloc, at most 256 MiB, by default; from another
// host allocator (the CUDA glue's pinned memory) with a limit of its own.
#pragma once

#include "buffer_cache.h"
#include "transport.h"

namespace themis {

class HostMemory : public Memory {
  public:
    HostMemory();
    HostMemory(RawAllocator raw, size_t cache_limit) : cache_(raw, cache_limit) {}

    void copy(void *dst, const void *src, size_t bytes) override;
    void *acquire(size_t bytes) override { return cache_.acquire(bytes); }
    void release(void *buf, size_t) override { cache_.release(buf); }

    BufferCache &cache() { return cache_; }
    size_t cached_bytes() const { return cache_.cached_bytes(); }
    size_t outstanding() const { return cache_.outstanding(); }
    size_t peak_bytes() const { return cache_.peak_bytes(); }

  private:
    BufferCache cache_;
};

} // namespace themis
