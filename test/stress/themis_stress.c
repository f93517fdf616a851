/* themis_stress.c -- seeded randomized stress of the collectives coll/themis takes, with
 * resource bounds (public MPI API only).
 *
 * Every rank draws the same sequence from one seed: which collective (the kinds[] table:
 * the four, blocking and nonblocking; --persistent: half the nonblocking ones
 * persistent), on which communicator of a pool that is created and freed as the run goes
 * (dups, dups with themis_policy/themis_transport info keys, splits of several shapes, a
 * subgroup), the datatype and op (every other sum a user-defined one), the count (0 to
 * --max-bytes, odd counts included), in place or not, reduce_scatter's counts, and the
 * layout (derived datatypes: contiguous pairs on either side, a strided send; layout_t).
 * Inputs are a hash of (call, rank, element), so each rank computes the expected result
 * itself from every rank's inputs (integers and integer-valued floats whose sums are
 * exact: every comparison is exact), and checks the 64 bytes after its receive buffer.
 *
 * Resources: resident memory after a warm-up and at the end of the calls, and again
 * around --comm-cycles create/use/free cycles and --persistent-cycles persistent requests
 * made, started and freed (run_persistent_cycles), may grow by at most --rss-margin-mib
 * (largest rank); file descriptors open after MPI_Finalize must all have been open just
 * after MPI_Init (themis's UCX worker and sockets released; the CUDA driver's own aside).
 *
 * Memory (--mem): host; device (every buffer of a call on a communicator of two or more
 * ranks is a device copy of the host image the test fills and checks, guard included);
 * mixed (send and receive buffer each on the device or not, drawn per call and rank).
 * Device memory is allocated through the CUDA driver as themis-cuda-check does (a GPU, or
 * the emulated driver of test/cuda/cuda_fake_driver.c); builds without CUDA skip (77).
 *
 * Modes: --threads T (MPI_THREAD_MULTIPLE: T threads, each on its own communicator, run
 * their own sequences at once, a blocking allreduce in the middle of each nonblocking call,
 * beside a thread that only polls the progress loop); --die-rank R (rank R is killed by
 * SIGALRM during a stream of large allreduces: the job must end, the runner checks how).
 *
 * Output: "themis_stress: seed S" first (replay with --seed S), one line per failure
 * (bounded), figures, then "themis_stress: N passed, M failed" (M: most failures on one
 * rank). Exit status 1 on any failure, 2 on bad options.
 */
#include <mpi.h>
#include "../common/persistent_coll.h" /* MPI(X)_*_init, per series */

#include <dirent.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#if THEMIS_HAVE_CUDA
#include "cuda_driver.h"
#endif

/* ====================================================================== options */

enum { MEM_HOST, MEM_DEVICE, MEM_MIXED };

static struct {
    uint64_t seed;
    long calls;
    double seconds;
    long max_bytes;
    long comm_cycles;
    int threads;
    int die_rank;
    double rss_margin_mib;
    int mem;
    bool persistent;
    long persistent_cycles;
} opt = {0, 1000, 60, 32L << 20, 0, 0, -1, 16, MEM_HOST, false, 0};

static int world_rank, world_size;

static void usage(void)
{
    if (world_rank == 0)
        fprintf(stderr, "usage: themis-stress [--seed S] [--calls N] [--seconds T] "
                        "[--max-bytes B] [--comm-cycles C] [--threads T] [--die-rank R] "
                        "[--rss-margin-mib M] [--mem host|device|mixed] [--persistent] "
                        "[--persistent-cycles N]\n");
}

static bool parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"seed", 1, 0, 's'},        {"calls", 1, 0, 'n'},       {"seconds", 1, 0, 't'},
        {"max-bytes", 1, 0, 'b'},   {"comm-cycles", 1, 0, 'c'}, {"threads", 1, 0, 'T'},
        {"die-rank", 1, 0, 'd'},    {"rss-margin-mib", 1, 0, 'm'}, {"mem", 1, 0, 'M'},
        {"persistent", 0, 0, 'P'},  {"persistent-cycles", 1, 0, 'p'},
        /* given by run_mpi_check.sh to every program it runs; not needed here */
        {"chunks", 1, 0, 'i'},      {"min-bytes", 1, 0, 'i'},   {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
        switch (c) {
        case 's': opt.seed = strtoull(optarg, NULL, 0); break;
        case 'n': opt.calls = atol(optarg); break;
        case 't': opt.seconds = atof(optarg); break;
        case 'b': opt.max_bytes = atol(optarg); break;
        case 'c': opt.comm_cycles = atol(optarg); break;
        case 'T': opt.threads = atoi(optarg); break;
        case 'd': opt.die_rank = atoi(optarg); break;
        case 'm': opt.rss_margin_mib = atof(optarg); break;
        case 'P': opt.persistent = true; break;
        case 'p': opt.persistent_cycles = atol(optarg); break;
        case 'M':
            if (!strcmp(optarg, "host")) opt.mem = MEM_HOST;
            else if (!strcmp(optarg, "device")) opt.mem = MEM_DEVICE;
            else if (!strcmp(optarg, "mixed")) opt.mem = MEM_MIXED;
            else return false;
            break;
        case 'i': break;
        default: return false;
        }
    }
    return optind == argc && opt.max_bytes >= 64;
}

/* ====================================================================== randomness */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The sequence every rank draws alike (one per thread in --threads mode). */
typedef struct {
    uint64_t state;
} rng_t;

static uint64_t draw(rng_t *r) { return mix64(r->state++); }

/* Sequence `which` of the run's seed. The state is a counter: starting it at a hash keeps
 * the sequences of nearby seeds (and of one seed's threads) from being shifted copies of
 * each other, as counters started at the seed itself were. */
static rng_t sequence(uint64_t which) { return (rng_t){mix64(opt.seed ^ mix64(which))}; }
static long draw_below(rng_t *r, long n) { return n > 0 ? (long) (draw(r) % (uint64_t) n) : 0; }

/* ====================================================================== types and ops */

/* OP_USER_SUM is not drawn itself: every other sum (by call id, so no draw changes the
 * sequence a seed gives) runs with a user-defined commutative sum, which themis runs as
 * it runs MPI_SUM and which the MPI layer keeps in a nonblocking call's request. */
enum { OP_SUM, OP_MIN, OP_MAX, OP_BAND, OP_BOR, OP_BXOR, NOPS, OP_USER_SUM = NOPS };
static const char *const op_names[NOPS + 1] = {"sum", "min", "max", "band", "bor", "bxor", "user_sum"};

/* Input values lie in [lo, hi]: with up to 64 ranks no sum overflows the type and every
 * float sum is an exact integer. 8-bit sums stay below 256 (Open MPI 4.1's op/avx
 * saturates overflowing 8-bit sums, see README). */
typedef struct {
    const char *name;
    MPI_Datatype (*type)(void);
    int size;
    bool is_float;
    long lo, hi;
} type_t;

static MPI_Datatype t_uint8(void) { return MPI_UINT8_T; }
static MPI_Datatype t_int16(void) { return MPI_INT16_T; }
static MPI_Datatype t_int32(void) { return MPI_INT32_T; }
static MPI_Datatype t_uint32(void) { return MPI_UINT32_T; }
static MPI_Datatype t_int64(void) { return MPI_INT64_T; }
static MPI_Datatype t_float(void) { return MPI_FLOAT; }
static MPI_Datatype t_double(void) { return MPI_DOUBLE; }

static const type_t types[] = {
    {"uint8", t_uint8, 1, false, 0, 3},           {"int16", t_int16, 2, false, -500, 500},
    {"int32", t_int32, 4, false, -1000000, 1000000}, {"uint32", t_uint32, 4, false, 0, 1000000},
    {"int64", t_int64, 8, false, -(1L << 40), 1L << 40}, {"float", t_float, 4, true, -1000, 1000},
    {"double", t_double, 8, true, -(1L << 40), 1L << 40},
};
enum { NTYPES = sizeof types / sizeof *types };

/* MPI_SUM over the drawn types, as a user op; also over contiguous derived types of
 * them (the "pairs" layout), taken apart into their base type. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int ints, addrs, types_n, combiner;
    MPI_Type_get_envelope(*type, &ints, &addrs, &types_n, &combiner);
    if (combiner == MPI_COMBINER_CONTIGUOUS) {
        int per;
        MPI_Datatype base;
        MPI_Type_get_contents(*type, 1, 0, 1, &per, NULL, &base);
        int base_len = *len * per;
        user_sum(in, inout, &base_len, &base);
        return;
    }
#define USER_SUM(T)                                                                      \
    for (int i = 0; i < *len; ++i) ((T *) inout)[i] += ((const T *) in)[i];              \
    return
    if (*type == MPI_UINT8_T) { USER_SUM(uint8_t); }
    if (*type == MPI_INT16_T) { USER_SUM(int16_t); }
    if (*type == MPI_INT32_T) { USER_SUM(int32_t); }
    if (*type == MPI_UINT32_T) { USER_SUM(uint32_t); }
    if (*type == MPI_INT64_T) { USER_SUM(int64_t); }
    if (*type == MPI_FLOAT) { USER_SUM(float); }
    if (*type == MPI_DOUBLE) { USER_SUM(double); }
#undef USER_SUM
    fprintf(stderr, "themis_stress: user_sum: a type it was not written for\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
}
static MPI_Op user_sum_op = MPI_OP_NULL; /* created after MPI_Init */

static MPI_Op mpi_op(int op)
{
    const MPI_Op ops[NOPS] = {MPI_SUM, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR};
    return op == OP_USER_SUM ? user_sum_op : ops[op];
}

static long input(uint64_t call, int rank, long i, const type_t *t)
{
    const uint64_t h = mix64(call ^ mix64(((uint64_t) rank << 40) ^ (uint64_t) i));
    return t->lo + (long) (h % (uint64_t) (t->hi - t->lo + 1));
}

static long apply(int op, long a, long b)
{
    switch (op) {
    case OP_SUM:
    case OP_USER_SUM: return a + b;
    case OP_MIN: return a < b ? a : b;
    case OP_MAX: return a > b ? a : b;
    case OP_BAND: return a & b;
    case OP_BOR: return a | b;
    default: return a ^ b;
    }
}

static void store(const type_t *t, void *buf, long i, long v)
{
    char *p = (char *) buf + i * t->size;
    if (t->is_float && t->size == 4) *(float *) p = (float) v;
    else if (t->is_float) *(double *) p = (double) v;
    else if (t->size == 1) *(uint8_t *) p = (uint8_t) v;
    else if (t->size == 2) *(int16_t *) p = (int16_t) v;
    else if (t->size == 4) *(int32_t *) p = (int32_t) v;
    else *(int64_t *) p = (int64_t) v;
}

/* The stored value of v as the type holds it, widened back (unsigned 32-bit values
 * are below 2^31 here). */
static long load(const type_t *t, const void *buf, long i)
{
    const char *p = (const char *) buf + i * t->size;
    if (t->is_float && t->size == 4) return (long) *(const float *) p;
    if (t->is_float) return (long) *(const double *) p;
    if (t->size == 1) return *(const uint8_t *) p;
    if (t->size == 2) return *(const int16_t *) p;
    if (t->size == 4) return *(const int32_t *) p;
    return *(const int64_t *) p;
}

/* ====================================================================== calls */

/* One drawn call on this rank's communicator. The expected value of element i of the
 * reduced vector is the op folded over every rank's input; `block` is the range of that
 * vector (or, for allgather, of the gathered vector) that lands in recvbuf. */
typedef struct {
    MPI_Comm comm;
    int rank, size;
    uint64_t id;
    const type_t *type;
    int op;
    long count;        /* allreduce: elements; allgather: per rank */
    long counts[64];   /* reduce_scatter: per rank (the first `size` used) */
    bool in_place;
    int form;          /* form_t: blocking, nonblocking or persistent */
    int layout;        /* layout_t: how the elements are described to MPI */
    /* The datatypes given to MPI (reductions: the receive one on both sides), how many
     * elements of `type` one of theirs holds, and the send buffer's stride in elements. */
    MPI_Datatype send_type, recv_type;
    long send_per, recv_per, send_stride;
} call_t;

/* How a call is made. With --persistent, a nonblocking kind is drawn as the persistent
 * form (MPIX_*_init, MPI_Start, MPI_Wait, and, when not in place, the same request started
 * again on the same buffers, its result cleared first) for every other call id. Not by
 * default: Open MPI 4.1.4's own persistent forms (libnbc, which gets the calls themis
 * hands down) keep memory after MPI_Request_free, which the resident-memory bound would
 * take for themis's (--persistent-cycles measures themis's alone). */
typedef enum { FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT } form_t;

typedef struct {
    const char *name;
    bool reduces;
    /* elements of this rank's input, of the receive buffer, and where the received ones
     * start in the result vector */
    long (*send_elems)(const call_t *c);
    long (*recv_elems)(const call_t *c);
    long (*my_offset)(const call_t *c);
    /* Runs it in the call's form: blocking, or started (nonblocking) or made (persistent)
     * into *request. */
    int (*run)(const call_t *c, void *send, void *recv, MPI_Request *request);
    bool nonblocking;
} kind_t;

static long offset_of(const call_t *c, int rank)
{
    long off = 0;
    for (int r = 0; r < rank; ++r) off += c->counts[r];
    return off;
}

static long whole(const call_t *c) { return c->count; }
static long all_counts(const call_t *c) { return offset_of(c, c->size); }
static long all_blocks(const call_t *c) { return c->count * c->size; }
static long at_zero(const call_t *c) { (void) c; return 0; }
static long gathered(const call_t *c) { return c->count * c->size; }
static long my_count(const call_t *c) { return c->counts[c->rank]; }
static long my_rs_offset(const call_t *c) { return offset_of(c, c->rank); }
static long block_elems(const call_t *c) { return c->count; }
static long my_block_offset(const call_t *c) { return c->count * c->rank; }

static int run_allreduce(const call_t *c, void *s, void *r, MPI_Request *q)
{
    void *send = c->in_place ? MPI_IN_PLACE : s, *recv = c->in_place ? s : r;
    const int n = (int) (c->count / c->recv_per);
    const MPI_Datatype t = c->recv_type;
    const MPI_Op op = mpi_op(c->op);
    switch (c->form) {
    case FORM_BLOCKING: return MPI_Allreduce(send, recv, n, t, op, c->comm);
    case FORM_NONBLOCKING: return MPI_Iallreduce(send, recv, n, t, op, c->comm, q);
    default: return Persistent_allreduce_init(send, recv, n, t, op, c->comm, MPI_INFO_NULL, q);
    }
}
static int run_reduce_scatter(const call_t *c, void *s, void *r, MPI_Request *q)
{
    int counts[64];
    for (int i = 0; i < c->size; ++i) counts[i] = (int) (c->counts[i] / c->recv_per);
    void *send = c->in_place ? MPI_IN_PLACE : s, *recv = c->in_place ? s : r;
    const MPI_Datatype t = c->recv_type;
    const MPI_Op op = mpi_op(c->op);
    switch (c->form) {
    case FORM_BLOCKING: return MPI_Reduce_scatter(send, recv, counts, t, op, c->comm);
    case FORM_NONBLOCKING: return MPI_Ireduce_scatter(send, recv, counts, t, op, c->comm, q);
    default: return Persistent_reduce_scatter_init(send, recv, counts, t, op, c->comm, MPI_INFO_NULL, q);
    }
}
static int run_reduce_scatter_block(const call_t *c, void *s, void *r, MPI_Request *q)
{
    void *send = c->in_place ? MPI_IN_PLACE : s, *recv = c->in_place ? s : r;
    const int n = (int) (c->count / c->recv_per);
    const MPI_Datatype t = c->recv_type;
    const MPI_Op op = mpi_op(c->op);
    switch (c->form) {
    case FORM_BLOCKING: return MPI_Reduce_scatter_block(send, recv, n, t, op, c->comm);
    case FORM_NONBLOCKING: return MPI_Ireduce_scatter_block(send, recv, n, t, op, c->comm, q);
    default:
        return Persistent_reduce_scatter_block_init(send, recv, n, t, op, c->comm, MPI_INFO_NULL, q);
    }
}
static int run_allgather(const call_t *c, void *s, void *r, MPI_Request *q)
{
    void *send = c->in_place ? MPI_IN_PLACE : s;
    const int sn = (int) (c->count / c->send_per), rn = (int) (c->count / c->recv_per);
    const MPI_Datatype st = c->send_type, rt = c->recv_type;
    switch (c->form) {
    case FORM_BLOCKING: return MPI_Allgather(send, sn, st, r, rn, rt, c->comm);
    case FORM_NONBLOCKING: return MPI_Iallgather(send, sn, st, r, rn, rt, c->comm, q);
    default: return Persistent_allgather_init(send, sn, st, r, rn, rt, c->comm, MPI_INFO_NULL, q);
    }
}

/* The call kinds drawn from. In place, a reduction's input and result are in the send
 * buffer (given as the receive buffer), allgather's input is its block of the receive
 * buffer. The nonblocking forms are started and waited for at once (themis runs them on
 * a communicator a blocking call has set up; before that libnbc does), the persistent
 * ones made, started and waited for (form_t). */
static const kind_t kinds[] = {
    {"allreduce", true, whole, whole, at_zero, run_allreduce, false},
    {"reduce_scatter", true, all_counts, my_count, my_rs_offset, run_reduce_scatter, false},
    {"reduce_scatter_block", true, all_blocks, block_elems, my_block_offset,
     run_reduce_scatter_block, false},
    {"allgather", false, whole, gathered, at_zero, run_allgather, false},
    {"iallreduce", true, whole, whole, at_zero, run_allreduce, true},
    {"ireduce_scatter", true, all_counts, my_count, my_rs_offset, run_reduce_scatter, true},
    {"ireduce_scatter_block", true, all_blocks, block_elems, my_block_offset,
     run_reduce_scatter_block, true},
    {"iallgather", false, whole, gathered, at_zero, run_allgather, true},
};
enum { NKINDS = sizeof kinds / sizeof *kinds };

/* Element i of the result vector (of the gathered vector for allgather). */
static long expected(const kind_t *k, const call_t *c, long i)
{
    if (!k->reduces) return input(c->id, (int) (i / c->count), i % c->count, c->type);
    long v = input(c->id, 0, i, c->type);
    for (int r = 1; r < c->size; ++r) v = apply(c->op, v, input(c->id, r, i, c->type));
    return v;
}

/* How a call's elements are described to MPI: as the drawn type, or through derived
 * datatypes made for the call and freed as soon as it has started (MPI keeps what a
 * nonblocking call needs). themis leaves reductions on derived types to the module below
 * (Open MPI 4.1 takes only user ops on them) and runs an allgather whose receive type is
 * contiguous, converting the send side's layout. */
typedef enum {
    LAYOUT_PLAIN,
    LAYOUT_PAIRS,        /* reductions with the user sum: contiguous(2, type) both sides */
    LAYOUT_SEND_PAIRS,   /* allgather: sent as contiguous(2, type), received as type */
    LAYOUT_RECV_PAIRS,   /* allgather: sent as type, received as contiguous(2, type) */
    LAYOUT_SEND_STRIDED, /* allgather: sent as one vector(count, 1, 2, type) */
} layout_t;
static const char *const layout_names[] = {"", " as pairs", " sent as pairs",
                                           " received as pairs", " sent strided"};

/* The layout of a drawn call, from bits of its id (so the sequence a seed gives is the
 * one it gave before layouts were drawn); pairs need even counts, made so here. */
static void choose_layout(call_t *c, const kind_t *k)
{
    static const layout_t allgather_layouts[] = {LAYOUT_PLAIN, LAYOUT_SEND_PAIRS,
                                                 LAYOUT_RECV_PAIRS, LAYOUT_SEND_STRIDED};
    const unsigned bits = (unsigned) ((c->id >> 1) % 4);
    if (k->reduces)
        c->layout = c->op == OP_USER_SUM && bits < 2 ? LAYOUT_PAIRS : LAYOUT_PLAIN;
    else
        c->layout = c->in_place || c->count == 0 ? LAYOUT_PLAIN : allgather_layouts[bits];
    if (c->layout == LAYOUT_PLAIN || c->layout == LAYOUT_SEND_STRIDED) return;
    c->count &= ~1L;
    for (int r = 0; r < 64; ++r) c->counts[r] &= ~1L;
}

static MPI_Datatype committed(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    return t;
}

/* Makes the call's datatypes for its layout. */
static void make_types(call_t *c)
{
    const MPI_Datatype base = c->type->type();
    MPI_Datatype pair = MPI_DATATYPE_NULL;
    if (c->layout == LAYOUT_PAIRS || c->layout == LAYOUT_SEND_PAIRS ||
        c->layout == LAYOUT_RECV_PAIRS) {
        MPI_Type_contiguous(2, base, &pair);
        pair = committed(pair);
    }
    const bool pair_sent = c->layout == LAYOUT_PAIRS || c->layout == LAYOUT_SEND_PAIRS;
    const bool pair_received = c->layout == LAYOUT_PAIRS || c->layout == LAYOUT_RECV_PAIRS;
    c->send_type = pair_sent ? pair : base;
    c->recv_type = pair_received ? pair : base;
    c->send_per = pair_sent ? 2 : 1;
    c->recv_per = pair_received ? 2 : 1;
    c->send_stride = 1;
    if (c->layout == LAYOUT_SEND_STRIDED) {
        MPI_Datatype vector;
        MPI_Type_vector((int) c->count, 1, 2, base, &vector);
        c->send_type = committed(vector);
        c->send_per = c->count;
        c->send_stride = 2;
    }
}

static void free_types(call_t *c)
{
    const MPI_Datatype base = c->type->type();
    if (c->recv_type != base && c->recv_type != c->send_type) MPI_Type_free(&c->recv_type);
    if (c->send_type != base) MPI_Type_free(&c->send_type);
}

/* A count whose bytes follow a mix of tiny, small, medium and large messages. */
static long draw_count(rng_t *g, long elem_bytes, long max_bytes)
{
    static const long class_bytes[] = {64, 64 << 10, 1 << 20};
    const long cls = draw_below(g, 10);
    const long cap = cls < 4 ? class_bytes[0] : cls < 7 ? class_bytes[1]
                   : cls < 9 ? class_bytes[2] : max_bytes;
    return draw_below(g, (cap < max_bytes ? cap : max_bytes) / elem_bytes + 1);
}

typedef struct {
    long passed, failed;
} tally_t;

#define GUARD 64

static void report(tally_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(tally_t *t, const char *fmt, ...)
{
    if (++t->failed > 10) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("themis_stress: FAIL rank %d (seed %llu): %s\n", world_rank,
           (unsigned long long) opt.seed, line);
    fflush(stdout);
}

/* ====================================================================== memory kinds */

/* A call's buffer: the host image the test fills and checks, and what MPI is given (the
 * image, or a device copy of it: --mem device/mixed). */
typedef struct {
    char *image;
    size_t bytes; /* guard included */
    char *given;
} buffer_t;

/* Whether buffer `which` (0: send, 1: receive) of the call goes to the device. Never on a
 * communicator of one rank: themis does not take those, and the module that does (Open
 * MPI built without CUDA support) cannot read device memory. */
static bool on_device(const call_t *c, int which)
{
    if (opt.mem == MEM_HOST || c->size < 2) return false;
    return opt.mem == MEM_DEVICE || (mix64(c->id ^ ((uint64_t) world_rank << 8) ^ (uint64_t) which) & 1);
}

#if THEMIS_HAVE_CUDA
static void check_cu(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS) return;
    fprintf(stderr, "themis_stress: rank %d: %s: %s\n", world_rank, what, cuda_driver_error(r));
    MPI_Abort(MPI_COMM_WORLD, 3);
}
#endif

/* The image's bytes into the device copy (none: nothing to do). */
static void to_given(buffer_t *b)
{
#if THEMIS_HAVE_CUDA
    if (b->given != b->image)
        check_cu(cu.HtoD((CUdeviceptr) (uintptr_t) b->given, b->image, b->bytes), "cuMemcpyHtoD");
#else
    (void) b;
#endif
}

/* The device copy's bytes back into the image. */
static void to_image(buffer_t *b)
{
#if THEMIS_HAVE_CUDA
    if (b->given != b->image)
        check_cu(cu.DtoH(b->image, (CUdeviceptr) (uintptr_t) b->given, b->bytes), "cuMemcpyDtoH");
#else
    (void) b;
#endif
}

/* Gives MPI the image itself, or a device copy of it. */
static void give(buffer_t *b, bool device)
{
    b->given = b->image;
#if THEMIS_HAVE_CUDA
    if (!device) return;
    CUdeviceptr d;
    check_cu(cu.MemAlloc(&d, b->bytes), "cuMemAlloc");
    b->given = (char *) (uintptr_t) d;
    to_given(b);
#else
    (void) device; /* --mem host only: main() stops before any call otherwise */
#endif
}

/* Frees the device copy, if any. */
static void release(buffer_t *b)
{
#if THEMIS_HAVE_CUDA
    if (b->given != b->image) check_cu(cu.MemFree((CUdeviceptr) (uintptr_t) b->given), "cuMemFree");
#endif
    b->given = b->image;
}

/* --mem device/mixed: this rank's device current in the calling thread (several ranks
 * may share one GPU), the driver loaded first by the main thread. 0, or 77 with the
 * reason printed (no CUDA, no device). */
static int use_device(void)
{
#if THEMIS_HAVE_CUDA
    char why[256];
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if ((cu.lib || cuda_driver_load(why, sizeof why) == 0) &&
        cuda_driver_use_device(local ? atoi(local) : 0, why, sizeof why) == 0)
        return 0;
    printf("themis_stress: rank %d: skipped: %s\n", world_rank, why);
#else
    printf("themis_stress: skipped: --mem device/mixed needs a build with CUDA\n");
#endif
    return 77;
}

/* In --threads mode, while a nonblocking call is in flight: a blocking MPI_Allreduce of
 * 64 KiB on the same communicator (themis runs it on the engine the nonblocking call is
 * on, while other threads' progress loops may drive that call), checked. */
static int allreduce_between(MPI_Comm comm, int rank, int size)
{
    enum { N = 16384 };
    static _Thread_local int buf[N];
    for (int i = 0; i < N; ++i) buf[i] = rank + i;
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, N, MPI_INT, MPI_SUM, comm);
    for (int i = 0; rc == MPI_SUCCESS && i < N; ++i)
        if (buf[i] != size * i + size * (size - 1) / 2) rc = MPI_ERR_OTHER;
    return rc;
}

/* Draws one call on `comm` (MPI_COMM_NULL: this rank is not in it; it still draws the
 * same numbers), runs it and checks it. */
static void one_call(rng_t *g, MPI_Comm comm, long n, tally_t *t)
{
    const kind_t *k = &kinds[draw_below(g, NKINDS)];
    call_t c = {.comm = comm, .id = draw(g), .type = &types[draw_below(g, NTYPES)]};
    c.op = (int) draw_below(g, c.type->is_float ? 3 : NOPS);
    if (c.op == OP_SUM && (c.id & 1)) c.op = OP_USER_SUM;
    c.form = !k->nonblocking                        ? FORM_BLOCKING
             : opt.persistent && ((c.id >> 3) & 1) ? FORM_PERSISTENT
                                                   : FORM_NONBLOCKING;
    c.in_place = draw_below(g, 3) == 0;
    const int parts = k->run == run_allreduce ? 1 : world_size; /* at least c.size */
    c.count = draw_count(g, c.type->size, opt.max_bytes / parts);
    for (int r = 0; r < world_size && r < 64; ++r)
        c.counts[r] = draw_below(g, 4) == 0 ? 0 : draw_count(g, c.type->size, opt.max_bytes / parts);
    choose_layout(&c, k);
    if (comm == MPI_COMM_NULL) return;
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);
    make_types(&c);

    const long send_n = k->send_elems(&c), out_n = k->recv_elems(&c), off = k->my_offset(&c);
    const long send_slots = send_n * c.send_stride;
    const size_t send_bytes = (size_t) (send_slots > out_n ? send_slots : out_n) * c.type->size + GUARD;
    const size_t recv_bytes = (size_t) out_n * c.type->size + GUARD;
    char *send = malloc(send_bytes), *recv = malloc(recv_bytes);
    const long mine = k->reduces ? 0 : c.count * c.rank;
    for (long i = 0; i < send_n; ++i)
        store(c.type, c.in_place && !k->reduces ? recv : send,
              c.in_place ? i + mine : i * c.send_stride, input(c.id, c.rank, i, c.type));
    memset(recv + out_n * c.type->size, 0xa5, GUARD);
    void *result = c.in_place && k->reduces ? send : recv;

    buffer_t sb = {send, send_bytes, NULL}, rb = {recv, recv_bytes, NULL};
    give(&sb, on_device(&c, 0));
    give(&rb, on_device(&c, 1));

    static const char *const memory_names[2][2] = {{"", " [host/device]"},
                                                   {" [device/host]", " [device/device]"}};
    const char *memory = memory_names[sb.given != send][rb.given != recv];

    MPI_Request request = MPI_REQUEST_NULL;
    int rc = k->run(&c, sb.given, rb.given, &request); /* blocking: the whole call */
    /* Freed as soon as MPI allows, but a persistent request's only with the request: Open
     * MPI 4.1.4 retains nothing for a request inactive at init, and its own persistent
     * forms (libnbc, where themis hands the call down) read the datatypes at MPI_Start.
     * (mpi_np4_2x2_persistent frees them early where themis runs the calls.) */
    if (c.form != FORM_PERSISTENT) free_types(&c);
    const int runs = c.form == FORM_PERSISTENT && !c.in_place ? 2 : 1;
    long bad = -1;
    bool guard_ok = true;
    int run = 0;
    for (; run < runs && rc == MPI_SUCCESS && bad < 0 && guard_ok; ++run) {
        if (run > 0) { /* the second start must write the result again */
            memset(recv, 0x5a, (size_t) out_n * c.type->size);
            to_given(&rb);
        }
        if (c.form == FORM_PERSISTENT) rc = MPI_Start(&request);
        if (rc == MPI_SUCCESS && c.form != FORM_BLOCKING && opt.threads > 0) {
            rc = allreduce_between(c.comm, c.rank, c.size);
            if (rc != MPI_SUCCESS) report(t, "call %ld: the allreduce in between failed", n);
        }
        if (rc == MPI_SUCCESS && c.form != FORM_BLOCKING) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        to_image(&sb);
        to_image(&rb);
        for (long i = 0; rc == MPI_SUCCESS && bad < 0 && i < out_n; ++i)
            if (load(c.type, result, i) != expected(k, &c, off + i)) bad = i;
        for (int i = 0; i < GUARD; ++i)
            guard_ok &= (unsigned char) recv[out_n * c.type->size + i] == 0xa5;
    }
    if (request != MPI_REQUEST_NULL) MPI_Request_free(&request); /* an inactive persistent one */
    if (c.form == FORM_PERSISTENT) free_types(&c);
    release(&sb);
    release(&rb);
    if (rc != MPI_SUCCESS || bad >= 0 || !guard_ok)
        report(t, "call %ld: %s%s %s %s count %ld%s%s%s on %d ranks: %s%ld", n,
               c.form == FORM_PERSISTENT ? k->name + 1 : k->name,
               c.form != FORM_PERSISTENT ? "" : run > 1 ? "_init, 2nd start" : "_init",
               c.type->name, op_names[c.op], c.count, c.in_place ? " in place" : "",
               layout_names[c.layout], memory, c.size,
               rc != MPI_SUCCESS ? "error " : !guard_ok ? "wrote past the receive buffer " :
                                                         "wrong element ",
               rc != MPI_SUCCESS ? (long) rc : guard_ok ? bad : 0L);
    else
        t->passed++;
    free(send);
    free(recv);
}

/* ====================================================================== communicators */

/* themis's per-communicator info keys, and the values drawn for them ("" = not set). */
static void draw_info(rng_t *g, MPI_Info info)
{
    static const char *const policies[] = {"", "themis", "baseline"};
    static const char *const transports[] = {"", "pml", "ucx", "auto"};
    const char *p = policies[draw_below(g, 3)], *tr = transports[draw_below(g, 4)];
    if (*p) MPI_Info_set(info, "themis_policy", p);
    if (*tr) MPI_Info_set(info, "themis_transport", tr);
}

/* A new communicator of a shape (MPI_COMM_NULL where this rank is left out): 0 a dup,
 * 1-3 splits (parity, halves reversed, random colours), 4 a subgroup. */
enum { NSHAPES = 5 };
static MPI_Comm new_comm(rng_t *g, MPI_Comm parent, long serial, long shape)
{
    int prank, psize;
    MPI_Comm_rank(parent, &prank);
    MPI_Comm_size(parent, &psize);
    MPI_Info info;
    MPI_Info_create(&info);
    draw_info(g, info);
    const long left_out = draw_below(g, psize);
    int colors[64];
    for (int r = 0; r < psize && r < 64; ++r) colors[r] = (int) draw_below(g, 3);
    MPI_Comm comm = MPI_COMM_NULL;
    switch (shape) {
    case 0: MPI_Comm_dup_with_info(parent, info, &comm); break;
    case 1: MPI_Comm_split(parent, prank % 2, prank, &comm); break;
    case 2: MPI_Comm_split(parent, prank < psize / 2, psize - prank, &comm); break; /* reversed */
    case 3: MPI_Comm_split(parent, colors[prank], prank, &comm); break;
    default: { /* a subgroup without one rank */
        MPI_Group all, some;
        MPI_Comm_group(parent, &all);
        const int excl = (int) left_out;
        MPI_Group_excl(all, 1, &excl, &some);
        MPI_Comm_create(parent, some, &comm);
        MPI_Group_free(&all);
        MPI_Group_free(&some);
    }
    }
    if (comm != MPI_COMM_NULL) {
        char name[MPI_MAX_OBJECT_NAME];
        snprintf(name, sizeof name, "stress_%ld", serial);
        MPI_Comm_set_name(comm, name);
        if (shape != 0) MPI_Comm_set_info(comm, info);
    }
    MPI_Info_free(&info);
    return comm;
}

static void free_comm(MPI_Comm *c)
{
    if (*c != MPI_COMM_NULL && *c != MPI_COMM_WORLD) MPI_Comm_free(c);
    *c = MPI_COMM_NULL;
}

/* ====================================================================== resources */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double rss_mib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f) fclose(f);
    return resident * (double) sysconf(_SC_PAGESIZE) / (1 << 20);
}

/* The largest growth of resident memory over the ranks of `comm`, in MiB. */
static double max_growth(double before, MPI_Comm comm)
{
    double growth = rss_mib() - before, most;
    MPI_Allreduce(&growth, &most, 1, MPI_DOUBLE, MPI_MAX, comm);
    return most;
}

static void check_growth(const char *what, double growth, tally_t *t)
{
#ifdef __SANITIZE_ADDRESS__
    /* ASan's allocator keeps freed blocks in quarantine (up to 256 MiB): resident
     * memory then says nothing about what themis keeps. */
    if (world_rank == 0)
        printf("themis_stress: memory over %s not checked under ASan (%.1f MiB)\n", what, growth);
    return;
#endif
    if (world_rank == 0)
        printf("themis_stress: resident memory growth over %s: %.1f MiB (margin %.1f MiB)\n",
               what, growth, opt.rss_margin_mib);
    if (growth > opt.rss_margin_mib) report(t, "memory grew by %.1f MiB over %s", growth, what);
}

/* What the process's descriptors point at ("socket:[123]" counts as "socket:"). */
typedef struct {
    int n;
    char target[256][64];
} fds_t;

static void list_fds(fds_t *f)
{
    f->n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d)) && f->n < 256;) {
        char path[300], target[256];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        const ssize_t len = readlink(path, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = '\0';
        target[strcspn(target, "[")] = '\0';
        snprintf(f->target[f->n++], sizeof f->target[0], "%.63s", target);
    }
    if (d) closedir(d);
}

/* Whether a descriptor is the CUDA driver's: a GPU's device files, the emulated driver's
 * memory (both keep what they opened until the process exits, as a driver's pools do). */
static bool drivers(const char *target)
{
    return !strncmp(target, "/dev/nvidia", 11) || !strncmp(target, "/memfd:fake-cuda", 16);
}

/* Descriptors open now that were not open in `before` (counted per target kind; the
 * directory listing's own one cancels out), the CUDA driver's aside. */
static int new_fds(const fds_t *before)
{
    fds_t after;
    list_fds(&after);
    int extra = 0;
    bool used[256] = {false};
    for (int i = 0; i < after.n; ++i) {
        if (drivers(after.target[i])) continue;
        int j = 0;
        while (j < before->n && (used[j] || strcmp(after.target[i], before->target[j]))) ++j;
        if (j < before->n) used[j] = true;
        else if (++extra <= 5) printf("themis_stress: rank %d: descriptor to %s left open\n",
                                      world_rank, after.target[i]);
    }
    return extra;
}

/* ====================================================================== runs */

/* Stops every rank of `comm` at the same call: the seconds run out on the slowest. */
static bool time_is_up(double start, MPI_Comm comm)
{
    int up = now() - start > opt.seconds, any;
    MPI_Allreduce(&up, &any, 1, MPI_INT, MPI_MAX, comm);
    return any;
}

enum { POOL = 4 };

/* The random mix on a pool of communicators (slot 0 stays MPI_COMM_WORLD). */
static void run_mix(tally_t *t)
{
    rng_t g = sequence(0);
    MPI_Comm pool[POOL] = {MPI_COMM_WORLD};
    long serial = 0, n = 0;
    for (int s = 1; s < POOL; ++s) pool[s] = new_comm(&g, MPI_COMM_WORLD, serial++, 0);
    /* plan caches, free lists and UCX registrations fill during the first quarter */
    const long warm = opt.calls / 4 < 100 ? 100 : opt.calls / 4;
    double rss_warm = 0;
    const double start = now();
    for (; n < opt.calls && (n % 64 || !time_is_up(start, MPI_COMM_WORLD)); ++n) {
        if (n == warm) rss_warm = rss_mib();
        if (draw_below(&g, 50) == 0) { /* replace a communicator */
            const long slot = 1 + draw_below(&g, POOL - 1);
            free_comm(&pool[slot]);
            pool[slot] = new_comm(&g, MPI_COMM_WORLD, serial++, draw_below(&g, NSHAPES));
        }
        one_call(&g, pool[draw_below(&g, POOL)], n, t);
    }
    for (int s = 1; s < POOL; ++s) free_comm(&pool[s]);
    if (world_rank == 0)
        printf("themis_stress: %ld calls in %.1f s, %ld communicators created\n", n,
               now() - start, serial);
    if (n > warm) check_growth("the calls after the warm-up", max_growth(rss_warm, MPI_COMM_WORLD), t);
}

/* Communicators created, used once (themis sets each one up) and freed. */
static void run_cycles(tally_t *t)
{
    rng_t g = sequence(0xc0ffee);
    const long warm = opt.comm_cycles / 10;
    double rss_warm = rss_mib();
    for (long i = 0; i < opt.comm_cycles; ++i) {
        if (i == warm) rss_warm = rss_mib();
        MPI_Comm c = new_comm(&g, MPI_COMM_WORLD, 100000 + i, draw_below(&g, NSHAPES));
        rng_t call = {draw(&g)};
        one_call(&call, c, i, t);
        free_comm(&c);
    }
    check_growth("the communicator cycles after the warm-up", max_growth(rss_warm, MPI_COMM_WORLD), t);
}

/* Makes persistent request `form` (0-3: allreduce, reduce_scatter, reduce_scatter_block,
 * allgather) over MPI_COMM_WORLD: `in` holds world_size blocks of `block` ints, `out` as
 * many as the result has. */
static int make_persistent(int form, const int *in, int *out, int block, MPI_Request *q)
{
    int counts[64];
    for (int r = 0; r < world_size; ++r) counts[r] = block;
    const int all = block * world_size;
    switch (form) {
    case 0: return Persistent_allreduce_init(in, out, all, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, q);
    case 1:
        return Persistent_reduce_scatter_init(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                        MPI_INFO_NULL, q);
    case 2:
        return Persistent_reduce_scatter_block_init(in, out, block, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                              MPI_INFO_NULL, q);
    default:
        return Persistent_allgather_init(in, block, MPI_INT, out, block, MPI_INT, MPI_COMM_WORLD,
                                   MPI_INFO_NULL, q);
    }
}

/* Persistent requests made, started twice (the result cleared in between), checked and
 * freed, --persistent-cycles times, the four forms in turn, 64 Ki ints on MPI_COMM_WORLD
 * (themis's, once a blocking call has set it up); resident memory must stay within the
 * margin. Open MPI 4.1.4's own persistent forms keep memory after MPI_Request_free:
 * with `--mca coll ^themis`, 400 cycles of 1 MiB per rank grew by 161 MiB (allreduce) and
 * 2561 MiB (reduce_scatter, reduce_scatter_block). */
static void run_persistent_cycles(tally_t *t)
{
    enum { N = 65536 };
    const int block = N / world_size, sum_of_ranks = 3 * world_size * (world_size - 1) / 2;
    int *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; ++i) in[i] = 3 * world_rank + i % 1000;
    MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* sets the communicator up */
    const long warm = opt.persistent_cycles / 10;
    double rss_warm = rss_mib();
    for (long k = 0; k < opt.persistent_cycles; ++k) {
        if (k == warm) rss_warm = rss_mib();
        const int form = (int) (k % 4);
        /* element i of the result and its expected value */
        const int n = form == 0 || form == 3 ? block * world_size : block;
        const int first = form == 1 || form == 2 ? world_rank * block : 0;
        MPI_Request q;
        int rc = make_persistent(form, in, out, block, &q);
        long bad = -1;
        for (int start = 0; start < 2 && rc == MPI_SUCCESS && bad < 0; ++start) {
            memset(out, 0, N * sizeof *out);
            rc = MPI_Start(&q);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
            for (int i = 0; rc == MPI_SUCCESS && bad < 0 && i < n; ++i) {
                const int x = first + i;
                const int want = form == 3 ? 3 * (x / block) + (x % block) % 1000
                                           : sum_of_ranks + world_size * (x % 1000);
                if (out[i] != want) bad = i;
            }
        }
        if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
        if (rc != MPI_SUCCESS || bad >= 0)
            report(t, "persistent cycle %ld (form %d): %s %ld", k, form,
                   rc != MPI_SUCCESS ? "error" : "wrong element", rc != MPI_SUCCESS ? (long) rc : bad);
        else
            t->passed++;
    }
    check_growth("the persistent request cycles after the warm-up",
                 max_growth(rss_warm, MPI_COMM_WORLD), t);
    free(in);
    free(out);
}

typedef struct {
    int index;
    MPI_Comm comm;
    tally_t tally;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    if (opt.mem != MEM_HOST && use_device() != 0) MPI_Abort(MPI_COMM_WORLD, 3);
    rng_t g = sequence((uint64_t) a->index + 1);
    const double start = now();
    for (long n = 0; n < opt.calls && (n % 64 || !time_is_up(start, a->comm)); ++n)
        one_call(&g, a->comm, n, &a->tally);
    return NULL;
}

/* A thread that only polls Open MPI's progress loop (as a program's communication thread
 * testing its own requests does) until `stop`: it drives the calls in flight of every
 * communicator while their own threads start and run more on them. */
typedef struct {
    MPI_Comm comm; /* a dup of MPI_COMM_SELF: nothing ever arrives */
    atomic_int stop;
} prober_t;

static void *prober_main(void *p)
{
    prober_t *a = p;
    int flag = 0;
    while (!atomic_load(&a->stop)) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, a->comm, &flag, MPI_STATUS_IGNORE);
    return NULL;
}

/* Threads at once, each on its own communicator (the ranks' thread k share one), and a
 * prober thread. */
static void run_threads(tally_t *t)
{
    thread_arg_t args[16];
    pthread_t ids[16], prober;
    const int n = opt.threads < 16 ? opt.threads : 16;
    rng_t g = sequence(0);
    for (int i = 0; i < n; ++i) {
        args[i] = (thread_arg_t){.index = i};
        args[i].comm = new_comm(&g, MPI_COMM_WORLD, i, 0); /* a dup: every rank in it */
    }
    prober_t probe = {.stop = 0};
    MPI_Comm_dup(MPI_COMM_SELF, &probe.comm);
    pthread_create(&prober, NULL, prober_main, &probe);
    for (int i = 0; i < n; ++i) pthread_create(&ids[i], NULL, thread_main, &args[i]);
    for (int i = 0; i < n; ++i) {
        pthread_join(ids[i], NULL);
        t->passed += args[i].tally.passed;
        t->failed += args[i].tally.failed;
        free_comm(&args[i].comm);
    }
    atomic_store(&probe.stop, 1);
    pthread_join(prober, NULL);
    MPI_Comm_free(&probe.comm);
}

/* Large allreduces until the job ends: rank die_rank is killed by SIGALRM (default
 * action: terminate) a moment into them, while its peers wait for it in themis. */
static void run_die(void)
{
    const long count = opt.max_bytes / 8;
    double *buf = calloc((size_t) count, sizeof *buf);
    if (world_rank == opt.die_rank) {
        struct itimerval in = {.it_value = {.tv_usec = 300000}};
        setitimer(ITIMER_REAL, &in, NULL);
    }
    for (long i = 0;; ++i) {
        if (world_rank == 0 && i % 8 == 0) {
            printf("themis_stress: allreduce %ld of %ld doubles\n", i, count);
            fflush(stdout);
        }
        MPI_Allreduce(MPI_IN_PLACE, buf, (int) count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    fds_t fds_at_init;
    int provided;
    const bool options_ok = parse_options(argc, argv);
    /* Only the threads mode asks for more: the thread level changes what themis does. */
    MPI_Init_thread(&argc, &argv, opt.threads > 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    /* Each line written at once: a rank's stderr may share its stdout's file
     * (test/common/mpirun_flags.sh, rank-log). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!options_ok || world_size > 64) {
        usage();
        MPI_Finalize();
        return 2;
    }
    /* The driver's own descriptors (a GPU's device files) stay open until exit. */
    int skip = opt.mem == MEM_HOST ? 0 : use_device(), any_skips;
    MPI_Allreduce(&skip, &any_skips, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_skips) {
        MPI_Finalize();
        return 77;
    }
    list_fds(&fds_at_init);
    /* Buffers of the test itself come and go through mmap, so that resident memory
     * measures what the libraries keep, not the heap the test's buffers left behind. */
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    if (!opt.seed) opt.seed = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 20);
    MPI_Bcast(&opt.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("themis_stress: seed %llu (replay: --seed %llu), %d ranks\n",
               (unsigned long long) opt.seed, (unsigned long long) opt.seed, world_size);

    MPI_Op_create(user_sum, 1, &user_sum_op);
    tally_t t = {0, 0};
    if (opt.die_rank >= 0) run_die();
    if (opt.threads > 0) {
        if (provided < MPI_THREAD_MULTIPLE) report(&t, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
        else run_threads(&t);
    } else {
        run_mix(&t);
        if (opt.comm_cycles > 0) run_cycles(&t);
        if (opt.persistent_cycles > 0) run_persistent_cycles(&t);
    }

    long failed;
    MPI_Allreduce(&t.failed, &failed, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (world_rank == 0) printf("themis_stress: %ld passed, %ld failed\n", t.passed, failed);
    fflush(stdout);
    MPI_Op_free(&user_sum_op);
    MPI_Finalize();
    const int leaked = new_fds(&fds_at_init);
    if (leaked) printf("themis_stress: rank %d: %d descriptors opened and not closed\n", world_rank, leaked);
    return failed || leaked ? 1 : 0;
}
