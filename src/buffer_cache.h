// buffer_cache: temporary buffers kept for reuse, so that a plan that runs again allocates
// nothing; over any raw allocator (malloc for HostMemory, pinned and device memory in the
// CUDA glue), so that every kind of memory is cached by the same rule.
//
// The cache holds at most as many bytes as were ever handed out at once (the largest
// working set so far), and never more than its limit: a communicator whose calls change
// sizes all the time would otherwise keep a buffer of every size it met, up to the limit
// (the randomized stress test grew 18 MiB a process at 8 ranks). When a released buffer
// does not fit, the smallest cached ones are freed first.
//
// A buffer taken from the cache and given back allocates nothing: the book-keeping's map
// nodes are kept for reuse too.
//
// Thread-safe: under MPI_THREAD_MULTIPLE one thread prepares a call (its temporaries)
// while another, in Open MPI's progress loop, runs the calls in flight on the same memory.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace themis {

// Where a cache's buffers come from: allocate throws when it cannot, free never throws.
struct RawAllocator {
    void *(*allocate)(size_t bytes);
    void (*free)(void *buf);
};

class BufferCache {
  public:
    BufferCache(RawAllocator raw, size_t limit) : raw_(raw), limit_(limit) {}
    ~BufferCache();
    BufferCache(const BufferCache &) = delete;
    BufferCache &operator=(const BufferCache &) = delete;

    // A buffer of at least `bytes` (a cached one at most twice as large, else a new one).
    void *acquire(size_t bytes);
    // Gives back a buffer from acquire: cached, or freed (see above).
    void release(void *buf);
    // Lets the cache hold up to `limit` bytes (a smaller value changes nothing).
    void raise_limit(size_t limit);

    size_t cached_bytes() const;
    size_t outstanding() const;
    // The most bytes handed out at once so far: what the cache may hold.
    size_t peak_bytes() const;

  private:
    mutable std::mutex lock_; // over everything below
    RawAllocator raw_;
    size_t limit_;
    std::multimap<size_t, void *> free_; // released buffers, by size
    std::map<void *, size_t> size_of_;   // every buffer handed out, with its real size
    // Nodes taken out of the maps above, for their next entries.
    std::vector<std::multimap<size_t, void *>::node_type> free_nodes_;
    std::vector<std::map<void *, size_t>::node_type> size_nodes_;
    size_t cached_bytes_ = 0;
    size_t outstanding_bytes_ = 0, peak_bytes_ = 0;

    void *handed_out(void *buf, size_t size);
    void make_room(size_t bytes, size_t limit);
};

} // namespace themis
