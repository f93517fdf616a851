// cuda/reduce_kernels.cu: dst = dst op src on the GPU, for the ops and types deep learning
// uses (see reduce_kernels.h for names and semantics). Compiled by nvcc into a fat binary
// only; the component launches the kernels through the driver API, so it needs neither
// the CUDA runtime nor libcuda at link time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "reduce_kernels.h"

namespace {

// The type arithmetic happens in: itself, or float for the 16-bit floating types.
template <typename T> struct Arith {
    using type = T;
    __device__ static T load(T v) { return v; }
    __device__ static T store(T v) { return v; }
};
template <> struct Arith<__half> {
    using type = float;
    __device__ static float load(__half v) { return __half2float(v); }
    __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <> struct Arith<__nv_bfloat16> {
    using type = float;
    __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
    __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

// Open MPI's expressions (ompi/mca/op/base/op_base_functions.c), out = a, in = b.
struct Sum {
    template <typename A> __device__ static A apply(A a, A b) { return a + b; }
};
struct Prod {
    template <typename A> __device__ static A apply(A a, A b) { return a * b; }
};
struct Min {
    template <typename A> __device__ static A apply(A a, A b) { return a < b ? a : b; }
};
struct Max {
    template <typename A> __device__ static A apply(A a, A b) { return a > b ? a : b; }
};

template <typename T, typename Op>
__device__ void reduce(T *__restrict__ dst, const T *__restrict__ src, unsigned long long n) {
    using A = Arith<T>;
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i =
             static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < n; i += stride)
        dst[i] = A::store(Op::apply(static_cast<typename A::type>(A::load(dst[i])),
                                    static_cast<typename A::type>(A::load(src[i]))));
}

} // namespace

#define THEMIS_KERNEL(opname, Op, tname, T)                                                        \
    extern "C" __global__ void __launch_bounds__(THEMIS_REDUCE_THREADS)                            \
        themis_reduce_##opname##_##tname(T *dst, const T *src, unsigned long long n) {             \
        reduce<T, Op>(dst, src, n);                                                                \
    }

#define THEMIS_KERNELS(tname, T)                                                                   \
    THEMIS_KERNEL(sum, Sum, tname, T)                                                              \
    THEMIS_KERNEL(prod, Prod, tname, T)                                                            \
    THEMIS_KERNEL(min, Min, tname, T)                                                              \
    THEMIS_KERNEL(max, Max, tname, T)

THEMIS_KERNELS(f32, float)
THEMIS_KERNELS(f64, double)
THEMIS_KERNELS(f16, __half)
THEMIS_KERNELS(bf16, __nv_bfloat16)
THEMIS_KERNELS(i8, signed char)
THEMIS_KERNELS(u8, unsigned char)
THEMIS_KERNELS(i16, short)
THEMIS_KERNELS(u16, unsigned short)
THEMIS_KERNELS(i32, int)
THEMIS_KERNELS(u32, unsigned int)
THEMIS_KERNELS(i64, long long)
THEMIS_KERNELS(u64, unsigned long long)
