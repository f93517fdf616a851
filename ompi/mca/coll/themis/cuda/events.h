// cuda/events.h: CUDA events reused once passed (creating one per copy would cost a
// driver call each time), for the fences of the staging copier and the IPC transport.
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include <mutex>
#include <vector>

#include <cuda.h>

namespace themis {
namespace cuda {

class EventPool {
  public:
    EventPool() = default;
    ~EventPool();
    EventPool(const EventPool &) = delete;
    EventPool &operator=(const EventPool &) = delete;

    // An event to record (a spare one, else a new one without timing).
    CUevent take(const char *what);
    // Gives back an event taken here, once it has passed (or will not be waited for).
    void put(CUevent e);

  private:
    std::mutex lock_; // threads of an MPI_THREAD_MULTIPLE program share a context's pools
    std::vector<CUevent> spare_;
};

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
