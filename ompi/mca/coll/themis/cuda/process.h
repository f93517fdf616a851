// cuda/process.h: everything CUDA the process holds, made on first use and released at
// component close: a Device per context, and the host memory device data passes through.
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include "cuda/device.h"
#include "host_memory.h"

namespace themis {
namespace cuda {

// The state of the calling thread's current context (on_device makes the buffer's
// context current where the thread has none).
Device &current_device();

// Pinned staging buffers (and IPC's per-message bounce buffers), shared by all contexts:
// coll_themis_staging_bytes cached, more once a plan's budget needed more.
HostMemory &staging_memory();

// Pinned host copies of device buffers for the previous module (small calls): a copy is
// one DMA, and the buffers stay between calls (no allocation per call).
HostMemory &view_memory();

// Host copies for host reductions of device data.
HostMemory &bounce_memory();

// Frees what the contexts and the pinned memory hold; driver errors are ignored (the
// application may have destroyed its contexts already).
void release_process();

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
