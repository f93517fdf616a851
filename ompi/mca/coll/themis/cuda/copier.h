// cuda/copier.h: the staging copies of src/staging.h on CUDA streams.
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include <deque>
#include <mutex>

#include <cuda.h>

#include "cuda/events.h"
#include "staging.h"

namespace themis {
namespace cuda {

// Copies in each direction on a stream of their own (PCIe copies both ways at once);
// fences are events, polled in order. One per context, shared by every call staged there:
// calls on several communicators may run at once in an MPI_THREAD_MULTIPLE program, so
// every method holds a lock (a fence then also covers the other calls' earlier copies:
// later, never wrong).
class StreamCopier : public AsyncCopier {
  public:
    StreamCopier(CUstream to_staging, CUstream to_home) : stream_{to_staging, to_home} {}
    ~StreamCopier() override;
    StreamCopier(const StreamCopier &) = delete;
    StreamCopier &operator=(const StreamCopier &) = delete;

    void copy(Direction dir, void *dst, const void *src, size_t bytes) override;
    Fence fence(Direction dir) override;
    bool passed(Direction dir, Fence fence) override;
    void wait_all() override;

  private:
    std::recursive_mutex lock_; // wait_all() calls passed()
    struct Pending {
        Fence seq;
        CUevent event;
    };
    CUstream stream_[2];
    std::deque<Pending> pending_[2];
    EventPool events_;
    Fence last_[2] = {0, 0}, done_[2] = {0, 0};
    bool dirty_[2] = {false, false}; // copies queued since the last fence
};

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
