/* cuda_driver: the CUDA driver calls the MPI test and benchmark programs need for device
 * buffers (themis-cuda-check, themis-bench --mem device), loaded at run time with dlopen
 * as the component does: one binary runs on a GPU machine, says why not on a machine
 * without CUDA, and runs in CI against test/cuda/cuda_fake_driver.c. */
#ifndef THEMIS_CUDA_DRIVER_H
#define THEMIS_CUDA_DRIVER_H

#include <cuda.h>
#include <stddef.h>

struct cuda_driver {
    void *lib; /* the dlopen handle of libcuda.so.1 */
    CUresult (*Init)(unsigned int);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*HtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*DtoH)(void *, CUdeviceptr, size_t);
    CUresult (*HostAlloc)(void **, size_t, unsigned int);
    CUresult (*FreeHost)(void *);
    CUresult (*GetErrorString)(CUresult, const char **);
};

extern struct cuda_driver cu;

/* Loads the driver and checks that a device is usable: 0, or -1 with the reason in
 * `why` (no driver, a symbol missing, no device). */
int cuda_driver_load(char *why, size_t len);

/* Makes the primary context of device (slot % devices) current, slot being, say, this
 * process's local rank: 0, or -1 with the reason in `why`. */
int cuda_driver_use_device(int slot, char *why, size_t len);

/* The driver's name for an error ("?" when it has none). */
const char *cuda_driver_error(CUresult r);

#endif
