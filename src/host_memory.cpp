// host_memory: memcpy, and malloc behind a BufferCache.
#include "host_memory.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace themis {

namespace {

void *malloc_or_throw(size_t bytes) {
    void *buf = std::malloc(bytes);
    if (!buf) throw std::bad_alloc();
    return buf;
}

// Released buffers kept beyond a call, at most.
constexpr size_t kCacheLimit = size_t(256) << 20;

} // namespace

HostMemory::HostMemory()
    : cache_({malloc_or_throw, [](void *buf) { std::free(buf); }}, kCacheLimit) {}

void HostMemory::copy(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) std::memcpy(dst, src, bytes);
}

} // namespace themis
