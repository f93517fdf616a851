/* themis-bench's data: the input pattern (small integers, so every sum over ranks is
 * exact and each result can be checked against values computed here), the calls a sample
 * makes (their buffers, sized once for the largest message and set up per size, running
 * one in its blocking or nonblocking form, writing its inputs, checking its result) and,
 * with --mem device, the CUDA device memory their buffers live in.  A build without CUDA
 * keeps the device functions as stubs, device_init() refusing the option. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench_common.h"

#if THEMIS_HAVE_CUDA
#include "cuda_driver.h"
#endif

/* ------------------------------------------------------------------ data */

static MPI_Datatype mpi_type(enum dtype t)
{
    switch (t) {
    case T_FLOAT: return MPI_FLOAT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_INT: return MPI_INT;
    case T_CHAR: return MPI_SIGNED_CHAR;
    default: return MPI_DATATYPE_NULL;
    }
}
static size_t type_size(enum dtype t)
{
    static const size_t sizes[T_COUNT] = {sizeof(float), sizeof(double), sizeof(int), 1};
    return sizes[t];
}

/* Input element i of rank r for call `seed`: small non-negative integers, so every sum
 * over ranks is exact in every type.  char uses values 0..3 (sum <= 3n: exact below
 * n = 43; Open MPI 4.1's op/avx saturates 8-bit sums instead of wrapping). */
static int pattern_mod(enum dtype t) { return t == T_CHAR ? 4 : 61; }
static int pattern(enum dtype t, int r, size_t i, int seed)
{
    const int m = pattern_mod(t);
    return (int) (((size_t) r * 7 + (i % (size_t) m) * 3 + (size_t) seed) % (size_t) m);
}

static void put(void *buf, enum dtype t, size_t i, int v)
{
    switch (t) {
    case T_FLOAT: ((float *) buf)[i] = (float) v; break;
    case T_DOUBLE: ((double *) buf)[i] = (double) v; break;
    case T_INT: ((int *) buf)[i] = v; break;
    case T_CHAR: ((signed char *) buf)[i] = (signed char) v; break;
    default: break;
    }
}
static int get_equals(const void *buf, enum dtype t, size_t i, int v)
{
    switch (t) {
    case T_FLOAT: return ((const float *) buf)[i] == (float) v;
    case T_DOUBLE: return ((const double *) buf)[i] == (double) v;
    case T_INT: return ((const int *) buf)[i] == v;
    case T_CHAR: return ((const signed char *) buf)[i] == (signed char) v;
    default: return 0;
    }
}

/* Fills `count` elements of rank r's data, element k having global index first + k. */
static void fill(void *buf, enum dtype t, size_t first, size_t count, int r, int seed)
{
    for (size_t k = 0; k < count; ++k) put(buf, t, k, pattern(t, r, first + k, seed));
}

/* sum_r pattern(t, r, i, seed) depends on (3*(i mod m) + seed) mod m only: a table. */
static void sum_table(enum dtype t, int n, int seed, int *table)
{
    const int m = pattern_mod(t);
    for (int k = 0; k < m; ++k) table[k] = 0;
    for (int k = 0; k < m; ++k)
        for (int r = 0; r < n; ++r) table[(k * 3 + seed) % m] += pattern(t, r, (size_t) k, seed);
}
static int expected_sum(enum dtype t, const int *table, size_t i, int seed)
{
    const int m = pattern_mod(t);
    return table[((i % (size_t) m) * 3 + (size_t) seed) % (size_t) m];
}

/* ------------------------------------------------------------------ device memory */

/* --mem device: the buffers MPI sees are CUDA device memory (the driver API through
 * dlopen, tools/cuda_driver.h); inputs are written and results read through host images,
 * outside the timed calls.  Builds without CUDA refuse the option. */
#if THEMIS_HAVE_CUDA
static void check_cu(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) die("%s: %s", what, cuda_driver_error(r));
}
void device_init(void)
{
    char why[256];
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (cuda_driver_load(why, sizeof why) != 0 ||
        cuda_driver_use_device(lr ? atoi(lr) : 0, why, sizeof why) != 0)
        die("--mem device: %s", why);
}
static void *device_alloc(size_t bytes)
{
    CUdeviceptr p;
    check_cu(cu.MemAlloc(&p, bytes), "cuMemAlloc");
    return (void *) p;
}
static void device_free(void *p) { cu.MemFree((CUdeviceptr) p); }
static void to_device(void *dev, const void *host, size_t bytes)
{
    check_cu(cu.HtoD((CUdeviceptr) dev, host, bytes), "cuMemcpyHtoD");
}
static void from_device(void *host, const void *dev, size_t bytes)
{
    check_cu(cu.DtoH(host, (CUdeviceptr) dev, bytes), "cuMemcpyDtoH");
}
/* --mem device: what a call that copies its buffers to the host and back pays beyond the
 * host call, one device-to-host plus one host-to-device copy of `bytes` through pinned
 * memory, every rank at once; the slowest rank's mean over `iters` pairs, in seconds. */
double copy_pair_seconds(const struct call *c, size_t bytes, int iters, MPI_Comm ctl)
{
    void *pinned;
    check_cu(cu.HostAlloc(&pinned, bytes, 0), "cuMemHostAlloc");
    MPI_Barrier(ctl);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        check_cu(cu.DtoH(pinned, (CUdeviceptr) c->dev_sbuf, bytes), "cuMemcpyDtoH");
        check_cu(cu.HtoD((CUdeviceptr) c->dev_rbuf, pinned, bytes), "cuMemcpyHtoD");
    }
    double t = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, ctl);
    cu.FreeHost(pinned);
    return t;
}
#else
double copy_pair_seconds(const struct call *c, size_t bytes, int iters, MPI_Comm ctl)
{
    return (void) c, (void) bytes, (void) iters, (void) ctl, 0.0;
}
void device_init(void)
{
    die("--mem device: this themis-bench was built without CUDA (configure --with-cuda)");
}
/* Never reached: device_init() stops first. */
static void *device_alloc(size_t bytes) { return (void) bytes, NULL; }
static void device_free(void *p) { (void) p; }
static void to_device(void *dev, const void *host, size_t bytes)
{
    (void) dev, (void) host, (void) bytes;
}
static void from_device(void *host, const void *dev, size_t bytes)
{
    (void) host, (void) dev, (void) bytes;
}
#endif

/* ------------------------------------------------------------------ one call */

/* Starts the call's nonblocking form when `req` is given, else runs the blocking one:
 * one place knows each collective's arguments, so both modes call exactly alike. */
int run_call(const struct call *c, MPI_Comm comm, MPI_Request *req)
{
    const MPI_Datatype dt = mpi_type(c->type);
    const void *sbuf = c->dev_sbuf ? c->dev_sbuf : c->sbuf;
    void *rbuf = c->dev_rbuf ? c->dev_rbuf : c->rbuf;
    const int n = (int) c->count;
    switch (c->coll) {
    case C_ALLREDUCE:
        return req ? MPI_Iallreduce(sbuf, rbuf, n, dt, MPI_SUM, comm, req)
                   : MPI_Allreduce(sbuf, rbuf, n, dt, MPI_SUM, comm);
    case C_REDUCE_SCATTER:
        return req ? MPI_Ireduce_scatter(sbuf, rbuf, c->rcounts, dt, MPI_SUM, comm, req)
                   : MPI_Reduce_scatter(sbuf, rbuf, c->rcounts, dt, MPI_SUM, comm);
    case C_REDUCE_SCATTER_BLOCK:
        return req ? MPI_Ireduce_scatter_block(sbuf, rbuf, n, dt, MPI_SUM, comm, req)
                   : MPI_Reduce_scatter_block(sbuf, rbuf, n, dt, MPI_SUM, comm);
    case C_ALLGATHER:
        return req ? MPI_Iallgather(sbuf, n, dt, rbuf, n, dt, comm, req)
                   : MPI_Allgather(sbuf, n, dt, rbuf, n, dt, comm);
    case C_BCAST: /* rbuf: the root's input, the others' result */
        return req ? MPI_Ibcast(rbuf, n, dt, BENCH_ROOT, comm, req)
                   : MPI_Bcast(rbuf, n, dt, BENCH_ROOT, comm);
    case C_REDUCE:
        return req ? MPI_Ireduce(sbuf, rbuf, n, dt, MPI_SUM, BENCH_ROOT, comm, req)
                   : MPI_Reduce(sbuf, rbuf, n, dt, MPI_SUM, BENCH_ROOT, comm);
    default: return MPI_ERR_ARG;
    }
}

/* Input and output element counts of this rank. */
static size_t input_count(const struct call *c, int n)
{
    const int per_rank = c->coll == C_REDUCE_SCATTER || c->coll == C_REDUCE_SCATTER_BLOCK;
    return per_rank ? c->count * (size_t) n : c->count;
}
static size_t output_count(const struct call *c, int n)
{
    return c->coll == C_ALLGATHER ? c->count * (size_t) n : c->count;
}

void prepare(const struct call *c, int seed)
{
    const size_t in = input_count(c, world_size);
    /* allgather: rank r's block holds global indices r*count..; others: 0.. */
    const size_t first = c->coll == C_ALLGATHER ? (size_t) world_rank * c->count : 0;
    const size_t out_bytes = output_count(c, world_size) * type_size(c->type);
    fill(c->sbuf, c->type, first, in, world_rank, seed);
    memset(c->rbuf, 0xff, out_bytes);
    if (c->coll == C_BCAST && world_rank == BENCH_ROOT) /* its input is in its one buffer */
        fill(c->rbuf, c->type, 0, in, world_rank, seed);
    if (c->dev_sbuf) {
        to_device(c->dev_sbuf, c->sbuf, in * type_size(c->type));
        to_device(c->dev_rbuf, c->rbuf, out_bytes);
    }
}

/* Number of wrong elements in this rank's result. */
size_t check(const struct call *c, int seed)
{
    const int n = world_size;
    size_t bad = 0;
    if (c->dev_rbuf) from_device(c->rbuf, c->dev_rbuf, output_count(c, n) * type_size(c->type));
    if (c->coll == C_BCAST) {
        for (size_t i = 0; i < c->count; ++i)
            bad += !get_equals(c->rbuf, c->type, i, pattern(c->type, BENCH_ROOT, i, seed));
        return bad;
    }
    if (c->coll == C_REDUCE && world_rank != BENCH_ROOT) return 0; /* no result here */
    if (c->coll == C_ALLGATHER) {
        for (int r = 0; r < n; ++r)
            for (size_t k = 0; k < c->count; ++k) {
                const size_t i = (size_t) r * c->count + k;
                bad += !get_equals(c->rbuf, c->type, i, pattern(c->type, r, i, seed));
            }
        return bad;
    }
    int table[64];
    sum_table(c->type, n, seed, table);
    const size_t first = c->coll == C_ALLREDUCE || c->coll == C_REDUCE ? 0 : (size_t) world_rank * c->count;
    for (size_t k = 0; k < c->count; ++k)
        bad += !get_equals(c->rbuf, c->type, k, expected_sum(c->type, table, first + k, seed));
    return bad;
}

/* Buffers for n calls, each large enough for every collective at the largest size. */
struct call *alloc_calls(const struct options *o, int n)
{
    const size_t esize = type_size(o->type);
    const size_t bytes = (o->max_bytes / esize + (size_t) world_size + 1) * esize;
    struct call *calls = calloc((size_t) n, sizeof *calls);
    if (!calls) fail("out of memory");
    for (int b = 0; b < n; ++b) {
        struct call *c = &calls[b];
        c->sbuf = malloc(bytes);
        c->rbuf = malloc(bytes);
        if (!c->sbuf || !c->rbuf) fail("out of memory");
        memset(c->sbuf, 0, bytes); /* touch every page before timing */
        memset(c->rbuf, 0, bytes);
        if (o->device) {
            c->dev_sbuf = device_alloc(bytes);
            c->dev_rbuf = device_alloc(bytes);
        }
    }
    return calls;
}

void free_calls(struct call *calls, int n)
{
    for (int b = 0; b < n; ++b) {
        if (calls[b].dev_sbuf) {
            device_free(calls[b].dev_sbuf);
            device_free(calls[b].dev_rbuf);
        }
        free(calls[b].sbuf);
        free(calls[b].rbuf);
    }
    free(calls);
}

/* Sets every call up for collective c at size S = `bytes`; returns the size one call
 * really moves (RS/AG round S down to whole elements per rank, at least one; the others
 * move one vector of S). */
size_t setup_calls(const struct options *o, enum coll c, size_t bytes, struct call *calls,
                   int n_calls, int *rcounts)
{
    const int n = world_size;
    const size_t esize = type_size(o->type);
    const int per_rank = c == C_REDUCE_SCATTER || c == C_REDUCE_SCATTER_BLOCK || c == C_ALLGATHER;
    const size_t elements = per_rank ? bytes / esize / (size_t) n : bytes / esize;
    const size_t count = elements ? elements : 1;
    if (count > (size_t) INT32_MAX) die("%zu bytes: count exceeds an int", bytes);
    for (int r = 0; r < n; ++r) rcounts[r] = (int) count;
    for (int b = 0; b < n_calls; ++b) {
        calls[b].coll = c;
        calls[b].type = o->type;
        calls[b].count = count;
        calls[b].rcounts = rcounts;
    }
    return (per_rank ? count * (size_t) n : count) * esize;
}
