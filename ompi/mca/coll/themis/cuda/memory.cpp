// cuda/memory.cpp: raw pinned and device allocations, device copies (see memory.h).
// Frees ignore errors: the cached buffers go at component close, when the application
// may already have destroyed its contexts.
#include "cuda/memory.h"

#include "cuda/driver.h"

namespace themis {
namespace cuda {

namespace {

void *allocate_pinned(size_t bytes) {
    void *p = nullptr;
    check(drv().cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc (staging)");
    return p;
}

void free_pinned(void *buf) { (void)drv().cuMemFreeHost(buf); }

void *allocate_device(size_t bytes) {
    CUdeviceptr p = 0;
    check(drv().cuMemAlloc(&p, bytes), "cuMemAlloc (device temporary)");
    return reinterpret_cast<void *>(p);
}

void free_device(void *buf) { (void)drv().cuMemFree(dptr(buf)); }

} // namespace

const RawAllocator kPinnedAllocator = {allocate_pinned, free_pinned};

DeviceMemory::DeviceMemory(size_t cache_limit, CUstream stream)
    : cache_({allocate_device, free_device}, cache_limit), stream_(stream) {}

void DeviceMemory::copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return;
    check(drv().cuMemcpyAsync(dptr(dst), dptr(src), bytes, stream_), "cuMemcpyAsync (device)");
    check(drv().cuStreamSynchronize(stream_), "cuStreamSynchronize (device copy)");
}

} // namespace cuda
} // namespace themis
