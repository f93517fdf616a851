/* themis-bench: compares MPI collective implementations side by side, in one run.
 *
 * For MPI_Allreduce, MPI_Reduce_scatter, MPI_Reduce_scatter_block and MPI_Allgather
 * (OSU micro-benchmark spirit, nccl-tests bandwidth definitions).  Every implementation
 * gets its own duplicate of MPI_COMM_WORLD made with MPI_Comm_dup_with_info and the
 * Open MPI info key "ompi_comm_coll_preference":
 *
 *   themis           "themis"       + themis_policy=themis    (Themis load-balancing order)
 *   themis_baseline  "themis"       + themis_policy=baseline  (fixed hierarchical order)
 *   themis_pml       as themis      + themis_transport=pml    (stages through Open MPI's PML)
 *   themis_ucx       as themis      + themis_transport=ucx    (stages through UCX UCP)
 *   themis_cma       as themis      + themis_node_transport=cma (node dimensions single-copy)
 *   themis_nocma     as themis      + themis_node_transport=transport (node dimensions
 *                                     on the transport, as on the network)
 *   tuned            "^themis"      (coll/tuned wins, as without the component)
 *   han              "han,^themis"  (coll/han; it steps aside when all ranks share a node)
 *
 * (Open MPI 4.1 moves the components named in that key to the top of the priority order
 * and drops the ones marked ^; themis delegates what it does not run to the module below
 * it, i.e. tuned.)
 *
 * The implementations are measured interleaved: for every message size and every
 * iteration each implementation runs once, in an order that rotates each iteration, so
 * machine noise hits them alike.  One sample = the maximum over ranks of one call's
 * time (each call starts after a barrier).  Reported per implementation and size: the
 * average and minimum sample, algbw = S/t, busbw = algbw * 2(n-1)/n (allreduce) or
 * (n-1)/n (reduce_scatter, reduce_scatter_block, allgather), where S is the total size
 * as in nccl-tests (allreduce: the vector; reduce_scatter: the whole input; allgather:
 * the whole output), the utilisation T_ideal/t when bandwidths are known (T_ideal =
 * phases * S * (1-1/N) / sum_d B_d, phases 2 for allreduce, 1 otherwise) and the
 * speedup t_tuned/t and t_best(tuned,han)/t (> 1: faster than tuned).
 *
 * --nonblocking overlap|buckets times the nonblocking forms instead, in the same way: a
 * sample starts B requests back to back and waits for all of them (overlap: B = 1,
 * buckets: B = 8, DDP's gradient buckets), S and the bandwidths are for all B; with a
 * compute factor F (overlap: 1) a second phase runs a calibrated busy loop of F x t_pure
 * between the starts and the wait, polling the requests, for OSU's overlap metric.
 *
 * Run with the component on the search path, e.g.
 *   mpirun -np 4 --mca mca_base_component_path \
 *       build/ompi/mca/coll/themis/.libs:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
 *       build/bench/themis-bench -m 1M:64M --collective all --csv out.csv
 * See `themis-bench -h` and bench/RESULTS.md. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#if THEMIS_HAVE_CUDA
#include "cuda_driver.h"
#endif

/* ------------------------------------------------------------------ definitions */

enum coll { C_ALLREDUCE, C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, C_ALLGATHER, C_COUNT };
static const char *coll_names[C_COUNT] = {"allreduce", "reduce_scatter", "reduce_scatter_block",
                                          "allgather"};

enum dtype { T_FLOAT, T_DOUBLE, T_INT, T_CHAR, T_COUNT };
static const char *type_names[T_COUNT] = {"float", "double", "int", "char"};

#define MAX_IMPLS 8
#define MAX_DIMS 8

struct impl_def {
    const char *name;
    const char *preference; /* ompi_comm_coll_preference */
    const char *policy;     /* themis_policy, or NULL */
    const char *transport;  /* themis_transport, or NULL (coll_themis_transport) */
    const char *node;       /* themis_node_transport, or NULL (coll_themis_node_transport) */
};
static const struct impl_def known_impls[] = {
    {"themis", "themis", "themis", NULL, NULL},
    {"themis_baseline", "themis", "baseline", NULL, NULL},
    {"themis_pml", "themis", "themis", "pml", NULL},
    {"themis_ucx", "themis", "themis", "ucx", NULL},
    {"themis_cma", "themis", "themis", NULL, "cma"},
    {"themis_nocma", "themis", "themis", NULL, "transport"},
    {"tuned", "^themis", NULL, NULL, NULL},
    {"han", "han,^themis", NULL, NULL, NULL},
};
#define N_KNOWN_IMPLS ((int) (sizeof known_impls / sizeof known_impls[0]))

struct impl {
    const struct impl_def *def;
    MPI_Comm comm;
};

struct options {
    size_t min_bytes, max_bytes;
    int iters, warmup;
    int validate;
    enum dtype type;
    int colls[C_COUNT]; /* which collectives, in order */
    int n_colls;
    struct impl impls[MAX_IMPLS];
    int n_impls;
    double bw[MAX_DIMS]; /* bytes/s per dimension; 0 = unknown */
    int n_bw;
    int peers[MAX_DIMS];
    int n_peers;
    int measure_bw;
    const char *dims_spec;
    const char *csv, *json, *label;
    int stat; /* 0 avg, 1 median, 2 min: what bandwidths and speedups use */
    int device; /* --mem device: the collectives' buffers in CUDA device memory */
    int nb;     /* --nonblocking: a nb_mode */
    int buckets;          /* requests outstanding at once (1 when blocking) */
    double compute_factor; /* compute loop = this x t_pure; 0 = none */
    double test_every_us;  /* MPI_Testall period in the compute loop; 0 = never */
};
static const char *stat_names[] = {"avg", "median", "min"};

enum nb_mode { NB_BLOCKING, NB_OVERLAP, NB_BUCKETS, NB_COUNT };
static const char *mode_names[NB_COUNT] = {"blocking", "overlap", "buckets"};
#define MAX_BUCKETS 256

static int world_rank, world_size;

static void die(const char *fmt, ...)
{
    if (world_rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "themis-bench: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
    MPI_Finalize();
    exit(2);
}

/* A failure on some ranks only: every rank says so, then the job ends. */
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "themis-bench: rank %d: ", world_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

static void usage(void)
{
    if (world_rank != 0) return;
    printf(
        "usage: themis-bench [options]\n"
        "  -m, --message-size [MIN:]MAX  sizes S in bytes, doubling (K, M, G suffixes = 2^10..)\n"
        "                                default 1K:64M; S is the total size as in nccl-tests\n"
        "  -i, --iterations N            timed iterations per size and implementation (20)\n"
        "  -x, --warmup N                untimed iterations first (5; >= 1 sets themis up)\n"
        "  -c, --validate                check every result against values computed here\n"
        "  -d, --datatype T              float | double | int | char (float)\n"
        "      --mem M                   host | device: where the send and receive buffers\n"
        "                                live (device: CUDA memory of GPU local rank %% GPUs;\n"
        "                                inputs copied in and results read back outside\n"
        "                                the timed call) (host)\n"
        "      --collective C            allreduce | reduce_scatter | reduce_scatter_block |\n"
        "                                allgather | all, or a comma list (allreduce)\n"
        "      --impl LIST               of themis, themis_baseline, themis_pml, themis_ucx,\n"
        "                                themis_cma, themis_nocma,\n"
        "                                tuned, han (themis,themis_baseline,tuned)\n"
        "      --bw LIST                 per-dimension bandwidth per rank for the ideal bound;\n"
        "                                plain numbers are bytes/s; units B/s KB/s MB/s GB/s\n"
        "                                (decimal) or bps kbps Mbps Gbps also accepted;\n"
        "                                'measure' = measure one ring step on this machine\n"
        "      --peers LIST              peers per dimension (default: one dimension of all ranks)\n"
        "      --dims SPEC               coll_themis_dims-style spec 'AxB[:bw=LIST]' instead of\n"
        "                                --peers/--bw (bare bw numbers are Gbps, as there)\n"
        "      --csv FILE, --json FILE   write the results (rank 0)\n"
        "      --label TEXT              free-form tag written into every CSV/JSON row\n"
        "      --stat avg|median|min     time the bandwidths, utilisation and speedups use (avg)\n"
        "      --nonblocking MODE        time the nonblocking forms (MPI_Iallreduce ...) instead:\n"
        "                                overlap: OSU-style, one request per sample: t_pure =\n"
        "                                  start + MPI_Waitall at once; then a busy loop of\n"
        "                                  F x t_pure between start and wait gives t_total;\n"
        "                                  overlap%% = 100 (1 - (t_total - t_compute) / t_pure)\n"
        "                                buckets: DDP-style, B requests of S bytes each started\n"
        "                                  back to back, then MPI_Waitall; sizes, bandwidths,\n"
        "                                  util%% and speedups are for the B x S bytes\n"
        "                                every communicator first gets one blocking call of the\n"
        "                                same collective and size (themis sets up only there)\n"
        "      --buckets B               requests outstanding at once (overlap 1, buckets 8);\n"
        "                                each has its own buffers: 2 B x MAX bytes per rank\n"
        "      --compute-factor F        compute loop length in t_pure (overlap 1, buckets 0 =\n"
        "                                no compute phase)\n"
        "      --test-every US           MPI_Testall on the requests every US microseconds of\n"
        "                                compute, so progress runs (100; 0 = never)\n"
        "  -h, --help\n");
}

/* ------------------------------------------------------------------ parsing */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0) return -1;
    switch (toupper((unsigned char) *end)) {
    case 'K': v *= 1024.0; ++end; break;
    case 'M': v *= 1024.0 * 1024; ++end; break;
    case 'G': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
    }
    if (toupper((unsigned char) *end) == 'B') ++end;
    if (*end) return -1;
    *out = (size_t) v;
    return 0;
}

/* Bandwidth with an optional unit; `bare_scale` multiplies a number without one. */
static int parse_bw(const char *s, double bare_scale, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return -1;
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"bps", 1.0 / 8},    {"kbps", 1e3 / 8},  {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8},
                 {"Tbps", 1e12 / 8},  {"B/s", 1},         {"KB/s", 1e3},     {"MB/s", 1e6},
                 {"GB/s", 1e9},       {"TB/s", 1e12},     {"K", 1e3},        {"M", 1e6},
                 {"G", 1e9},          {"T", 1e12}};
    if (*end == 0) {
        *out = v * bare_scale;
        return 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; ++i)
        if (strcmp(end, units[i].unit) == 0) {
            *out = v * units[i].scale;
            return 0;
        }
    return -1;
}

/* Splits `list` at `sep`, calling fn(item) on each; returns the count or -1. */
static int split_list(const char *list, char sep, int max, int (*fn)(const char *, void *, int),
                      void *ctx)
{
    char buf[512];
    if (strlen(list) >= sizeof buf) return -1;
    strcpy(buf, list);
    int n = 0;
    char *p = buf;
    for (;;) {
        char *q = strchr(p, sep);
        if (q) *q = 0;
        if (n >= max || fn(p, ctx, n) != 0) return -1;
        ++n;
        if (!q) break;
        p = q + 1;
    }
    return n;
}

static int add_bw_bytes(const char *s, void *ctx, int i)
{
    return parse_bw(s, 1.0, &((double *) ctx)[i]);
}
static int add_bw_gbps(const char *s, void *ctx, int i)
{
    return parse_bw(s, 1e9 / 8, &((double *) ctx)[i]);
}
static int add_peer(const char *s, void *ctx, int i)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 1) return -1;
    ((int *) ctx)[i] = (int) v;
    return 0;
}
static int add_coll(const char *s, void *ctx, int i)
{
    struct options *o = ctx;
    (void) i;
    if (strcmp(s, "all") == 0) {
        for (int c = 0; c < C_COUNT; ++c) o->colls[c] = c;
        o->n_colls = C_COUNT;
        return 0;
    }
    for (int c = 0; c < C_COUNT; ++c)
        if (strcmp(s, coll_names[c]) == 0) {
            if (o->n_colls >= C_COUNT) return -1;
            o->colls[o->n_colls++] = c;
            return 0;
        }
    return -1;
}
static int add_impl(const char *s, void *ctx, int i)
{
    struct options *o = ctx;
    (void) i;
    for (int k = 0; k < N_KNOWN_IMPLS; ++k)
        if (strcmp(s, known_impls[k].name) == 0) {
            for (int j = 0; j < o->n_impls; ++j)
                if (o->impls[j].def == &known_impls[k]) return -1;
            o->impls[o->n_impls++].def = &known_impls[k];
            return 0;
        }
    return -1;
}

/* "AxBxC[:bw=LIST][:lat=..][:alg=..]": peers and bandwidths (other fields ignored). */
static void parse_dims(struct options *o, const char *spec)
{
    char buf[512];
    if (strlen(spec) >= sizeof buf) die("--dims: spec too long");
    strcpy(buf, spec);
    char *field = strtok(buf, ":");
    if (!field) die("--dims: empty spec");
    char peers[256];
    snprintf(peers, sizeof peers, "%s", field);
    o->n_peers = split_list(peers, 'x', MAX_DIMS, add_peer, o->peers);
    if (o->n_peers < 0) die("--dims: '%s' is not PEERSxPEERS...", field);
    while ((field = strtok(NULL, ":")) != NULL) {
        if (strncmp(field, "bw=", 3) == 0) {
            o->n_bw = split_list(field + 3, ',', MAX_DIMS, add_bw_gbps, o->bw);
            if (o->n_bw < 0) die("--dims: bad bandwidth list '%s'", field + 3);
        }
    }
}

/* overlap: one request, computing as long as it takes (OSU's default); buckets: a DDP
 * step's gradient buckets, communication alone unless asked. */
static void set_nonblocking_defaults(struct options *o)
{
    if (o->nb == NB_BLOCKING) {
        if (o->buckets || o->compute_factor >= 0)
            die("--buckets and --compute-factor need --nonblocking");
        o->buckets = 1;
        o->compute_factor = 0;
        return;
    }
    if (o->device)
        die("--nonblocking: not with --mem device (themis completes device-buffer requests "
            "at once, so there is nothing to overlap)");
    if (o->buckets == 0) o->buckets = o->nb == NB_OVERLAP ? 1 : 8;
    if (o->compute_factor < 0) o->compute_factor = o->nb == NB_OVERLAP ? 1 : 0;
}

static void parse_options(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->min_bytes = 1024;
    o->max_bytes = 64u << 20;
    o->iters = 20;
    o->warmup = 5;
    o->type = T_FLOAT;
    o->compute_factor = -1; /* the mode's default */
    o->test_every_us = 100;
    const char *colls = "allreduce", *impls = "themis,themis_baseline,tuned";
    const char *bw = NULL, *peers = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
#define NEXT() (i + 1 < argc ? argv[++i] : (die("%s needs a value", a), ""))
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            MPI_Finalize();
            exit(0);
        } else if (!strcmp(a, "-m") || !strcmp(a, "--message-size")) {
            const char *v = NEXT();
            const char *colon = strchr(v, ':');
            char lo[64];
            if (colon) {
                snprintf(lo, sizeof lo, "%.*s", (int) (colon - v), v);
                if (parse_size(lo, &o->min_bytes) || parse_size(colon + 1, &o->max_bytes))
                    die("-m: bad size range '%s'", v);
            } else if (parse_size(v, &o->max_bytes)) {
                die("-m: bad size '%s'", v);
            }
            if (o->min_bytes < 1) o->min_bytes = 1;
            if (o->max_bytes < o->min_bytes) die("-m: MAX below MIN");
        } else if (!strcmp(a, "-i") || !strcmp(a, "--iterations")) {
            o->iters = atoi(NEXT());
        } else if (!strcmp(a, "-x") || !strcmp(a, "--warmup")) {
            o->warmup = atoi(NEXT());
        } else if (!strcmp(a, "-c") || !strcmp(a, "--validate")) {
            o->validate = 1;
        } else if (!strcmp(a, "-d") || !strcmp(a, "--datatype")) {
            const char *v = NEXT();
            int t;
            for (t = 0; t < T_COUNT && strcmp(v, type_names[t]); ++t) {}
            if (t == T_COUNT) die("-d: unknown datatype '%s'", v);
            o->type = (enum dtype) t;
        } else if (!strcmp(a, "--mem")) {
            const char *v = NEXT();
            if (strcmp(v, "host") && strcmp(v, "device")) die("--mem: host or device, not '%s'", v);
            o->device = !strcmp(v, "device");
        } else if (!strcmp(a, "--collective")) {
            colls = NEXT();
        } else if (!strcmp(a, "--impl")) {
            impls = NEXT();
        } else if (!strcmp(a, "--bw")) {
            bw = NEXT();
        } else if (!strcmp(a, "--peers")) {
            peers = NEXT();
        } else if (!strcmp(a, "--dims")) {
            o->dims_spec = NEXT();
        } else if (!strcmp(a, "--csv")) {
            o->csv = NEXT();
        } else if (!strcmp(a, "--json")) {
            o->json = NEXT();
        } else if (!strcmp(a, "--stat")) {
            const char *v = NEXT();
            for (o->stat = 0; o->stat < 3 && strcmp(v, stat_names[o->stat]); ++o->stat) {}
            if (o->stat == 3) die("--stat: '%s' is not avg, median or min", v);
        } else if (!strcmp(a, "--label")) {
            o->label = NEXT();
        } else if (!strcmp(a, "--nonblocking")) {
            const char *v = NEXT();
            for (o->nb = NB_OVERLAP; o->nb < NB_COUNT && strcmp(v, mode_names[o->nb]); ++o->nb) {}
            if (o->nb == NB_COUNT) die("--nonblocking: '%s' is not overlap or buckets", v);
        } else if (!strcmp(a, "--buckets")) {
            o->buckets = atoi(NEXT());
            if (o->buckets < 1 || o->buckets > MAX_BUCKETS)
                die("--buckets: 1 to %d", MAX_BUCKETS);
        } else if (!strcmp(a, "--compute-factor")) {
            o->compute_factor = strtod(NEXT(), NULL);
            if (!(o->compute_factor >= 0)) die("--compute-factor must be >= 0");
        } else if (!strcmp(a, "--test-every")) {
            o->test_every_us = strtod(NEXT(), NULL);
            if (!(o->test_every_us >= 0)) die("--test-every must be >= 0");
        } else {
            usage();
            die("unknown option '%s'", a);
        }
#undef NEXT
    }
    if (o->iters < 1) die("-i must be >= 1");
    set_nonblocking_defaults(o);
    if (o->warmup < 0) die("-x must be >= 0");
    if (split_list(colls, ',', 16, add_coll, o) < 0 || o->n_colls == 0)
        die("--collective: '%s' is not a list of allreduce, reduce_scatter, "
            "reduce_scatter_block, allgather, all", colls);
    if (split_list(impls, ',', MAX_IMPLS, add_impl, o) < 0 || o->n_impls == 0)
        die("--impl: '%s' is not a list of distinct themis, themis_baseline, themis_pml, "
            "themis_ucx, themis_cma, themis_nocma, tuned, han", impls);
    for (int k = 0; o->device && k < o->n_impls; ++k)
        if (strncmp(o->impls[k].def->name, "themis", 6) != 0)
            die("--mem device: %s cannot take device buffers (Open MPI 4.1's own components are "
                "not CUDA-aware); use themis, themis_baseline, themis_pml, themis_ucx",
                o->impls[k].def->name);
    if (o->dims_spec && (bw || peers)) die("--dims replaces --bw and --peers");
    if (o->dims_spec) parse_dims(o, o->dims_spec);
    if (bw && strcmp(bw, "measure") == 0) {
        o->measure_bw = 1;
    } else if (bw) {
        o->n_bw = split_list(bw, ',', MAX_DIMS, add_bw_bytes, o->bw);
        if (o->n_bw < 0) die("--bw: bad bandwidth list '%s'", bw);
    }
    if (peers) {
        o->n_peers = split_list(peers, ',', MAX_DIMS, add_peer, o->peers);
        if (o->n_peers < 0) die("--peers: bad list '%s'", peers);
    }
    if (o->n_peers == 0) {
        o->peers[0] = world_size;
        o->n_peers = 1;
    }
    int product = 1;
    for (int d = 0; d < o->n_peers; ++d) product *= o->peers[d];
    if (product != world_size)
        die("the dimensions' peers multiply to %d, but there are %d ranks", product, world_size);
    if (o->n_bw == 1 && o->n_peers > 1) /* one value for every dimension */
        for (int d = 1; d < o->n_peers; ++d) o->bw[d] = o->bw[0];
    else if (o->n_bw > 0 && o->n_bw != o->n_peers)
        die("%d bandwidths given for %d dimensions", o->n_bw, o->n_peers);
}

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

/* ------------------------------------------------------------------ one call */

struct call {
    enum coll coll;
    enum dtype type;
    size_t count;      /* allreduce: elements; RS/AG: elements per rank (block) */
    int *rcounts;      /* reduce_scatter: count per rank */
    void *sbuf, *rbuf; /* host: the buffers, or with --mem device their host images */
    void *dev_sbuf, *dev_rbuf; /* --mem device: what MPI gets; NULL otherwise */
};

/* ------------------------------------------------------------------ device memory */

/* --mem device: the buffers MPI sees are CUDA device memory (the driver API through
 * dlopen, tools/cuda_driver.h); inputs are written and results read through host images,
 * outside the timed calls.  Builds without CUDA refuse the option. */
#if THEMIS_HAVE_CUDA
static void check_cu(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) die("%s: %s", what, cuda_driver_error(r));
}
static void device_init(void)
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
static double copy_pair_seconds(const struct call *c, size_t bytes, int iters, MPI_Comm ctl)
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
static double copy_pair_seconds(const struct call *c, size_t bytes, int iters, MPI_Comm ctl)
{
    return (void) c, (void) bytes, (void) iters, (void) ctl, 0.0;
}
static void device_init(void)
{
    die("--mem device: this themis-bench was built without CUDA (configure --with-cuda)");
}
/* Never reached: device_init() stops first. */
static void *device_alloc(size_t bytes) { return (void) bytes, NULL; }
static void device_free(void *p) { (void) p; }
static void to_device(void *dev, const void *host, size_t bytes) { (void) dev, (void) host, (void) bytes; }
static void from_device(void *host, const void *dev, size_t bytes) { (void) host, (void) dev, (void) bytes; }
#endif

/* Starts the call's nonblocking form when `req` is given, else runs the blocking one:
 * one place knows each collective's arguments, so both modes call exactly alike. */
static int run_call(const struct call *c, MPI_Comm comm, MPI_Request *req)
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
    default: return MPI_ERR_ARG;
    }
}

/* Input and output element counts of this rank. */
static size_t input_count(const struct call *c, int n)
{
    return c->coll == C_ALLGATHER || c->coll == C_ALLREDUCE ? c->count : c->count * (size_t) n;
}
static size_t output_count(const struct call *c, int n)
{
    return c->coll == C_ALLGATHER ? c->count * (size_t) n : c->count;
}

static void prepare(const struct call *c, int seed)
{
    const size_t in = input_count(c, world_size);
    /* allgather: rank r's block holds global indices r*count..; others: 0.. */
    const size_t first = c->coll == C_ALLGATHER ? (size_t) world_rank * c->count : 0;
    const size_t out_bytes = output_count(c, world_size) * type_size(c->type);
    fill(c->sbuf, c->type, first, in, world_rank, seed);
    memset(c->rbuf, 0xff, out_bytes);
    if (c->dev_sbuf) {
        to_device(c->dev_sbuf, c->sbuf, in * type_size(c->type));
        to_device(c->dev_rbuf, c->rbuf, out_bytes);
    }
}

/* Number of wrong elements in this rank's result. */
static size_t check(const struct call *c, int seed)
{
    const int n = world_size;
    size_t bad = 0;
    if (c->dev_rbuf) from_device(c->rbuf, c->dev_rbuf, output_count(c, n) * type_size(c->type));
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
    const size_t first = c->coll == C_ALLREDUCE ? 0 : (size_t) world_rank * c->count;
    for (size_t k = 0; k < c->count; ++k)
        bad += !get_equals(c->rbuf, c->type, k, expected_sum(c->type, table, first + k, seed));
    return bad;
}

/* ------------------------------------------------------------------ MPI_T */

/* Reads an Open MPI control variable into `out` as text; 0 when it exists. */
static int read_cvar(const char *name, char *out, size_t len)
{
    int index;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return -1;
    char vname[256], desc[1024];
    int nlen = sizeof vname, dlen = sizeof desc, verb, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_cvar_get_info(index, vname, &nlen, &verb, &dt, &en, desc, &dlen, &bind, &scope) !=
        MPI_SUCCESS)
        return -1;
    MPI_T_cvar_handle h;
    int count;
    if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS) return -1;
    union {
        int i;
        unsigned u;
        unsigned long ul;
        unsigned long long ull;
        double d;
        _Bool b;
        char s[1024];
    } v;
    memset(&v, 0, sizeof v);
    int rc = MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS) return -1;
    if (dt == MPI_CHAR) {
        const size_t n = strnlen(v.s, len - 1); /* truncates long strings */
        memcpy(out, v.s, n);
        out[n] = 0;
    } else if (dt == MPI_INT) {
        snprintf(out, len, "%d", v.i);
        if (en != MPI_T_ENUM_NULL) { /* show the name of the value */
            int items, elen = 64;
            char ename[64];
            if (MPI_T_enum_get_info(en, &items, ename, &elen) == MPI_SUCCESS)
                for (int k = 0; k < items; ++k) {
                    int value, ilen = 64;
                    char iname[64];
                    if (MPI_T_enum_get_item(en, k, &value, iname, &ilen) == MPI_SUCCESS &&
                        value == v.i)
                        snprintf(out, len, "%s", iname);
                }
        }
    } else if (dt == MPI_UNSIGNED) {
        snprintf(out, len, "%u", v.u);
    } else if (dt == MPI_UNSIGNED_LONG) {
        snprintf(out, len, "%lu", v.ul);
    } else if (dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_COUNT) {
        snprintf(out, len, "%llu", v.ull);
    } else if (dt == MPI_C_BOOL) {
        snprintf(out, len, "%s", v.b ? "true" : "false");
    } else if (dt == MPI_DOUBLE) {
        snprintf(out, len, "%g", v.d);
    } else {
        snprintf(out, len, "?");
    }
    return 0;
}

static const char *themis_cvars[] = {"coll_themis_priority",   "coll_themis_dims",
                                     "coll_themis_policy",     "coll_themis_chunks",
                                     "coll_themis_min_chunk_bytes", "coll_themis_max_active",
                                     "coll_themis_min_bytes",  "coll_themis_intra_policy",
                                     "coll_themis_load_model", "coll_themis_threshold",
                                     "coll_themis_transport", "coll_themis_single_dim",
                                     "coll_themis_pml_message_bytes",
                                     "coll_themis_max_active_bytes", "coll_themis_node_transport"};
#define N_THEMIS_CVARS ((int) (sizeof themis_cvars / sizeof themis_cvars[0]))
static char themis_cvar_values[N_THEMIS_CVARS][128];
static int themis_loaded;

static void read_themis_settings(void)
{
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return;
    themis_loaded = 1;
    for (int k = 0; k < N_THEMIS_CVARS; ++k)
        if (read_cvar(themis_cvars[k], themis_cvar_values[k], sizeof themis_cvar_values[k])) {
            snprintf(themis_cvar_values[k], sizeof themis_cvar_values[k], "n/a");
            if (k == 0) themis_loaded = 0;
        }
    MPI_T_finalize();
}

/* ------------------------------------------------------------------ bandwidth probe */

/* Per-rank bandwidth of one ring step (every rank sends `bytes` to its right neighbour
 * and receives as much from its left one, all at once): best of 5, max over ranks. */
static double measure_ring_bw(MPI_Comm comm, size_t bytes)
{
    char *s = malloc(bytes), *r = malloc(bytes);
    if (!s || !r) fail("out of memory");
    memset(s, 1, bytes);
    memset(r, 0, bytes);
    const int right = (world_rank + 1) % world_size, left = (world_rank + world_size - 1) % world_size;
    double best = 1e30;
    for (int k = 0; k < 6; ++k) {
        MPI_Barrier(comm);
        double t = MPI_Wtime();
        MPI_Sendrecv(s, (int) bytes, MPI_BYTE, right, 7, r, (int) bytes, MPI_BYTE, left, 7, comm,
                     MPI_STATUS_IGNORE);
        t = MPI_Wtime() - t;
        double tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
        if (k > 0 && tmax < best) best = tmax; /* first one warms up */
    }
    free(s);
    free(r);
    return (double) bytes / best;
}

/* ------------------------------------------------------------------ compute loop */

/* The stand-in for computation: a chain of dependent floating-point steps, which the
 * compiler can neither drop nor vectorise. */
static volatile double spin_sink;
static void spin(long steps)
{
    double x = spin_sink;
    for (long i = 0; i < steps; ++i) x = x * 0.999999 + 1e-6;
    spin_sink = x;
}

static double spin_rate; /* steps per second on this rank */

/* Steps per second, to size the pieces between tests: the fastest of a few runs (one
 * the OS interrupted would understate the rate). */
static void calibrate_spin(void)
{
    const long steps = 1L << 22;
    double best = 1e30;
    for (int k = 0; k < 5; ++k) {
        const double t0 = MPI_Wtime();
        spin(steps);
        const double t = MPI_Wtime() - t0;
        if (t < best) best = t;
    }
    spin_rate = (double) steps / best;
}

/* Computes for `seconds` in pieces of about test_every_us, with MPI_Testall on the
 * requests between pieces: Open MPI progresses nonblocking collectives (themis's and
 * libnbc's alike) only inside MPI calls, as an application polling its requests from
 * its compute loop would let it.  Returns the time spent in the pieces only: the
 * tests' time counts as communication, so work done inside MPI_Testall earns no
 * overlap.  The pieces run until their measured time reaches `seconds` (overshooting
 * by at most one piece): on a shared machine the calibrated rate drifts several-fold,
 * and a fixed step count would make t_compute anything but F x t_pure. */
static double compute(double seconds, double test_every_us, int n, MPI_Request *reqs)
{
    const double piece_s = test_every_us > 0 ? test_every_us * 1e-6 : 1e-3;
    long piece = (long) (piece_s * spin_rate);
    if (piece < 1) piece = 1;
    double spun = 0;
    while (spun < seconds) {
        const double t0 = MPI_Wtime();
        spin(piece);
        spun += MPI_Wtime() - t0;
        int flag;
        if (test_every_us > 0) MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
    }
    return spun;
}

/* ------------------------------------------------------------------ results */

struct result {
    enum coll coll;
    size_t bytes, count;
    double avg, med, min, max; /* seconds, over iterations of the max over ranks */
    double t;                  /* the statistic --stat picks: bandwidths, speedups */
    double algbw, busbw;  /* bytes/s */
    double ideal;         /* seconds; 0 = unknown */
    double vs_tuned, vs_best; /* 0 = no reference */
    long errors;          /* -1 = not validated */
    /* The nonblocking compute phase, seconds (overlap in %); -1 = not run. */
    double compute, total, overlap;
};

static double bus_factor(enum coll c, int n)
{
    return c == C_ALLREDUCE ? 2.0 * (n - 1) / n : (double) (n - 1) / n;
}

static double ideal_time(const struct options *o, enum coll c, size_t bytes)
{
    if (o->n_bw == 0) return 0;
    double sum = 0;
    for (int d = 0; d < o->n_peers; ++d)
        if (o->peers[d] > 1) sum += o->bw[d];
    if (sum <= 0) return 0;
    const double phases = c == C_ALLREDUCE ? 2 : 1;
    return phases * (double) bytes * (1.0 - 1.0 / world_size) / sum;
}

static int impl_index(const struct options *o, const char *name)
{
    for (int k = 0; k < o->n_impls; ++k)
        if (strcmp(o->impls[k].def->name, name) == 0) return k;
    return -1;
}

static void print_header(const struct options *o, enum coll c)
{
    printf("\n# themis-bench %s, %d ranks, datatype %s, %d iterations (+%d warm-up)%s\n",
           coll_names[c], world_size, type_names[o->type], o->iters, o->warmup,
           o->validate ? ", validated" : "");
    printf("# time = max over ranks of one call, avg/median/min over iterations; bandwidths GB/s "
           "(1e9 B/s); x_tuned = t_tuned/t (>1 faster)\n");
    printf("# bandwidths, util%% and speedups use the %s time\n", stat_names[o->stat]);
    if (o->nb != NB_BLOCKING)
        printf("# nonblocking %s: time = first start to MPI_Waitall's end of %d request%s "
               "(no compute), bytes = %d x S\n",
               mode_names[o->nb], o->buckets, o->buckets > 1 ? "s" : "", o->buckets);
    if (o->compute_factor > 0)
        printf("# compute_us, total_us: a busy loop of %g x t_pure between the starts and the "
               "wait (%s time); overlap%% = 100 (1 - (total - compute) / t_pure), >= 0\n",
               o->compute_factor, stat_names[o->stat]);
    printf("%12s  %-16s %11s %11s %11s %9s %9s %7s %8s %8s", "bytes", "impl", "avg_us", "med_us",
           "min_us", "algbw", "busbw", "util%", "x_tuned", "x_best");
    if (o->compute_factor > 0) printf(" %11s %11s %8s", "compute_us", "total_us", "overlap%");
    printf("%s\n", o->validate ? "  errors" : "");
}

static void print_row(const struct options *o, const struct result *r, const char *impl)
{
    char util[16] = "-", vt[16] = "-", vb[16] = "-", errs[32] = "";
    if (r->ideal > 0) snprintf(util, sizeof util, "%.1f", 100.0 * r->ideal / r->t);
    if (r->vs_tuned > 0) snprintf(vt, sizeof vt, "%.3f", r->vs_tuned);
    if (r->vs_best > 0) snprintf(vb, sizeof vb, "%.3f", r->vs_best);
    if (o->validate) snprintf(errs, sizeof errs, "  %6ld", r->errors);
    printf("%12zu  %-16s %11.1f %11.1f %11.1f %9.3f %9.3f %7s %8s %8s", r->bytes, impl,
           r->avg * 1e6, r->med * 1e6, r->min * 1e6, r->algbw / 1e9, r->busbw / 1e9, util, vt, vb);
    if (o->compute_factor > 0)
        printf(" %11.1f %11.1f %8.1f", r->compute * 1e6, r->total * 1e6, r->overlap);
    printf("%s\n", errs);
}

/* What the nonblocking rows time, once per run. */
static void print_nonblocking_notes(const struct options *o)
{
    printf("# nonblocking %s: %d request%s at once, each of S bytes", mode_names[o->nb],
           o->buckets, o->buckets > 1 ? "s" : "");
    if (o->compute_factor > 0)
        printf("; compute loop %g x t_pure (busy loop calibrated here: %.3g steps/us), "
               "MPI_Testall every %g us%s",
               o->compute_factor, spin_rate * 1e-6, o->test_every_us,
               o->test_every_us > 0 ? "" : " (never: progress only in MPI_Waitall)");
    printf("\n# nonblocking: tuned and han rows run libnbc's forms (Open MPI 4.1's tuned and han "
           "have none)\n");
    printf("# nonblocking: one blocking call of the same collective and size sets every "
           "communicator up first (themis sets up only in blocking calls >= "
           "coll_themis_min_bytes; below that size themis rows are libnbc's)\n");
}

static FILE *csv_file, *json_file;
static int json_rows;
static char csv_label[256], json_label[256];

/* The label as a CSV field (quoted when needed) and as JSON string contents. */
static void escape_label(const char *label)
{
    size_t c = 0, j = 0;
    const int quote = strpbrk(label, ",\"\n") != NULL;
    if (quote) csv_label[c++] = '"';
    for (const char *p = label; *p && c < sizeof csv_label - 3 && j < sizeof json_label - 3; ++p) {
        if (*p == '"') csv_label[c++] = '"';
        csv_label[c++] = *p;
        if (*p == '"' || *p == '\\') json_label[j++] = '\\';
        json_label[j++] = (unsigned char) *p < 0x20 ? ' ' : *p;
    }
    if (quote) csv_label[c++] = '"';
    csv_label[c] = 0;
    json_label[j] = 0;
}

static void open_outputs(const struct options *o, double measured_bw)
{
    if (world_rank != 0) return;
    escape_label(o->label ? o->label : "");
    if (o->csv) {
        csv_file = fopen(o->csv, "w");
        if (!csv_file) die("cannot write %s: %s", o->csv, strerror(errno));
        fprintf(csv_file, "label,collective,impl,ranks,datatype,bytes,count,iters,avg_us,median_us,"
                          "min_us,max_us,stat,algbw_GBps,busbw_GBps,ideal_us,util,speedup_vs_tuned,"
                          "speedup_vs_best,errors,mode,buckets,compute_us,total_us,overlap_pct\n");
    }
    if (o->json) {
        json_file = fopen(o->json, "w");
        if (!json_file) die("cannot write %s: %s", o->json, strerror(errno));
        fprintf(json_file, "{\n  \"config\": {\"label\": \"%s\", \"ranks\": %d, \"datatype\": "
                           "\"%s\", \"iterations\": %d, \"warmup\": %d, \"validate\": %s, "
                           "\"memory\": \"%s\", \"mode\": \"%s\", \"buckets\": %d, \"compute_factor\": %g, "
                           "\"test_every_us\": %g",
                json_label, world_size, type_names[o->type], o->iters,
                o->warmup, o->validate ? "true" : "false", o->device ? "device" : "host",
                mode_names[o->nb], o->buckets, o->compute_factor, o->test_every_us);
        fprintf(json_file, ", \"peers\": [");
        for (int d = 0; d < o->n_peers; ++d) fprintf(json_file, "%s%d", d ? ", " : "", o->peers[d]);
        fprintf(json_file, "], \"bw_Bps\": [");
        for (int d = 0; d < o->n_bw; ++d) fprintf(json_file, "%s%.6g", d ? ", " : "", o->bw[d]);
        fprintf(json_file, "], \"measured_ring_bw_Bps\": %.6g, \"themis_loaded\": %s",
                measured_bw, themis_loaded ? "true" : "false");
        for (int k = 0; k < N_THEMIS_CVARS; ++k)
            fprintf(json_file, ", \"%s\": \"%s\"", themis_cvars[k], themis_cvar_values[k]);
        fprintf(json_file, "},\n  \"results\": [");
    }
}

static void write_row(const struct options *o, const struct result *r, const char *impl)
{
    if (world_rank != 0) return;
    const double util = r->ideal > 0 ? r->ideal / r->t : 0;
    /* -1: no compute phase */
    const double compute_us = r->compute < 0 ? -1 : r->compute * 1e6;
    const double total_us = r->total < 0 ? -1 : r->total * 1e6;
    if (csv_file)
        fprintf(csv_file, "%s,%s,%s,%d,%s,%zu,%zu,%d,%.3f,%.3f,%.3f,%.3f,%s,%.6f,%.6f,%.3f,%.4f,"
                          "%.4f,%.4f,%ld,%s,%d,%.3f,%.3f,%.2f\n",
                csv_label, coll_names[r->coll], impl, world_size, type_names[o->type], r->bytes, r->count, o->iters, r->avg * 1e6, r->med * 1e6,
                r->min * 1e6, r->max * 1e6, stat_names[o->stat], r->algbw / 1e9, r->busbw / 1e9, r->ideal * 1e6, util, r->vs_tuned,
                r->vs_best, r->errors, mode_names[o->nb], o->buckets, compute_us, total_us,
                r->overlap);
    if (json_file)
        fprintf(json_file,
                "%s\n    {\"label\": \"%s\", \"collective\": \"%s\", \"impl\": \"%s\", \"ranks\": "
                "%d, \"bytes\": %zu, \"count\": %zu, \"avg_us\": %.3f, \"median_us\": %.3f, "
                "\"min_us\": %.3f, \"max_us\": %.3f, \"stat\": \"%s\", \"algbw_GBps\": %.6f, \"busbw_GBps\": %.6f, \"ideal_us\": "
                "%.3f, \"util\": %.4f, \"speedup_vs_tuned\": %.4f, \"speedup_vs_best\": %.4f, "
                "\"errors\": %ld, \"mode\": \"%s\", \"buckets\": %d, \"compute_us\": %.3f, "
                "\"total_us\": %.3f, \"overlap_pct\": %.2f}",
                json_rows++ ? "," : "", json_label, coll_names[r->coll], impl,
                world_size, r->bytes, r->count, r->avg * 1e6, r->med * 1e6, r->min * 1e6,
                r->max * 1e6, stat_names[o->stat], r->algbw / 1e9, r->busbw / 1e9, r->ideal * 1e6, util, r->vs_tuned, r->vs_best,
                r->errors, mode_names[o->nb], o->buckets, compute_us, total_us, r->overlap);
}

static void close_outputs(void)
{
    if (csv_file) fclose(csv_file);
    if (json_file) {
        fprintf(json_file, "\n  ]\n}\n");
        fclose(json_file);
    }
}

/* ------------------------------------------------------------------ main loop */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}
static double median(const double *v, int n)
{
    double tmp[n];
    memcpy(tmp, v, sizeof(double) * (size_t) n);
    qsort(tmp, (size_t) n, sizeof(double), cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

/* Buffers for n calls, each large enough for every collective at the largest size. */
static struct call *alloc_calls(const struct options *o, int n)
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

static void free_calls(struct call *calls, int n)
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
 * really moves (RS/AG round S down to whole elements per rank, at least one). */
static size_t setup_calls(const struct options *o, enum coll c, size_t bytes, struct call *calls,
                          int n_calls, int *rcounts)
{
    const int n = world_size;
    const size_t esize = type_size(o->type);
    const size_t elements = c == C_ALLREDUCE ? bytes / esize : bytes / esize / (size_t) n;
    const size_t count = elements ? elements : 1;
    if (count > (size_t) INT32_MAX) die("%zu bytes: count exceeds an int", bytes);
    for (int r = 0; r < n; ++r) rcounts[r] = (int) count;
    for (int b = 0; b < n_calls; ++b) {
        calls[b].coll = c;
        calls[b].type = o->type;
        calls[b].count = count;
        calls[b].rcounts = rcounts;
    }
    return (c == C_ALLREDUCE ? count : count * (size_t) n) * esize;
}

/* What one sample runs: the calls (one when blocking) on an implementation's communicator. */
struct sampler {
    const struct options *o;
    MPI_Comm ctl;
    struct call *calls;
    int n_calls;
    MPI_Request *reqs;       /* NULL: blocking calls */
    const double *compute_s; /* per implementation: the compute loop's length; NULL: none */
};

/* This rank's time of one sample on implementation k (and of its compute loop in *spun). */
static double one_sample(const struct sampler *s, int k, double *spun)
{
    const MPI_Comm comm = s->o->impls[k].comm;
    *spun = 0;
    const double t0 = MPI_Wtime();
    for (int b = 0; b < s->n_calls; ++b)
        if (run_call(&s->calls[b], comm, s->reqs ? &s->reqs[b] : NULL) != MPI_SUCCESS)
            fail("%s failed in %s", coll_names[s->calls[b].coll], s->o->impls[k].def->name);
    if (s->reqs) {
        if (s->compute_s) *spun = compute(s->compute_s[k], s->o->test_every_us, s->n_calls, s->reqs);
        if (MPI_Waitall(s->n_calls, s->reqs, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            fail("MPI_Waitall failed in %s", s->o->impls[k].def->name);
    }
    return MPI_Wtime() - t0;
}

/* Warm-up and timed samples, the implementations interleaved in an order that rotates
 * every iteration (so machine noise hits them alike); times[k * iters + it] is this
 * rank's time (spun[..] its compute loop's), errors[k] gains the wrong result elements
 * with -c. */
static void run_samples(const struct sampler *s, double *times, double *spun, long *errors)
{
    const struct options *o = s->o;
    const int ni = o->n_impls;
    for (int b = 0; !o->validate && b < s->n_calls; ++b) prepare(&s->calls[b], 0);
    for (int it = -o->warmup; it < o->iters; ++it) {
        const int rot = (it + o->warmup) % ni;
        for (int j = 0; j < ni; ++j) {
            const int k = (j + rot) % ni;
            /* Inputs differ per sample and per call, so a stale or swapped result shows. */
            const int seed = ((it + o->warmup) * ni + k) * s->n_calls;
            for (int b = 0; o->validate && b < s->n_calls; ++b) prepare(&s->calls[b], seed + b);
            MPI_Barrier(s->ctl);
            double spin_t;
            const double t = one_sample(s, k, &spin_t);
            if (it >= 0) {
                times[k * o->iters + it] = t;
                spun[k * o->iters + it] = spin_t;
            }
            for (int b = 0; o->validate && b < s->n_calls; ++b)
                errors[k] += (long) check(&s->calls[b], seed + b);
        }
    }
}

/* avg, median, min and max of one implementation's samples, and the one --stat picks. */
static void set_stats(struct result *r, const double *v, int n, int stat)
{
    double sum = 0;
    r->min = 1e30;
    r->max = 0;
    for (int it = 0; it < n; ++it) {
        sum += v[it];
        if (v[it] < r->min) r->min = v[it];
        if (v[it] > r->max) r->max = v[it];
    }
    r->avg = sum / n;
    r->med = median(v, n);
    r->t = stat == 0 ? r->avg : stat == 1 ? r->med : r->min;
}

static double stat_of(const double *v, int n, int stat)
{
    struct result r;
    set_stats(&r, v, n, stat);
    return r.t;
}

/* themis sets a communicator up only inside a blocking call of at least
 * coll_themis_min_bytes (set-up is collective and blocking, which a nonblocking call
 * must not be); until then the communicator's nonblocking calls go to libnbc.  So
 * every implementation's communicator gets one blocking call of this collective and
 * size before the nonblocking ones are timed, or the themis rows would time libnbc. */
static void set_up_blocking(const struct options *o, struct call *call)
{
    prepare(call, 0);
    for (int k = 0; k < o->n_impls; ++k)
        if (run_call(call, o->impls[k].comm, NULL) != MPI_SUCCESS)
            fail("%s failed in %s", coll_names[call->coll], o->impls[k].def->name);
}

/* The compute phase of the nonblocking modes: each implementation computes for
 * compute_factor x its own t_pure (res[k].t) while its requests are in flight. */
static void run_compute_phase(const struct sampler *pure, struct result *res, double *times,
                              long *errors)
{
    const struct options *o = pure->o;
    const int ni = o->n_impls, iters = o->iters;
    double compute_s[MAX_IMPLS];
    for (int k = 0; k < ni; ++k) compute_s[k] = o->compute_factor * res[k].t;
    struct sampler s = *pure;
    s.compute_s = compute_s;
    double *spun = times + ni * iters;
    run_samples(&s, times, spun, errors);
    /* Times and compute times of the slowest rank, each. */
    MPI_Allreduce(MPI_IN_PLACE, times, 2 * ni * iters, MPI_DOUBLE, MPI_MAX, s.ctl);
    for (int k = 0; k < ni; ++k) {
        struct result *r = &res[k];
        r->total = stat_of(&times[k * iters], iters, o->stat);
        r->compute = stat_of(&spun[k * iters], iters, o->stat);
        const double overlap = 100.0 * (1.0 - (r->total - r->compute) / r->t);
        r->overlap = overlap > 0 ? overlap : 0;
    }
}

/* Speedups against tuned and the best of tuned and han, then one row per implementation. */
static void report(const struct options *o, struct result *res)
{
    const int tuned = impl_index(o, "tuned"), han = impl_index(o, "han");
    double best = 0;
    if (tuned >= 0) best = res[tuned].t;
    if (han >= 0 && (best == 0 || res[han].t < best)) best = res[han].t;
    for (int k = 0; k < o->n_impls; ++k) {
        res[k].vs_tuned = tuned >= 0 ? res[tuned].t / res[k].t : 0;
        res[k].vs_best = best > 0 ? best / res[k].t : 0;
        if (world_rank == 0) {
            print_row(o, &res[k], o->impls[k].def->name);
            write_row(o, &res[k], o->impls[k].def->name);
        }
    }
    if (world_rank == 0) fflush(stdout);
}

/* Returns the number of wrong result elements over all ranks and implementations. */
static long bench_collective(const struct options *o, enum coll c, MPI_Comm ctl,
                             struct call *calls, int n_calls)
{
    const int ni = o->n_impls, iters = o->iters;
    int *rcounts = malloc(sizeof(int) * (size_t) world_size);
    double *times = malloc(sizeof(double) * 2 * (size_t) (ni * iters)); /* times, spun */
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) n_calls);
    if (!rcounts || !times || !reqs) fail("out of memory");
    long total_errors = 0;
    if (world_rank == 0) print_header(o, c);

    for (size_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 2) {
        const size_t call_bytes = setup_calls(o, c, bytes, calls, n_calls, rcounts);
        const struct sampler s = {o, ctl, calls, n_calls, o->nb ? reqs : NULL, NULL};
        if (o->nb) set_up_blocking(o, &calls[0]);
        long errors[MAX_IMPLS] = {0}, all_errors[MAX_IMPLS];
        run_samples(&s, times, times + ni * iters, errors);
        /* One sample = the slowest rank's time of it. */
        MPI_Allreduce(MPI_IN_PLACE, times, ni * iters, MPI_DOUBLE, MPI_MAX, ctl);

        struct result res[MAX_IMPLS];
        const size_t all_bytes = call_bytes * (size_t) n_calls; /* B x S, the buckets' total */
        for (int k = 0; k < ni; ++k) {
            struct result *r = &res[k];
            r->coll = c;
            r->bytes = all_bytes;
            r->count = calls[0].count;
            set_stats(r, &times[k * iters], iters, o->stat);
            r->algbw = (double) all_bytes / r->t;
            r->busbw = r->algbw * bus_factor(c, world_size);
            r->ideal = ideal_time(o, c, all_bytes);
            r->compute = r->total = r->overlap = -1;
        }
        if (o->compute_factor > 0) run_compute_phase(&s, res, times, errors);
        MPI_Allreduce(errors, all_errors, ni, MPI_LONG, MPI_SUM, ctl);
        for (int k = 0; k < ni; ++k) {
            res[k].errors = o->validate ? all_errors[k] : -1;
            if (o->validate) total_errors += all_errors[k];
        }
        report(o, res);
        if (o->device && !o->nb) { /* every rank copies; rank 0 prints */
            const double pair = copy_pair_seconds(&calls[0], call_bytes, iters, ctl);
            if (world_rank == 0)
                printf("%12s  # copy pair: D2H + H2D of %zu B through pinned memory, all ranks at "
                       "once: %.1f us\n", "", call_bytes, pair * 1e6);
        }
        if (bytes > o->max_bytes / 2) break; /* no overflow on doubling */
    }
    free(rcounts);
    free(times);
    free(reqs);
    return total_errors;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    struct options o;
    parse_options(argc, argv, &o);
    read_themis_settings();
    if (o.device) device_init();

    /* Control traffic (barriers, timing reductions) never goes through themis. */
    MPI_Comm ctl;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", "^themis");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &ctl);
    MPI_Info_free(&info);
    for (int k = 0; k < o.n_impls; ++k) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "ompi_comm_coll_preference", o.impls[k].def->preference);
        if (o.impls[k].def->policy) MPI_Info_set(info, "themis_policy", o.impls[k].def->policy);
        if (o.impls[k].def->transport)
            MPI_Info_set(info, "themis_transport", o.impls[k].def->transport);
        if (o.impls[k].def->node)
            MPI_Info_set(info, "themis_node_transport", o.impls[k].def->node);
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &o.impls[k].comm);
        MPI_Info_free(&info);
        char name[64];
        snprintf(name, sizeof name, "bench_%s", o.impls[k].def->name);
        MPI_Comm_set_name(o.impls[k].comm, name);
    }

    double measured = 0;
    if (o.measure_bw) {
        measured = measure_ring_bw(ctl, o.max_bytes < (16u << 20) ? o.max_bytes : (16u << 20));
        for (int d = 0; d < o.n_peers; ++d) o.bw[d] = measured;
        o.n_bw = o.n_peers;
    }

    if (o.compute_factor > 0) calibrate_spin();
    if (world_rank == 0) {
        printf("# themis-bench: %d ranks; implementations:", world_size);
        for (int k = 0; k < o.n_impls; ++k)
            printf(" %s[%s%s%s%s%s]", o.impls[k].def->name, o.impls[k].def->preference,
                   o.impls[k].def->policy ? " policy=" : "",
                   o.impls[k].def->policy ? o.impls[k].def->policy : "",
                   o.impls[k].def->transport ? " transport=" : "",
                   o.impls[k].def->transport ? o.impls[k].def->transport : "");
        printf("\n# coll/themis %s", themis_loaded ? "loaded:" : "NOT loaded (themis rows measure "
                                                                  "the fallback module)");
        if (themis_loaded)
            for (int k = 0; k < N_THEMIS_CVARS; ++k)
                printf(" %s=%s", themis_cvars[k] + strlen("coll_themis_"), themis_cvar_values[k]);
        printf("\n# ideal bound: ");
        if (o.n_bw) {
            printf("dims");
            for (int d = 0; d < o.n_peers; ++d)
                printf(" %d@%.3gGB/s", o.peers[d], o.bw[d] / 1e9);
            printf("%s\n", o.measure_bw ? " (measured ring step)" : "");
        } else {
            printf("none (give --bw, --dims or --bw measure)\n");
        }
        if (impl_index(&o, "han") >= 0)
            printf("# note: coll/han steps aside when all ranks share one node (then han = tuned)\n");
        if (o.device) printf("# buffers: CUDA device memory\n");
        if (o.nb) print_nonblocking_notes(&o);
        if (o.type == T_CHAR && o.validate && 3 * world_size > 127)
            printf("# warning: char sums may overflow with %d ranks\n", world_size);
    }
    open_outputs(&o, measured);

    struct call *calls = alloc_calls(&o, o.buckets);

    long total_errors = 0;
    for (int k = 0; k < o.n_colls; ++k) {
        total_errors += bench_collective(&o, (enum coll) o.colls[k], ctl, calls, o.buckets);
    }
    if (o.validate && world_rank == 0)
        printf("\n# validation: %s (%ld wrong elements)\n", total_errors ? "FAILED" : "passed",
               total_errors);
    close_outputs();

    free_calls(calls, o.buckets);
    for (int k = 0; k < o.n_impls; ++k) MPI_Comm_free(&o.impls[k].comm);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
