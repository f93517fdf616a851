// buffer_cache: a size-keyed free list over a raw allocator.
#include "buffer_cache.h"

#include <algorithm>

namespace themis {

BufferCache::~BufferCache() {
    for (auto &kv : free_) raw_.free(kv.second);
}

void *BufferCache::handed_out(void *buf, size_t size) {
    if (size_nodes_.empty()) {
        size_of_[buf] = size;
    } else {
        auto node = std::move(size_nodes_.back());
        size_nodes_.pop_back();
        node.key() = buf;
        node.mapped() = size;
        size_of_.insert(std::move(node));
    }
    outstanding_bytes_ += size;
    peak_bytes_ = std::max(peak_bytes_, outstanding_bytes_);
    return buf;
}

void *BufferCache::acquire(size_t bytes) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = free_.lower_bound(bytes);
    // Reuse a cached buffer unless it is much larger than needed.
    if (it != free_.end() && it->first <= 2 * bytes) {
        void *buf = it->second;
        const size_t size = it->first;
        cached_bytes_ -= size;
        free_nodes_.push_back(free_.extract(it));
        return handed_out(buf, size);
    }
    // Filed under the size asked for, even 0 (one byte allocated): a call that asks for
    // no bytes again then finds it.
    return handed_out(raw_.allocate(bytes ? bytes : 1), bytes);
}

void BufferCache::release(void *buf) {
    std::lock_guard<std::mutex> hold(lock_);
    // acquire may have handed out a larger buffer than asked for: file it by its real size.
    auto it = size_of_.find(buf);
    const size_t size = it->second;
    size_nodes_.push_back(size_of_.extract(it));
    outstanding_bytes_ -= size;
    const size_t limit = std::min(limit_, peak_bytes_);
    if (size > limit) {
        raw_.free(buf);
        return;
    }
    make_room(size, limit);
    if (free_nodes_.empty()) {
        free_.emplace(size, buf);
    } else {
        auto node = std::move(free_nodes_.back());
        free_nodes_.pop_back();
        node.key() = size;
        node.mapped() = buf;
        free_.insert(std::move(node));
    }
    cached_bytes_ += size;
}

// Frees cached buffers, the smallest first, until `bytes` more fit within `limit`: the
// calls to come more likely look like the one that just released than like older, smaller
// ones.
void BufferCache::make_room(size_t bytes, size_t limit) {
    while (cached_bytes_ + bytes > limit) {
        auto smallest = free_.begin();
        cached_bytes_ -= smallest->first;
        raw_.free(smallest->second);
        free_.erase(smallest);
    }
}

void BufferCache::raise_limit(size_t limit) {
    std::lock_guard<std::mutex> hold(lock_);
    limit_ = std::max(limit_, limit);
}

size_t BufferCache::cached_bytes() const {
    std::lock_guard<std::mutex> hold(lock_);
    return cached_bytes_;
}

size_t BufferCache::outstanding() const {
    std::lock_guard<std::mutex> hold(lock_);
    return size_of_.size();
}

size_t BufferCache::peak_bytes() const {
    std::lock_guard<std::mutex> hold(lock_);
    return peak_bytes_;
}

} // namespace themis
