// cuda/driver.cpp: opens the CUDA driver once and looks up its functions (see driver.h).
#include "cuda/driver.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "coll_themis.h"

#include "opal/util/output.h"

namespace themis {
namespace cuda {

namespace {

const mca_coll_themis_component_t &params() { return mca_coll_themis_component; }

bool fake_driver = false;

// nullptr when there is no usable driver (then no process memory is device memory).
const Driver *load_driver() {
    // coll_themis_cuda_driver names the library: by default the soname the loader finds.
    // A path loads exactly that file, even where another libcuda.so.1 is already in the
    // process (the tests' emulated driver beside a real one; dlopen by soname would
    // return the library already loaded under that name).
    const char *name =
        params().cuda_driver && params().cuda_driver[0] ? params().cuda_driver : "libcuda.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        opal_output_verbose(1, params().output,
                            "coll:themis: no CUDA driver (%s): every buffer is host memory",
                            dlerror());
        return nullptr;
    }
    fake_driver = dlsym(lib, "themis_fake_cuda_counters") != nullptr;
    static Driver d;
    std::string missing;
#define THEMIS_CU_LOAD(fn)                                                                         \
    d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(lib, THEMIS_CU_NAME(fn)));                       \
    if (!d.fn) missing += std::string(missing.empty() ? "" : ", ") + THEMIS_CU_NAME(fn);
    THEMIS_CU_FUNCTIONS(THEMIS_CU_LOAD)
#undef THEMIS_CU_LOAD
    // Optional: without them (an old driver) there is no device-direct node dimension.
#define THEMIS_CU_LOAD_OPTIONAL(fn)                                                                \
    d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(lib, THEMIS_CU_NAME(fn)));
    THEMIS_CU_IPC_FUNCTIONS(THEMIS_CU_LOAD_OPTIONAL)
#undef THEMIS_CU_LOAD_OPTIONAL
    if (!missing.empty()) {
        mca_coll_themis_show_help("cuda-driver-unusable", missing.c_str());
        return nullptr; // never dlclose: the application may hold the same library
    }
    return &d;
}

} // namespace

const Driver *driver() {
    if (params().cuda == THEMIS_CUDA_OFF) return nullptr;
    static const Driver *d = load_driver();
    return d;
}

const Driver &drv() {
    const Driver *d = driver();
    if (!d) throw std::logic_error("CUDA used without a driver");
    return *d;
}

void check(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return;
    const char *text = nullptr;
    if (drv().cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "unknown error";
    throw std::runtime_error(std::string("CUDA ") + what + ": " + text + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
}

bool driver_is_emulated() { return driver() && fake_driver; }

} // namespace cuda
} // namespace themis
