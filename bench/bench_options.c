/* themis-bench's command line: the option parser, its usage text and the tables of names
 * (collectives, datatypes, implementations, modes) that options and reports share, and the
 * two ways out on an error: die() for a mistake every rank sees alike, so rank 0 alone
 * explains it, fail() for one some ranks hit alone. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench_common.h"

const char *const coll_names[C_COUNT] = {"allreduce", "reduce_scatter", "reduce_scatter_block",
                                         "allgather", "bcast", "reduce"};
const char *const type_names[T_COUNT] = {"float", "double", "int", "char"};
const char *const mode_names[NB_COUNT] = {"blocking", "overlap", "buckets"};
const char *const stat_names[3] = {"avg", "median", "min"};

/* What --impl can name: the info keys each implementation's communicator gets. */
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

/* A mistake every rank makes alike (a bad option): rank 0 alone says so. */
void die(const char *fmt, ...)
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
void fail(const char *fmt, ...)
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
        "                                allgather | bcast | reduce (root 0) | all, or a\n"
        "                                comma list (allreduce)\n"
        "      --impl LIST               of themis, themis_baseline, themis_pml, themis_ucx,\n"
        "                                themis_cma, themis_nocma,\n"
        "                                tuned, han (themis,themis_baseline,tuned)\n"
        "      --bw LIST                 per-dimension bandwidth per rank for the ideal bound;\n"
        "                                plain numbers are bytes/s; units B/s KB/s MB/s GB/s\n"
        "                                (decimal) or bps kbps Mbps Gbps also accepted;\n"
        "                                'measure' = measure one ring step on this machine\n"
        "      --peers LIST              peers per dimension (default: one dimension of all "
        "ranks)\n"
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
        "                                no blocking call first: the first warm-up round sets\n"
        "                                each communicator up inside its nonblocking calls\n"
        "      --buckets B               requests outstanding at once (overlap 1, buckets 8);\n"
        "                                each has its own buffers: 2 B x MAX bytes per rank\n"
        "      --compute-factor F        compute loop length in t_pure (overlap 1, buckets 0 =\n"
        "                                no compute phase)\n"
        "      --test-every US           MPI_Testall on the requests every US microseconds of\n"
        "                                compute, so progress runs (100; 0 = never)\n"
        "      --cold                    every sample on a fresh duplicate of its communicator:\n"
        "                                each timed call is a communicator's first, its set-up\n"
        "                                timed (and, with a compute phase, overlapped) with it\n"
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
    if (o->buckets == 0) o->buckets = o->nb == NB_OVERLAP ? 1 : 8;
    if (o->compute_factor < 0) o->compute_factor = o->nb == NB_OVERLAP ? 1 : 0;
}

void parse_options(int argc, char **argv, struct options *o)
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
        } else if (!strcmp(a, "--cold")) {
            o->cold = 1;
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
            "reduce_scatter_block, allgather, bcast, reduce, all", colls);
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
