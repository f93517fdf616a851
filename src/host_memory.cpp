// host_memory: memcpy and a size-keyed free list of temporary buffers.
#include "host_memory.h"

#include <algorithm>
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

void *HostMemory::handed_out(void *buf, size_t size) {
    ++outstanding_;
    size_of_[buf] = size;
    outstanding_bytes_ += size;
    peak_bytes_ = std::max(peak_bytes_, outstanding_bytes_);
    return buf;
}

void *HostMemory::acquire(size_t bytes) {
    auto it = free_.lower_bound(bytes);
    // Reuse a cached buffer unless it is much larger than needed.
    if (it != free_.end() && it->first <= 2 * bytes) {
        void *buf = it->second;
        const size_t size = it->first;
        cached_bytes_ -= size;
        free_.erase(it);
        return handed_out(buf, size);
    }
    void *buf = std::malloc(bytes ? bytes : 1);
    if (!buf) throw std::bad_alloc();
    return handed_out(buf, bytes);
}

void HostMemory::release(void *buf, size_t) {
    --outstanding_;
    // acquire may have handed out a larger buffer than asked for: file it by its real size.
    auto it = size_of_.find(buf);
    const size_t size = it->second;
    size_of_.erase(it);
    outstanding_bytes_ -= size;
    const size_t limit = std::min(kCacheLimit, peak_bytes_);
    if (size > limit) {
        std::free(buf);
        return;
    }
    // Room for the buffer just used, the smallest cached ones going first: the calls to
    // come more likely look like this one than like older, smaller ones.
    while (cached_bytes_ + size > limit) {
        auto smallest = free_.begin();
        cached_bytes_ -= smallest->first;
        std::free(smallest->second);
        free_.erase(smallest);
    }
    free_.emplace(size, buf);
    cached_bytes_ += size;
}

} // namespace themis
