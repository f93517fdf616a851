// host_memory: Memory on host buffers; temporary buffers are kept for reuse, so a plan
// that runs again allocates nothing. The cache holds at most as many bytes as were ever
// handed out at once (the largest working set so far; 256 MiB at most): a communicator
// whose calls change sizes all the time would otherwise keep a buffer of every size it
// met, up to the limit (the randomized stress test grew 18 MiB a process at 8 ranks).
#pragma once

#include <map>

#include "transport.h"

namespace themis {

class HostMemory : public Memory {
  public:
    HostMemory() = default;
    ~HostMemory() override;
    HostMemory(const HostMemory &) = delete;
    HostMemory &operator=(const HostMemory &) = delete;

    void copy(void *dst, const void *src, size_t bytes) override;
    void *acquire(size_t bytes) override;
    void release(void *buf, size_t bytes) override;

    size_t cached_bytes() const { return cached_bytes_; }
    size_t outstanding() const { return outstanding_; }
    // The most bytes handed out at once so far: what the cache may hold.
    size_t peak_bytes() const { return peak_bytes_; }

  private:
    // Released buffers, by size; beyond this many bytes they are freed instead.
    static constexpr size_t kCacheLimit = size_t(256) << 20;
    std::multimap<size_t, void *> free_;
    std::map<void *, size_t> size_of_; // every buffer handed out, with its real size
    size_t cached_bytes_ = 0;
    size_t outstanding_ = 0;
    size_t outstanding_bytes_ = 0, peak_bytes_ = 0;

    void *handed_out(void *buf, size_t size);
};

} // namespace themis
