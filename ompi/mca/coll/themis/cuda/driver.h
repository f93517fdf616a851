// cuda/driver.h: the CUDA driver's functions as coll/themis calls them, for the CUDA
// glue's own files (cuda/driver.cpp loads them, the rest of cuda/ calls them). Internal:
// includes cuda.h, so only the CUDA convenience library sees it.
//
// Decision: the driver API only, through dlopen/dlsym; no CUDA runtime, not even the
// static one. The component then has no link-time CUDA dependency and loads anywhere; it
// needs no second copy of the runtime in processes whose application brings its own
// (any version); and a toolkit newer than the driver does not refuse to start, as the
// runtime does (the SASS in the fat binary still loads; only the PTX needs a recent
// driver). The price is a little bookkeeping: the kernels' module is loaded per context
// (cuda/device.h), and the function pointers are looked up by name, with the ABI versions
// cuda.h selects.
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include <cuda.h>

namespace themis {
namespace cuda {

// The name libcuda exports for a function: cuda.h maps some names onto versioned ABIs
// (cuMemAlloc -> cuMemAlloc_v2); the prototypes we call with are those versions.
#define THEMIS_CU_NAME2(x) #x
#define THEMIS_CU_NAME(x) THEMIS_CU_NAME2(x)

// Needed: without any of these the driver is not used at all.
#define THEMIS_CU_FUNCTIONS(X)                                                                     \
    X(cuGetErrorString)                                                                            \
    X(cuPointerGetAttributes)                                                                      \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxSetCurrent)                                                                             \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamSynchronize)                                                                         \
    X(cuEventCreate)                                                                               \
    X(cuEventRecord)                                                                               \
    X(cuEventQuery)                                                                                \
    X(cuEventDestroy)                                                                              \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuMemcpyAsync)                                                                               \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleUnload)                                                                              \
    X(cuModuleGetFunction)                                                                         \
    X(cuLaunchKernel)
// Optional (nullptr where missing): the device-direct node dimension (CUDA IPC).
#define THEMIS_CU_IPC_FUNCTIONS(X)                                                                 \
    X(cuIpcGetMemHandle)                                                                           \
    X(cuIpcOpenMemHandle)                                                                          \
    X(cuIpcCloseMemHandle)                                                                         \
    X(cuMemGetAddressRange)

struct Driver {
#define THEMIS_CU_FN(fn) decltype(&::fn) fn = nullptr;
    THEMIS_CU_FUNCTIONS(THEMIS_CU_FN)
    THEMIS_CU_IPC_FUNCTIONS(THEMIS_CU_FN)
#undef THEMIS_CU_FN
};

// nullptr when there is no usable driver (or coll_themis_cuda=off).
const Driver *driver();
// The driver, where something already proved there is one (else throws).
const Driver &drv();
// Throws std::runtime_error naming `what` unless r is CUDA_SUCCESS.
void check(CUresult r, const char *what);
// The driver is test/cuda/cuda_fake_driver.c (it exports themis_fake_cuda_counters).
bool driver_is_emulated();

inline CUdeviceptr dptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

} // namespace cuda
} // namespace themis

#endif // THEMIS_HAVE_CUDA
