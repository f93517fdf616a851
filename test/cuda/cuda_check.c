/* cuda_check.c: MPI_Allreduce, MPI_Reduce_scatter(_block) and MPI_Allgather on CUDA device
 * buffers, blocking, nonblocking and persistent, every result checked against values
 * computed here on the host.
 *
 *   themis-cuda-check --probe      exit 0 if a CUDA device is usable, 77 (skip) if not
 *   mpirun ... themis-cuda-check [--kinds device|mixed|split] [--expect direct|ipc|staged|nokernels|any]
 *                                [--ranks-per-gpu N]
 *   mpirun ... themis-cuda-check --threads   device-buffer nonblocking calls (run by themis,
 *                                  and handed down) waited for by another thread, which
 *                                  has no CUDA context; two threads on communicators of
 *                                  their own running device-buffer calls at once
 *   mpirun ... themis-cuda-check --bench BYTES [--iters N]
 *                                  MPI_Allreduce (float, sum) bandwidth with device and
 *                                  with host buffers, interleaved in one run
 *
 * --kinds: device = every buffer on the device; mixed = even ranks device, odd ranks
 * host (memory kinds differ between ranks); split = send and receive buffers of
 * different kinds. Cases cover what themis runs (large messages, predefined types,
 * in place, uneven counts, padded pair types, user ops, 8-bit sums reduced on the host)
 * and what it hands to the previous module (small messages, derived datatypes). Device
 * buffers carry guard bytes after their end, checked after every call.
 *
 * Written against the CUDA driver API through dlopen, like the component: the same
 * binary runs on a GPU machine and, for CI, against test/cuda/cuda_fake_driver.c; there
 * --expect checks which path ran (kernel launches, staging copies). Ranks pick device
 * (local rank % devices): several ranks may share one GPU. */
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include "../common/persistent_coll.h" /* MPI(X)_*_init, per series */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

#define GUARD 256
#define GUARD_BYTE 0xa7

/* test/cuda/cuda_fake_driver.c counts what ran (kernel launches, staging copies). */
static void (*fake_counters)(unsigned long long *);
/* ... and the allocations of pinned host memory among them. */
static unsigned long long (*fake_host_allocations)(void);
/* ... and the IPC handles it exported, opened and closed. */
static void (*fake_ipc_counters)(unsigned long long *);
/* ... and the frees it refused for want of a current context (memory a real GPU leaks). */
static unsigned long long (*fake_refused_frees)(void);

static int rank, size, failures, checks;
static int gpu_slot; /* this rank's device, for threads that make it current too */
static const char *kinds = "device", *expect = "any";

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cuda_check: rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    ++failures;
}

static void die_cu(CUresult r, const char *what)
{
    fprintf(stderr, "cuda_check: rank %d: %s: %s (%d)\n", rank, what, cuda_driver_error(r), (int) r);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* 0 with a usable device; else prints why (unless quiet) and returns 77. */
static int load_driver(int quiet)
{
    char why[256];
    if (cuda_driver_load(why, sizeof why) != 0) {
        if (!quiet) printf("cuda_check: skipped: %s\n", why);
        return 77;
    }
    *(void **) &fake_counters = dlsym(cu.lib, "themis_fake_cuda_counters");
    *(void **) &fake_host_allocations = dlsym(cu.lib, "themis_fake_cuda_host_allocations");
    *(void **) &fake_ipc_counters = dlsym(cu.lib, "themis_fake_cuda_ipc_counters");
    *(void **) &fake_refused_frees = dlsym(cu.lib, "themis_fake_cuda_refused_frees");
    return 0;
}

/* ------------------------------------------------------------------ buffers */

struct buf {
    char *p; /* what MPI gets */
    size_t bytes;
    int dev;
};

static struct buf alloc_buf(int dev, size_t bytes)
{
    struct buf b = {NULL, bytes, dev};
    if (dev) {
        CUdeviceptr d;
        CUresult r = cu.MemAlloc(&d, bytes + GUARD);
        if (r != CUDA_SUCCESS) die_cu(r, "cuMemAlloc");
        b.p = (char *) d;
        unsigned char g[GUARD];
        memset(g, GUARD_BYTE, GUARD);
        if ((r = cu.HtoD(d + bytes, g, GUARD)) != CUDA_SUCCESS) die_cu(r, "cuMemcpyHtoD");
    } else {
        b.p = malloc(bytes + GUARD);
        memset(b.p + bytes, GUARD_BYTE, GUARD);
    }
    return b;
}

static void put(struct buf *b, const void *host)
{
    if (!b->dev) {
        memcpy(b->p, host, b->bytes);
        return;
    }
    CUresult r = cu.HtoD((CUdeviceptr) b->p, host, b->bytes);
    if (r != CUDA_SUCCESS) die_cu(r, "cuMemcpyHtoD");
}

/* Copies the buffer to `host` and checks its guard. */
static void get(struct buf *b, void *host, const char *what)
{
    unsigned char g[GUARD];
    if (b->dev) {
        CUresult r = cu.DtoH(host, (CUdeviceptr) b->p, b->bytes);
        if (r == CUDA_SUCCESS) r = cu.DtoH(g, (CUdeviceptr) b->p + b->bytes, GUARD);
        if (r != CUDA_SUCCESS) die_cu(r, "cuMemcpyDtoH");
    } else {
        memcpy(host, b->p, b->bytes);
        memcpy(g, b->p + b->bytes, GUARD);
    }
    for (int i = 0; i < GUARD; ++i)
        if (g[i] != GUARD_BYTE) {
            fail("%s: written past the end of the buffer", what);
            break;
        }
}

static void free_buf(struct buf *b)
{
    if (b->dev)
        cu.MemFree((CUdeviceptr) b->p);
    else
        free(b->p);
}

/* Memory kind of this rank's send (0) or receive (1) buffer. */
static int on_dev(int which)
{
    if (!strcmp(kinds, "mixed")) return rank % 2 == 0;
    if (!strcmp(kinds, "split")) return (rank + which) % 2 == 0;
    return 1;
}

/* ------------------------------------------------------------------ values */

/* Small integers: every sum, product and comparison is exact in every type. */
static int val(int r, size_t i) { return (int) ((r * 7 + i * 13) % 11) - 5; }

enum kind { K_INT8, K_INT32, K_INT64, K_FLOAT, K_DOUBLE };

static MPI_Datatype mpi_of(enum kind k)
{
    return k == K_INT8 ? MPI_INT8_T : k == K_INT32 ? MPI_INT : k == K_INT64 ? MPI_INT64_T
           : k == K_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
}
static size_t size_of(enum kind k) { return k == K_INT8 ? 1 : k == K_INT32 || k == K_FLOAT ? 4 : 8; }

static void store(enum kind k, void *p, size_t i, double v)
{
    switch (k) {
    case K_INT8: ((int8_t *) p)[i] = (int8_t) v; break;
    case K_INT32: ((int32_t *) p)[i] = (int32_t) v; break;
    case K_INT64: ((int64_t *) p)[i] = (int64_t) v; break;
    case K_FLOAT: ((float *) p)[i] = (float) v; break;
    case K_DOUBLE: ((double *) p)[i] = v; break;
    }
}
static double load(enum kind k, const void *p, size_t i)
{
    switch (k) {
    case K_INT8: return ((const int8_t *) p)[i];
    case K_INT32: return ((const int32_t *) p)[i];
    case K_INT64: return (double) ((const int64_t *) p)[i];
    case K_FLOAT: return ((const float *) p)[i];
    default: return ((const double *) p)[i];
    }
}

/* op over all ranks of val(., i): 0 sum, 1 prod (of val % 3 + 1, kept small), 2 min, 3 max */
static double input(int op, int r, size_t i) { return op == 1 ? (val(r, i) % 3 + 1) : val(r, i); }
static double expected(int op, size_t i)
{
    double acc = input(op, 0, i);
    for (int r = 1; r < size; ++r) {
        double v = input(op, r, i);
        acc = op == 0 ? acc + v : op == 1 ? acc * v : op == 2 ? (v < acc ? v : acc) : (v > acc ? v : acc);
    }
    return acc;
}
static MPI_Op mpi_op(int op) { return op == 0 ? MPI_SUM : op == 1 ? MPI_PROD : op == 2 ? MPI_MIN : MPI_MAX; }

/* ------------------------------------------------------------------ cases */

/* Integer sum as a user op: created commutative, themis runs it; created non-commutative,
 * themis hands the calls to the module below. */
static void sum_int32(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void) type;
    for (int i = 0; i < *len; ++i) ((int32_t *) inout)[i] += ((const int32_t *) in)[i];
}

/* Device calls the module below runs on host copies (small ones, below
 * coll_themis_min_bytes, or any size with a non-commutative op), repeated on the same
 * buffers: every result checked, and with the emulated driver no pinned host memory may be
 * allocated per call after the first two: the host copies are pinned buffers kept between
 * calls, up to coll_themis_staging_bytes (at least 16 MiB). Device memory may be: the
 * module below may call the communicator's collectives in turn (tuned's All-Reduce with a
 * non-commutative op is a Reduce, then a Bcast that themis runs on the host copies), and
 * in device-direct mode such a call's node messages go through device temporaries, as
 * many at once as the peers' progress leaves in flight, so the cache of them may still
 * grow in a later call (rank 0 took 41 more in the third call on the emulated network). */
static void repeat_case(const char *what, size_t count, MPI_Op op, int calls)
{
    const char *budget_env = getenv("OMPI_MCA_coll_themis_staging_bytes");
    const size_t budget_given = budget_env ? strtoull(budget_env, NULL, 0) : (size_t) 128 << 20;
    const size_t kept = budget_given > ((size_t) 16 << 20) ? budget_given : (size_t) 16 << 20;
    const size_t bytes = count * sizeof(int32_t);
    int32_t *h = malloc(bytes);
    if (!h) fail("%s: out of memory", what);
    struct buf s = alloc_buf(on_dev(0), bytes), r = alloc_buf(on_dev(1), bytes);
    unsigned long long before = 0;
    for (int c = 0; c < calls; ++c) {
        if (c == 2 && fake_host_allocations) /* after the first calls */
            before = fake_host_allocations();
        for (size_t i = 0; i < count; ++i) h[i] = (int32_t) (input(0, rank, i) + c);
        put(&s, h);
        int rc = MPI_Allreduce(s.p, r.p, (int) count, MPI_INT, op, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) fail("%s %d: error %d", what, c, rc);
        get(&r, h, what);
        for (size_t i = 0; i < count; ++i)
            if (h[i] != (int32_t) (expected(0, i) + (double) c * size)) {
                fail("%s %d: element %zu is %d, expected %g", what, c, i, h[i],
                     expected(0, i) + (double) c * size);
                break;
            }
        ++checks;
    }
    if (fake_host_allocations && calls > 2 && 2 * count * sizeof(int32_t) <= kept) {
        const unsigned long long allocated = fake_host_allocations() - before;
        if (allocated != 0)
            fail("%s: %llu pinned allocations in %d calls after the first two (expected none)",
                 what, allocated, calls - 2);
    }
    free_buf(&s);
    free_buf(&r);
    free(h);
}

/* A persistent All-Reduce over device buffers (MPIX_Allreduce_init): started three times,
 * new input each time, every result exact. */
static void persistent_case(size_t count)
{
#if HAVE_PERSISTENT_COLL
    const size_t bytes = count * sizeof(int32_t);
    int32_t *h = malloc(bytes);
    struct buf s = alloc_buf(on_dev(0), bytes), r = alloc_buf(on_dev(1), bytes);
    MPI_Request req;
    int rc = Persistent_allreduce_init(s.p, r.p, (int) count, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &req);
    if (rc != MPI_SUCCESS) fail("persistent allreduce init: error %d", rc);
    for (int c = 0; rc == MPI_SUCCESS && c < 3; ++c) {
        for (size_t i = 0; i < count; ++i) h[i] = (int32_t) (input(0, rank, i) + c);
        put(&s, h);
        rc = MPI_Start(&req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) fail("persistent allreduce start %d: error %d", c, rc);
        get(&r, h, "persistent allreduce");
        for (size_t i = 0; i < count; ++i)
            if (h[i] != (int32_t) (expected(0, i) + (double) c * size)) {
                fail("persistent allreduce start %d: element %zu is %d, expected %g", c, i, h[i],
                     expected(0, i) + (double) c * size);
                break;
            }
        ++checks;
    }
    MPI_Request_free(&req);
    free_buf(&s);
    free_buf(&r);
    free(h);
#else
    (void) count;
#endif
}

/* Checks `n` received int32 elements against want(i). */
static void check_ints(const char *what, const int32_t *h, size_t n, int32_t (*want)(size_t, int),
                       int round)
{
    for (size_t i = 0; i < n; ++i)
        if (h[i] != want(i, round)) {
            fail("%s: element %zu is %d, expected %d", what, i, h[i], want(i, round));
            return;
        }
}

static size_t nb_block; /* nonblocking_case: elements per rank of the scattered/gathered data */
static int32_t nb_sum(size_t i, int round) { return (int32_t) (expected(0, i) + (double) round * size); }
static int32_t nb_own_sum(size_t i, int round) { return nb_sum((size_t) rank * nb_block + i, round); }
static int32_t nb_gathered(size_t i, int round) { return val((int) (i / nb_block), i % nb_block) + round; }

/* The nonblocking forms on device buffers: MPI_Iallreduce, MPI_Ireduce_scatter_block and
 * MPI_Iallgather, two rounds all outstanding at once, then one MPI_Waitall; every result
 * exact. First, that such a call does not wait for its peers: rank 0 starts an
 * MPI_Iallreduce and tests it before any other rank has started its own (they wait for
 * rank 0's word, sent after the test): it cannot be complete, and a call that blocked
 * until the others joined would hang the run (the test's timeout fails it). On a fresh
 * communicator (cold_nonblocking_case) that first call also starts its set-up, device-direct
 * probe included, which cannot end before the others start theirs. */
static void nonblocking_case(size_t count, MPI_Comm comm)
{
    enum { ROUNDS = 2 };
    nb_block = count / (size_t) size;
    const size_t all = nb_block * (size_t) size, n = count > all ? count : all;
    int32_t *h = malloc(n * sizeof(int32_t));
    MPI_Request req;
    int flag = 0, word = 0;
    struct buf s = alloc_buf(on_dev(0), count * sizeof(int32_t)), r = alloc_buf(on_dev(1), count * sizeof(int32_t));
    for (size_t i = 0; i < count; ++i) h[i] = (int32_t) input(0, rank, i);
    put(&s, h);
    if (rank != 0) MPI_Recv(&word, 1, MPI_INT, 0, 7, comm, MPI_STATUS_IGNORE);
    if (MPI_Iallreduce(s.p, r.p, (int) count, MPI_INT, MPI_SUM, comm, &req) != MPI_SUCCESS)
        fail("nonblocking allreduce: start failed");
    if (rank == 0) {
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (flag) fail("nonblocking allreduce: complete before the other ranks started it");
        for (int q = 1; q < size; ++q) MPI_Send(&word, 1, MPI_INT, q, 7, comm);
    }
    if (MPI_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS) fail("nonblocking allreduce: wait failed");
    get(&r, h, "nonblocking allreduce");
    check_ints("nonblocking allreduce started alone", h, count, nb_sum, 0);
    ++checks;
    free_buf(&s);
    free_buf(&r);

    /* Per round: allreduce, reduce_scatter_block, allgather; [send, receive] buffers. */
    struct buf b[ROUNDS][3][2];
    MPI_Request reqs[ROUNDS * 3];
    for (int c = 0; c < ROUNDS; ++c) {
        const size_t send[3] = {count, all, nb_block}, recv[3] = {count, nb_block, all};
        for (int k = 0; k < 3; ++k) {
            b[c][k][0] = alloc_buf(on_dev(0), send[k] * sizeof(int32_t));
            b[c][k][1] = alloc_buf(on_dev(1), recv[k] * sizeof(int32_t));
            for (size_t i = 0; i < send[k]; ++i)
                h[i] = k == 2 ? val(rank, i) + c : (int32_t) input(0, rank, i) + c;
            put(&b[c][k][0], h);
        }
    }
    int rc = MPI_SUCCESS;
    for (int c = 0; c < ROUNDS; ++c) {
        rc |= MPI_Iallreduce(b[c][0][0].p, b[c][0][1].p, (int) count, MPI_INT, MPI_SUM, comm,
                             &reqs[3 * c]);
        rc |= MPI_Ireduce_scatter_block(b[c][1][0].p, b[c][1][1].p, (int) nb_block, MPI_INT, MPI_SUM,
                                        comm, &reqs[3 * c + 1]);
        rc |= MPI_Iallgather(b[c][2][0].p, (int) nb_block, MPI_INT, b[c][2][1].p, (int) nb_block, MPI_INT,
                             comm, &reqs[3 * c + 2]);
    }
    if (rc != MPI_SUCCESS) fail("nonblocking calls in flight together: a start failed");
    if (MPI_Waitall(ROUNDS * 3, reqs, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
        fail("nonblocking calls in flight together: wait failed");
    for (int c = 0; c < ROUNDS; ++c) {
        get(&b[c][0][1], h, "nonblocking allreduce");
        check_ints("nonblocking allreduce in flight with others", h, count, nb_sum, c);
        get(&b[c][1][1], h, "nonblocking reduce_scatter_block");
        check_ints("nonblocking reduce_scatter_block", h, nb_block, nb_own_sum, c);
        get(&b[c][2][1], h, "nonblocking allgather");
        check_ints("nonblocking allgather", h, all, nb_gathered, c);
        checks += 3;
        for (int k = 0; k < 3; ++k) {
            free_buf(&b[c][k][0]);
            free_buf(&b[c][k][1]);
        }
    }
    free(h);
}

/* nonblocking_case on a fresh communicator ("cuda_nb_cold"): its first calls are these
 * nonblocking ones, so its set-up runs inside them (cuda_run.sh expects themis on it). */
static void cold_nonblocking_case(size_t count)
{
    MPI_Comm cold;
    MPI_Comm_dup(MPI_COMM_WORLD, &cold);
    MPI_Comm_set_name(cold, "cuda_nb_cold");
    nonblocking_case(count, cold);
    MPI_Comm_free(&cold);
}

/* --threads: device-buffer calls started by this thread and completed by MPI_Waitall in
 * another that never touched CUDA, as a communication thread of an MPI_THREAD_MULTIPLE
 * program may: their device work must still run (in the context they started in), the
 * results be exact, and what they free be freed in that context too (the emulated driver,
 * like a real one, refuses a free on a thread without a context). */
static void *wait_requests(void *reqs)
{
    return (void *) (intptr_t) MPI_Waitall(2, (MPI_Request *) reqs, MPI_STATUSES_IGNORE);
}

static void wait_in_other_thread(MPI_Request *reqs, const char *what)
{
    pthread_t waiter;
    void *rc = NULL;
    if (pthread_create(&waiter, NULL, wait_requests, reqs) != 0 || pthread_join(waiter, &rc) != 0)
        fail("%s: no thread", what);
    if ((intptr_t) rc != MPI_SUCCESS) fail("%s: error %d", what, (int) (intptr_t) rc);
}

/* An MPI_Iallreduce and an MPI_Ireduce_scatter_block on the engine, `rounds` times. */
static void waited_in_other_thread_case(size_t count, int rounds)
{
    const char *what = "waited in another thread";
    nb_block = count / (size_t) size;
    const size_t bytes = count * sizeof(int32_t), block_bytes = nb_block * sizeof(int32_t);
    int32_t *h = malloc(bytes);
    struct buf s = alloc_buf(on_dev(0), bytes), r = alloc_buf(on_dev(1), bytes);
    struct buf rs = alloc_buf(on_dev(1), block_bytes);
    for (int c = 0; c < rounds; ++c) {
        for (size_t i = 0; i < count; ++i) h[i] = (int32_t) (input(0, rank, i) + c);
        put(&s, h);
        MPI_Request reqs[2];
        if (MPI_Iallreduce(s.p, r.p, (int) count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]) != MPI_SUCCESS ||
            MPI_Ireduce_scatter_block(s.p, rs.p, (int) nb_block, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                      &reqs[1]) != MPI_SUCCESS)
            fail("%s: start failed", what);
        wait_in_other_thread(reqs, what);
        get(&r, h, what);
        check_ints("allreduce waited in another thread", h, count, nb_sum, c);
        get(&rs, h, what);
        check_ints("reduce_scatter_block waited in another thread", h, nb_block, nb_own_sum, c);
        checks += 2;
    }
    free_buf(&s);
    free_buf(&r);
    free_buf(&rs);
    free(h);
}

/* Two MPI_Iallreduce calls themis hands down (a non-commutative op) on host copies of
 * device buffers, each larger than the pinned memory kept between calls (16 MiB), so that
 * completing them frees their copies, in the waiting thread. */
static void handed_down_waited_in_other_thread_case(void)
{
    const char *what = "handed down, waited in another thread";
    const size_t count = (size_t) 17 << 18, bytes = count * sizeof(int32_t); /* 17 MiB */
    int32_t *h = malloc(bytes);
    struct buf s = alloc_buf(on_dev(0), bytes), r[2] = {alloc_buf(on_dev(1), bytes), alloc_buf(on_dev(1), bytes)};
    MPI_Op noncommutative_sum;
    MPI_Op_create(sum_int32, 0, &noncommutative_sum);
    for (size_t i = 0; i < count; ++i) h[i] = (int32_t) input(0, rank, i);
    put(&s, h);
    MPI_Request reqs[2];
    for (int k = 0; k < 2; ++k)
        if (MPI_Iallreduce(s.p, r[k].p, (int) count, MPI_INT, noncommutative_sum, MPI_COMM_WORLD,
                           &reqs[k]) != MPI_SUCCESS)
            fail("%s: start failed", what);
    wait_in_other_thread(reqs, what);
    for (int k = 0; k < 2; ++k) {
        get(&r[k], h, what);
        check_ints(what, h, count, nb_sum, 0);
        ++checks;
        free_buf(&r[k]);
    }
    MPI_Op_free(&noncommutative_sum);
    free_buf(&s);
    free(h);
}

/* Two threads, each with the device current (as an application's threads make it) and a
 * communicator of its own, run device-buffer MPI_Allreduce and MPI_Iallreduce calls at
 * the same time: the CUDA glue's per-context state (the staging copier, event pools, the
 * IPC cache, the kernels) serves both. Each counts its own wrong results. */
struct comm_thread {
    MPI_Comm comm;
    size_t count;
    int rounds, wrong, errors;
};

static void *comm_thread_main(void *p)
{
    struct comm_thread *a = p;
    char why[256];
    if (cuda_driver_use_device(gpu_slot, why, sizeof why) != 0) {
        a->errors++;
        return NULL;
    }
    int32_t *h = malloc(a->count * sizeof(int32_t));
    struct buf s = alloc_buf(on_dev(0), a->count * sizeof(int32_t));
    struct buf r = alloc_buf(on_dev(1), a->count * sizeof(int32_t));
    for (int c = 0; c < a->rounds; ++c) {
        for (size_t i = 0; i < a->count; ++i) h[i] = (int32_t) (input(0, rank, i) + c);
        put(&s, h);
        MPI_Request req;
        /* Blocking first: the first call on a communicator sets it up for themis. */
        int rc = c % 2 ? MPI_Iallreduce(s.p, r.p, (int) a->count, MPI_INT, MPI_SUM, a->comm, &req)
                       : MPI_Allreduce(s.p, r.p, (int) a->count, MPI_INT, MPI_SUM, a->comm);
        if (rc == MPI_SUCCESS && c % 2) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            a->errors++;
            continue;
        }
        get(&r, h, "allreduce on a thread's own communicator");
        for (size_t i = 0; i < a->count; ++i)
            if (h[i] != nb_sum(i, c)) {
                a->wrong++;
                break;
            }
    }
    free_buf(&s);
    free_buf(&r);
    free(h);
    return NULL;
}

static void threads_on_own_comms_case(size_t count, int rounds)
{
    struct comm_thread t[2];
    pthread_t ids[2];
    for (int k = 0; k < 2; ++k) {
        t[k] = (struct comm_thread){MPI_COMM_NULL, count, rounds, 0, 0};
        MPI_Comm_dup(MPI_COMM_WORLD, &t[k].comm);
        /* One blocking call here first sets the communicator up for themis. */
        struct comm_thread once = {t[k].comm, count, 1, 0, 0};
        comm_thread_main(&once);
        t[k].wrong += once.wrong, t[k].errors += once.errors;
    }
    for (int k = 0; k < 2; ++k) pthread_create(&ids[k], NULL, comm_thread_main, &t[k]);
    for (int k = 0; k < 2; ++k) {
        pthread_join(ids[k], NULL);
        if (t[k].wrong || t[k].errors)
            fail("thread %d on its own communicator: %d wrong results, %d errors in %d rounds", k,
                 t[k].wrong, t[k].errors, rounds);
        checks += rounds;
        MPI_Comm_free(&t[k].comm);
    }
}

/* A reduction's check through host buffer h: the result in r (unless null) is the reduction
 * of every rank's input, the send buffer s (unless null) still holds this rank's input. */
static void check_reduction(enum kind k, int op, size_t count, struct buf *s, struct buf *r, char *h,
                            const char *what)
{
    if (r) {
        get(r, h, what);
        for (size_t i = 0; i < count; ++i)
            if (load(k, h, i) != expected(op, i)) {
                fail("%s: element %zu is %g, expected %g", what, i, load(k, h, i), expected(op, i));
                break;
            }
    }
    if (s) {
        get(s, h, what);
        for (size_t i = 0; i < count; ++i)
            if (load(k, h, i) != input(op, rank, i)) {
                fail("%s: send buffer changed", what);
                break;
            }
    }
    ++checks;
}

static void allreduce_case(enum kind k, int op, size_t count, int in_place)
{
    char what[128];
    snprintf(what, sizeof what, "allreduce type %d op %d count %zu%s", (int) k, op, count,
             in_place ? " in place" : "");
    const size_t es = size_of(k), bytes = count * es;
    char *h = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < count; ++i) store(k, h, i, input(op, rank, i));
    struct buf s = alloc_buf(on_dev(0), bytes), r = alloc_buf(on_dev(1), bytes);
    if (in_place)
        put(&r, h);
    else
        put(&s, h);
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : s.p, r.p, (int) count, mpi_of(k), mpi_op(op),
                           MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) fail("%s: error %d", what, rc);
    check_reduction(k, op, count, in_place ? NULL : &s, &r, h, what);
    free_buf(&s);
    free_buf(&r);
    free(h);
}

/* MAXLOC over pair types with gaps: MPI_DOUBLE_INT (12 bytes of data, extent 16) and
 * MPI_SHORT_INT (a 2-byte hole between the fields). The gaps of the receive buffer must
 * keep what was there (as Open MPI's own collectives do). */
static void maxloc_case(size_t count, int shorts)
{
    typedef struct {
        double v;
        int i;
    } dpair;
    typedef struct {
        short v;
        int i;
    } spair;
    const size_t es = shorts ? sizeof(spair) : sizeof(dpair), bytes = count * es;
    const size_t vsize = shorts ? sizeof(short) : sizeof(double), ioff = shorts ? 4 : 8;
    unsigned char *h = malloc(bytes + 1);
    memset(h, 0xee, bytes);
    struct buf s = alloc_buf(on_dev(0), bytes), r = alloc_buf(on_dev(1), bytes);
    put(&r, h); /* gaps: 0xee */
    memset(h, 0x11, bytes); /* the send buffer's gaps differ */
    for (size_t e = 0; e < count; ++e) {
        const double v = val(rank, e);
        const short sv = (short) v;
        memcpy(h + e * es, shorts ? (const void *) &sv : (const void *) &v, vsize);
        memcpy(h + e * es + ioff, &rank, sizeof rank);
    }
    put(&s, h);
    const char *what = shorts ? "maxloc short_int" : "maxloc double_int";
    if (MPI_Allreduce(s.p, r.p, (int) count, shorts ? MPI_SHORT_INT : MPI_DOUBLE_INT, MPI_MAXLOC,
                      MPI_COMM_WORLD) != MPI_SUCCESS)
        fail("%s: error", what);
    get(&r, h, what);
    for (size_t e = 0; e < count; ++e) {
        double best = val(0, e);
        int at = 0;
        for (int q = 1; q < size; ++q)
            if (val(q, e) > best) best = val(q, e), at = q;
        double v = 0;
        short sv = 0;
        int idx = 0;
        if (shorts) {
            memcpy(&sv, h + e * es, sizeof sv);
            v = sv;
        } else {
            memcpy(&v, h + e * es, sizeof v);
        }
        memcpy(&idx, h + e * es + ioff, sizeof idx);
        if (v != best || idx != at) {
            fail("%s count %zu: element %zu is (%g,%d), expected (%g,%d)", what, count, e, v, idx, best, at);
            break;
        }
        const size_t gap = shorts ? vsize : ioff + sizeof(int), gap_end = shorts ? ioff : es;
        for (size_t b = gap; b < gap_end; ++b)
            if (h[e * es + b] != 0xee) {
                fail("%s count %zu: gap byte %zu of element %zu written", what, count, b, e);
                e = count;
                break;
            }
    }
    ++checks;
    free_buf(&s);
    free_buf(&r);
    free(h);
}

/* Sum over the vector type below: ints 0 and 2 of every 3. */
static void vector_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    for (int e = 0; e < *len; ++e) {
        ((int *) inout)[3 * e] += ((int *) in)[3 * e];
        ((int *) inout)[3 * e + 2] += ((int *) in)[3 * e + 2];
    }
}

/* A commutative user op (reduced on the host) and a derived datatype (previous module). */
static void user_and_derived_case(size_t count)
{
    MPI_Op op, vop;
    MPI_Op_create(sum_int32, 1, &op);
    MPI_Op_create(vector_sum, 1, &vop);
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* ints 0 and 2 of every 4 (extent 3 ints) */
    MPI_Type_commit(&vec);
    const size_t ints = count * 3 + 1;
    int *h = calloc(ints, sizeof(int));
    for (int pass = 0; pass < 2; ++pass) {
        const char *what = pass ? "derived datatype" : "user op";
        for (size_t i = 0; i < ints; ++i) h[i] = val(rank, i);
        struct buf s = alloc_buf(on_dev(0), ints * sizeof(int)), r = alloc_buf(on_dev(1), ints * sizeof(int));
        put(&s, h);
        for (size_t i = 0; i < ints; ++i) h[i] = -1000; /* gaps in rbuf must keep this */
        put(&r, h);
        int rc = pass ? MPI_Allreduce(s.p, r.p, (int) count, vec, vop, MPI_COMM_WORLD)
                      : MPI_Allreduce(s.p, r.p, (int) ints, MPI_INT, op, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) fail("%s: error %d", what, rc);
        get(&r, h, what);
        for (size_t i = 0; i < ints; ++i) {
            const int in_type = !pass || (i % 3 != 1 && i < count * 3);
            const int want = in_type ? (int) expected(0, i) : -1000;
            if (pass && i == ints - 1) continue; /* beyond the vector's span */
            if (h[i] != want) {
                fail("%s: int %zu is %d, expected %d", what, i, h[i], want);
                break;
            }
        }
        ++checks;
        free_buf(&s);
        free_buf(&r);
    }
    MPI_Type_free(&vec);
    MPI_Op_free(&op);
    MPI_Op_free(&vop);
    free(h);
}

static void reduce_scatter_case(enum kind k, size_t total, int block, int in_place)
{
    char what[128];
    snprintf(what, sizeof what, "reduce_scatter%s type %d total %zu%s", block ? "_block" : "", (int) k,
             total, in_place ? " in place" : "");
    int *counts = malloc(size * sizeof(int));
    size_t sum = 0;
    for (int r = 0; r < size; ++r) {
        counts[r] = block ? (int) (total / size) : (int) (total * (r % 3) / (size + 1)); /* some 0 */
        sum += (size_t) counts[r];
    }
    size_t displ = 0;
    for (int r = 0; r < rank; ++r) displ += (size_t) counts[r];
    const size_t es = size_of(k);
    char *h = malloc(sum * es + 1);
    for (size_t i = 0; i < sum; ++i) store(k, h, i, input(0, rank, i));
    struct buf s = alloc_buf(on_dev(0), sum * es);
    struct buf r = alloc_buf(on_dev(1), in_place ? sum * es : (size_t) counts[rank] * es);
    put(in_place ? &r : &s, h);
    int rc = block ? MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : s.p, r.p, counts[0], mpi_of(k),
                                              MPI_SUM, MPI_COMM_WORLD)
                   : MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : s.p, r.p, counts, mpi_of(k), MPI_SUM,
                                        MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) fail("%s: error %d", what, rc);
    get(&r, h, what);
    for (int i = 0; i < counts[rank]; ++i)
        if (load(k, h, (size_t) i) != expected(0, displ + (size_t) i)) {
            fail("%s: element %d is %g, expected %g", what, i, load(k, h, (size_t) i),
                 expected(0, displ + (size_t) i));
            break;
        }
    ++checks;
    free_buf(&s);
    free_buf(&r);
    free(h);
    free(counts);
}

/* MPI_Bcast of `count` ints from `root`: the buffer on the device where the kinds put the
 * receive buffer. */
static void bcast_case(size_t count, int root)
{
    char what[96];
    snprintf(what, sizeof what, "bcast count %zu root %d", count, root);
    int *h = malloc(count * sizeof(int) + 1);
    for (size_t i = 0; i < count; ++i) h[i] = rank == root ? val(root, i) : -77;
    struct buf b = alloc_buf(on_dev(1), count * sizeof(int));
    put(&b, h);
    int rc = MPI_Bcast(b.p, (int) count, MPI_INT, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) fail("%s: error %d", what, rc);
    get(&b, h, what);
    for (size_t i = 0; i < count; ++i)
        if (h[i] != val(root, i)) {
            fail("%s: element %zu is %d, expected %d", what, i, h[i], val(root, i));
            break;
        }
    ++checks;
    free_buf(&b);
    free(h);
}

/* MPI_Reduce of `count` elements of kind k with op `op` to `root`, in place at the root or
 * not: the root's result checked, every send buffer untouched. */
static void reduce_case(enum kind k, int op, size_t count, int root, int in_place)
{
    char what[128];
    snprintf(what, sizeof what, "reduce type %d op %d count %zu root %d%s", (int) k, op, count,
             root, in_place ? " in place" : "");
    const size_t bytes = count * size_of(k);
    char *h = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < count; ++i) store(k, h, i, input(op, rank, i));
    const int here = rank == root, place = in_place && here;
    struct buf s = alloc_buf(on_dev(0), bytes), r = alloc_buf(on_dev(1), bytes);
    put(place ? &r : &s, h);
    int rc = MPI_Reduce(place ? MPI_IN_PLACE : s.p, r.p, (int) count, mpi_of(k), mpi_op(op), root,
                        MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) fail("%s: error %d", what, rc);
    check_reduction(k, op, count, place ? NULL : &s, here ? &r : NULL, h, what);
    free_buf(&s);
    free_buf(&r);
    free(h);
}

/* `bytes_send`: the contribution goes as MPI_BYTE (a conversion themis must do). */
static void allgather_case(size_t count, int in_place, int bytes_send)
{
    char what[128];
    snprintf(what, sizeof what, "allgather count %zu%s%s", count, in_place ? " in place" : "",
             bytes_send ? " from bytes" : "");
    const size_t all = count * (size_t) size;
    int *h = malloc(all * sizeof(int) + 1);
    for (size_t i = 0; i < all; ++i) h[i] = -77;
    for (size_t i = 0; i < count; ++i) h[(size_t) rank * count + i] = val(rank, i);
    struct buf s = alloc_buf(on_dev(0), count * sizeof(int)), r = alloc_buf(on_dev(1), all * sizeof(int));
    put(&r, h);
    put(&s, h + (size_t) rank * count);
    int rc = in_place ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r.p, (int) count, MPI_INT, MPI_COMM_WORLD)
             : bytes_send ? MPI_Allgather(s.p, (int) (count * sizeof(int)), MPI_BYTE, r.p, (int) count, MPI_INT,
                                          MPI_COMM_WORLD)
                          : MPI_Allgather(s.p, (int) count, MPI_INT, r.p, (int) count, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) fail("%s: error %d", what, rc);
    get(&r, h, what);
    for (int q = 0; q < size; ++q)
        for (size_t i = 0; i < count; ++i)
            if (h[(size_t) q * count + i] != val(q, i)) {
                fail("%s: block %d element %zu is %d, expected %d", what, q, i, h[(size_t) q * count + i], val(q, i));
                q = size;
                break;
            }
    ++checks;
    free_buf(&s);
    free_buf(&r);
    free(h);
}

/* All-Reduce bandwidth, device buffers against host buffers, in one run: the two kinds
 * alternate every iteration so machine noise hits both alike. One sample = the slowest
 * rank's time of one call after a barrier; busbw = algbw x 2(n-1)/n (nccl-tests). */
static void bench(size_t bytes, int iters)
{
    const size_t count = bytes / sizeof(float);
    float *h = malloc(count * sizeof(float) + 1);
    for (size_t i = 0; i < count; ++i) h[i] = (float) val(rank, i);
    struct buf s[2], r[2]; /* [0] device, [1] host */
    for (int k = 0; k < 2; ++k) {
        s[k] = alloc_buf(k == 0, count * sizeof(float));
        r[k] = alloc_buf(k == 0, count * sizeof(float));
        put(&s[k], h);
    }
    double total[2] = {0, 0}, best[2] = {1e30, 1e30};
    const int warmup = 3;
    for (int it = -warmup; it < iters; ++it)
        for (int j = 0; j < 2; ++j) {
            const int k = (it + warmup + j) % 2; /* which kind goes first alternates */
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            MPI_Allreduce(s[k].p, r[k].p, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0, slowest = 0;
            MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (it < 0) continue;
            total[k] += slowest;
            if (slowest < best[k]) best[k] = slowest;
        }
    for (int k = 0; k < 2; ++k) { /* the results must still be right */
        get(&r[k], h, k ? "bench host" : "bench device");
        for (size_t i = 0; i < count; ++i)
            if (h[i] != (float) expected(0, i)) {
                fail("bench %s: element %zu wrong", k ? "host" : "device", i);
                break;
            }
    }
    if (rank == 0) {
        printf("cuda_bench: allreduce float sum, %zu B, %d ranks, %d iterations\n", count * sizeof(float),
               size, iters);
        printf("cuda_bench: %-7s %12s %12s %12s %12s\n", "buffers", "avg_ms", "min_ms", "algbw_GB/s",
               "busbw_GB/s");
        for (int k = 0; k < 2; ++k) {
            const double avg = total[k] / iters, alg = (double) (count * sizeof(float)) / avg / 1e9;
            printf("cuda_bench: %-7s %12.3f %12.3f %12.3f %12.3f\n", k ? "host" : "device", avg * 1e3,
                   best[k] * 1e3, alg, alg * 2.0 * (size - 1) / size);
        }
    }
    for (int k = 0; k < 2; ++k) {
        free_buf(&s[k]);
        free_buf(&r[k]);
    }
    free(h);
}

/* The whole matrix: every collective, type, op and layout above, blocking, nonblocking
 * and persistent (Bcast and Reduce blocking only). */
static void matrix(size_t big, size_t small)
{
    cold_nonblocking_case(big);
    for (int op = 0; op < 4; ++op) allreduce_case(K_FLOAT, op, big, 0);
    allreduce_case(K_DOUBLE, 0, big, 1);
    allreduce_case(K_DOUBLE, 3, big / 3, 0);
    allreduce_case(K_INT32, 0, big, 1);
    allreduce_case(K_INT64, 2, big / 2, 0);
    allreduce_case(K_INT8, 0, big, 0); /* 8-bit sum: reduced on the host */
    allreduce_case(K_INT32, 0, small, 0);
    allreduce_case(K_FLOAT, 3, small, 1);
    maxloc_case(big / 4, 0);
    maxloc_case(big / 4, 1);
    maxloc_case(small, 0);
    maxloc_case(small, 1);
    user_and_derived_case(big / 4);
    reduce_scatter_case(K_FLOAT, big, 0, 0);
    reduce_scatter_case(K_INT64, big, 0, 1);
    reduce_scatter_case(K_DOUBLE, big, 1, 0);
    reduce_scatter_case(K_INT32, big, 1, 1);
    reduce_scatter_case(K_INT32, small * size, 1, 0);
    allgather_case(big / 2, 0, 0);
    allgather_case(big / 2, 1, 0);
    allgather_case(big / 2, 0, 1);
    allgather_case(small, 0, 0);
    bcast_case(big, 0);
    bcast_case(big / 3, size - 1);
    bcast_case(small, size / 2);
    reduce_case(K_FLOAT, 0, big, size - 1, 0);
    reduce_case(K_DOUBLE, 3, big, 0, 1);
    reduce_case(K_INT32, 0, big / 3, size / 2, 1);
    reduce_case(K_FLOAT, 2, small, 0, 0);
    repeat_case("small allreduce", 37, MPI_SUM, 20);
    MPI_Op noncommutative_sum;
    MPI_Op_create(sum_int32, 0, &noncommutative_sum);
    repeat_case("12 MiB allreduce, non-commutative op", (size_t) 3 << 20, noncommutative_sum, 3);
    MPI_Op_free(&noncommutative_sum);
    persistent_case(big);
    nonblocking_case(big, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int ranks_per_gpu = 0, iters = 20, threads = 0;
    size_t bench_bytes = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--probe")) return load_driver(0);
        if (!strcmp(argv[i], "--kinds") && i + 1 < argc) kinds = argv[++i];
        else if (!strcmp(argv[i], "--expect") && i + 1 < argc) expect = argv[++i];
        else if (!strcmp(argv[i], "--ranks-per-gpu") && i + 1 < argc) ranks_per_gpu = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc) bench_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads")) threads = 1;
        else {
            fprintf(stderr, "usage: %s [--probe] [--kinds device|mixed|split] [--expect direct|ipc|staged|nokernels|any] "
                            "[--ranks-per-gpu N] [--threads] [--bench BYTES [--iters N]]\n", argv[0]);
            return 2;
        }
    }
    /* Before MPI_Init: CUDA first, as MPI+CUDA programs do. */
    int skip = load_driver(1);
    if (skip) return load_driver(0);
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int local = lr ? atoi(lr) : 0;
    if (ranks_per_gpu > 0) local /= ranks_per_gpu;
    gpu_slot = local;
    char why[256];
    if (cuda_driver_use_device(local, why, sizeof why) != 0) {
        fprintf(stderr, "cuda_check: %s\n", why);
        return 2;
    }

    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (bench_bytes) {
        bench(bench_bytes, iters > 0 ? iters : 1);
        MPI_Finalize();
        return failures ? 1 : 0;
    }
    unsigned long long before[4] = {0}, after[4] = {0};
    if (fake_counters) fake_counters(before);

    const size_t big = 300007, small = 37; /* above / below coll_themis_min_bytes */
    if (threads) { /* a blocking call first: it sets the communicator up for themis */
        if (provided < MPI_THREAD_MULTIPLE) fail("--threads: MPI_THREAD_MULTIPLE not provided");
        allreduce_case(K_INT32, 0, big, 0);
        waited_in_other_thread_case(big, 2);
        handed_down_waited_in_other_thread_case();
        threads_on_own_comms_case(big, 16);
        if (fake_refused_frees && fake_refused_frees() != 0)
            fail("%llu frees on a thread without a CUDA context (memory a GPU would leak)",
                 fake_refused_frees());
    } else {
        matrix(big, small);
    }

    if (fake_counters) { /* the emulated driver says which path ran */
        fake_counters(after);
        const unsigned long long launches = after[0] - before[0], copies = after[1] - before[1];
        const int device_here = on_dev(0) || on_dev(1);
        if (!strcmp(expect, "direct") && device_here && launches == 0)
            fail("expected reductions by kernels (direct path): none launched");
        if ((!strcmp(expect, "staged") || !strcmp(expect, "nokernels")) && launches != 0)
            fail("expected no kernel launches (%s): %llu launched", expect, launches);
        if (strcmp(expect, "any") && device_here && copies == 0) fail("no asynchronous copies at all");
        if (!strcmp(expect, "ipc")) {
            /* Device-direct node dimension: every rank, whatever its buffers, receives
             * from its peers' device memory through IPC handles (host buffers go out of
             * device temporaries), and device data is reduced by kernels. */
            unsigned long long ipc[3] = {0};
            if (fake_ipc_counters) fake_ipc_counters(ipc);
            if (ipc[1] == 0) fail("expected the device-direct node dimension: no IPC handle opened");
            if (ipc[0] == 0) fail("expected the device-direct node dimension: no IPC handle exported");
            if (device_here && launches == 0) fail("expected reductions by kernels (ipc): none launched");
            if (rank == 0)
                printf("cuda_check: emulated driver: IPC handles exported %llu, opened %llu, closed %llu (rank 0)\n",
                       ipc[0], ipc[1], ipc[2]);
        }
        if (rank == 0)
            printf("cuda_check: emulated driver: %llu kernel launches, %llu async copies (rank 0)\n",
                   launches, copies);
    }

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("cuda_check: %s: %d ranks, kinds %s: %d checks per rank, %d failures\n",
               total ? "FAILED" : "passed", size, kinds, checks, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
