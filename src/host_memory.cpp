// host_memory: memcpy and a size-keyed free list of temporary buffers.
#include "host_memory.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace themis {

HostMemory::~HostMemory() {
    for (auto &kv : free_) std::free(kv.second);
}

void HostMemory::copy(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) std::memcpy(dst, src, bytes);
}

void *HostMemory::acquire(size_t bytes) {
    ++outstanding_;
    auto it = free_.lower_bound(bytes);
    // Reuse a cached buffer unless it is much larger than needed.
    if (it != free_.end() && it->first <= 2 * bytes) {
        void *buf = it->second;
        cached_bytes_ -= it->first;
        size_of_[buf] = it->first;
        free_.erase(it);
        return buf;
    }
    void *buf = std::malloc(bytes ? bytes : 1);
    if (!buf) throw std::bad_alloc();
    size_of_[buf] = bytes;
    return buf;
}

void HostMemory::release(void *buf, size_t) {
    --outstanding_;
    // acquire may have handed out a larger buffer than asked for: file it by its real size.
    auto it = size_of_.find(buf);
    const size_t size = it->second;
    size_of_.erase(it);
    if (cached_bytes_ + size > kCacheLimit) {
        std::free(buf);
        return;
    }
    free_.emplace(size, buf);
    cached_bytes_ += size;
}

} // namespace themis
