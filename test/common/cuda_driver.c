/* cuda_driver: CUDA driver calls through dlopen (see cuda_driver.h). */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct cuda_driver cu;

const char *cuda_driver_error(CUresult r)
{
    const char *s = NULL;
    if (cu.GetErrorString) cu.GetErrorString(r, &s);
    return s ? s : "?";
}

int cuda_driver_load(char *why, size_t len)
{
    /* The library coll/themis opens too (coll_themis_cuda_driver): the tests' emulated
     * driver by its path, never the soname a real driver also answers to. */
    const char *name = getenv("OMPI_MCA_coll_themis_cuda_driver");
    if (!name || !*name) name = "libcuda.so.1";
    cu.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(why, len, "no CUDA driver (%s)", dlerror());
        return -1;
    }
    static const struct { size_t offset; const char *name; } symbols[] = {
        {offsetof(struct cuda_driver, Init), "cuInit"},
        {offsetof(struct cuda_driver, DeviceGetCount), "cuDeviceGetCount"},
        {offsetof(struct cuda_driver, DeviceGet), "cuDeviceGet"},
        {offsetof(struct cuda_driver, PrimaryCtxRetain), "cuDevicePrimaryCtxRetain"},
        {offsetof(struct cuda_driver, CtxSetCurrent), "cuCtxSetCurrent"},
        {offsetof(struct cuda_driver, MemAlloc), "cuMemAlloc_v2"},
        {offsetof(struct cuda_driver, MemFree), "cuMemFree_v2"},
        {offsetof(struct cuda_driver, HtoD), "cuMemcpyHtoD_v2"},
        {offsetof(struct cuda_driver, DtoH), "cuMemcpyDtoH_v2"},
        {offsetof(struct cuda_driver, HostAlloc), "cuMemHostAlloc"},
        {offsetof(struct cuda_driver, FreeHost), "cuMemFreeHost"},
        {offsetof(struct cuda_driver, GetErrorString), "cuGetErrorString"},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
        void *f = dlsym(cu.lib, symbols[i].name);
        if (!f) {
            snprintf(why, len, "the CUDA driver lacks %s", symbols[i].name);
            return -1;
        }
        *(void **) ((char *) &cu + symbols[i].offset) = f;
    }
    int n = 0;
    CUresult r = cu.Init(0);
    if (r == CUDA_SUCCESS) r = cu.DeviceGetCount(&n);
    if (r != CUDA_SUCCESS || n < 1) {
        snprintf(why, len, "no usable CUDA device (%s)",
                 r != CUDA_SUCCESS ? cuda_driver_error(r) : "no device");
        return -1;
    }
    return 0;
}

int cuda_driver_use_device(int slot, char *why, size_t len)
{
    int devices = 0;
    CUdevice dev;
    CUcontext ctx;
    CUresult r = cu.DeviceGetCount(&devices);
    if (r == CUDA_SUCCESS) r = cu.DeviceGet(&dev, slot % (devices > 0 ? devices : 1));
    if (r == CUDA_SUCCESS) r = cu.PrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS) r = cu.CtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "cannot use CUDA device %d: %s", slot % (devices > 0 ? devices : 1),
                 cuda_driver_error(r));
        return -1;
    }
    return 0;
}
