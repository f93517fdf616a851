/* cuda/reduce_kernels.h: what the reduction kernels of coll/themis are called, shared by
 * reduce_kernels.cu (compiled by nvcc into a fat binary that the component embeds) and the
 * C++ glue, which loads that binary with the CUDA driver API and launches kernels by name.
 *
 * One kernel per (op, type):
 *
 *   extern "C" __global__ void themis_reduce_<op>_<type>(T *dst, const T *src,
 *                                                       unsigned long long n)
 *
 * computes dst[i] = dst[i] op src[i] for i < n with the expressions of Open MPI's own op
 * functions (min: dst < src ? dst : src), so results match a host reduction bit for bit;
 * half and bfloat16 are computed in float and rounded once. A grid-stride loop: any grid
 * covers any n. */
#ifndef COLL_THEMIS_REDUCE_KERNELS_H
#define COLL_THEMIS_REDUCE_KERNELS_H

#include <stddef.h>

/* Threads per block the glue launches (the kernels are built for at most this many). */
#define THEMIS_REDUCE_THREADS 256

enum themis_reduce_op {
    THEMIS_REDUCE_SUM,
    THEMIS_REDUCE_PROD,
    THEMIS_REDUCE_MIN,
    THEMIS_REDUCE_MAX,
    THEMIS_REDUCE_OPS
};

enum themis_reduce_type {
    THEMIS_REDUCE_F32,
    THEMIS_REDUCE_F64,
    THEMIS_REDUCE_F16,
    THEMIS_REDUCE_BF16,
    THEMIS_REDUCE_I8,
    THEMIS_REDUCE_U8,
    THEMIS_REDUCE_I16,
    THEMIS_REDUCE_U16,
    THEMIS_REDUCE_I32,
    THEMIS_REDUCE_U32,
    THEMIS_REDUCE_I64,
    THEMIS_REDUCE_U64,
    THEMIS_REDUCE_TYPES
};

static inline const char *themis_reduce_op_name(int op) {
    static const char *const names[THEMIS_REDUCE_OPS] = {"sum", "prod", "min", "max"};
    return op >= 0 && op < THEMIS_REDUCE_OPS ? names[op] : "?";
}

static inline const char *themis_reduce_type_name(int type) {
    static const char *const names[THEMIS_REDUCE_TYPES] = {
        "f32", "f64", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"};
    return type >= 0 && type < THEMIS_REDUCE_TYPES ? names[type] : "?";
}

#ifdef __cplusplus
extern "C" {
#endif

/* The fat binary (SASS for sm_75, sm_80, sm_86, sm_89, sm_90 and PTX for compute_90),
 * generated from reduce_kernels.fatbin at build time. */
extern const unsigned char themis_reduce_fatbin[];
extern const size_t themis_reduce_fatbin_size;

#ifdef __cplusplus
}
#endif

#endif /* COLL_THEMIS_REDUCE_KERNELS_H */
