// cuda/ipc_handles.h: CUDA IPC handles of this process's allocations (exported once per
// allocation) and the peers' allocations opened through them (kept, at most
// coll_themis_cuda_ipc_cache, least recently used closed first, never one a copy still
// reads), process-wide: communicators share peers and buffers. As UCX's cuda_ipc does.
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <tuple>

#include <cuda.h>

namespace themis {
namespace cuda {

// What a peer needs to open an allocation of ours (sent as is in control messages).
struct Export {
    CUipcMemHandle handle;
    uint64_t base = 0;
    uint64_t id = 0; // CU_POINTER_ATTRIBUTE_BUFFER_ID: tells a reused address apart
};

// An allocation's identity: the exporting process, its base address, its buffer id.
using PeerKey = std::tuple<int, uint64_t, uint64_t>;

struct Mapping {
    PeerKey key;
    CUdeviceptr base = 0;
    int users = 0; // copies that read it now: never closed while > 0
};

class IpcCache {
  public:
    // The export of the allocation holding `p` (cached; an address reused by a new
    // allocation has a new buffer id, so it is exported again); `offset` is p's in it.
    Export exported(const void *p, uint64_t &offset);
    // The local address of a peer's allocation, opened once and kept; release() when the
    // copy that reads it is done.
    Mapping *open(int pid, const Export &e);
    void release(Mapping *m);
    // Closes every mapping, forgets every export.
    void clear();

  private:
    std::mutex lock_;        // the process's one cache serves every communicator, in any thread
    std::list<Mapping> lru_; // most recently used first
    std::map<uint64_t, Export> exports_;

    Mapping *reuse(const PeerKey &key);
    static constexpr uint64_t kAnyBase = ~uint64_t(0);
    void close_unused(int pid, uint64_t base);
    void trim(size_t n);
};

// The process's cache (made on first use).
IpcCache &ipc_cache();
// Closes the peers' allocations still open and drops the cache (component close).
void close_ipc_cache();

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
