// cuda/device.cpp: a context's streams, memory and kernels (see device.h).
#include "cuda/device.h"

#include <algorithm>

#include "coll_themis.h"
#include "cuda/driver.h"

namespace themis {
namespace cuda {

namespace {

// Device temporaries kept for reuse beyond a call, at most (device memory is precious).
constexpr size_t kDeviceCacheLimit = size_t(256) << 20;

// Blocks per launch, at most: the kernels' grid-stride loops cover any count.
constexpr unsigned long long kMaxBlocks = 8192;

} // namespace

Device::Device() {
    // Blocking streams (not CU_STREAM_NON_BLOCKING): they wait for work the application
    // left on the legacy default stream, the friendly behaviour for MPI callers.
    for (CUstream &s : streams_)
        check(drv().cuStreamCreate(&s, CU_STREAM_DEFAULT), "cuStreamCreate");
    copier_ = std::make_unique<StreamCopier>(streams_[0], streams_[1]);
    memory_ = std::make_unique<DeviceMemory>(kDeviceCacheLimit, work());
}

Device::~Device() {
    copier_.reset();
    memory_.reset();
    if (module_) (void)drv().cuModuleUnload(module_);
    for (CUstream s : streams_) (void)drv().cuStreamDestroy(s);
}

CUfunction Device::kernel(int op, int type) {
    std::call_once(kernels_loaded_, [this] { load_kernels(); });
    return module_ ? functions_[op][type] : nullptr;
}

void Device::reduce(CUfunction kernel, void *dst, const void *src, size_t elements) {
    CUdeviceptr d = dptr(dst), s = dptr(src);
    unsigned long long n = elements;
    void *args[] = {&d, &s, &n};
    const unsigned long long blocks = std::min<unsigned long long>(
        (n + THEMIS_REDUCE_THREADS - 1) / THEMIS_REDUCE_THREADS, kMaxBlocks);
    check(drv().cuLaunchKernel(kernel, static_cast<unsigned>(blocks), 1, 1, THEMIS_REDUCE_THREADS,
                               1, 1, 0, work(), args, nullptr),
          "cuLaunchKernel (reduction)");
    check(drv().cuStreamSynchronize(work()), "cuStreamSynchronize (reduction)");
}

void Device::load_kernels() {
    const std::string why = find_kernels();
    if (module_) return;
    // Once per process, not per context.
    if (mca_coll_themis_first_time("cuda-kernels-unavailable"))
        mca_coll_themis_show_help("cuda-kernels-unavailable", why.c_str());
}

// Loads the embedded fat binary and looks up every kernel; on failure leaves no module
// and says why.
std::string Device::find_kernels() {
    const CUresult r = drv().cuModuleLoadData(&module_, themis_reduce_fatbin);
    if (r != CUDA_SUCCESS) {
        module_ = nullptr;
        const char *text = nullptr;
        drv().cuGetErrorString(r, &text);
        return std::string("cuModuleLoadData: ") + (text ? text : "unknown error");
    }
    for (int op = 0; op < THEMIS_REDUCE_OPS; ++op)
        for (int t = 0; t < THEMIS_REDUCE_TYPES; ++t) {
            const std::string name = std::string("themis_reduce_") + themis_reduce_op_name(op) +
                                     "_" + themis_reduce_type_name(t);
            if (drv().cuModuleGetFunction(&functions_[op][t], module_, name.c_str()) !=
                CUDA_SUCCESS) {
                (void)drv().cuModuleUnload(module_);
                module_ = nullptr;
                return "kernel " + name + " missing";
            }
        }
    return std::string();
}

} // namespace cuda
} // namespace themis
