/* themis-hot-path: the cost of one small blocking collective call, repeated (issue #31).
 *
 * For each collective and size on a duplicate of MPI_COMM_WORLD (themis forced on with
 * --mca coll_themis_min_bytes 0): warm-up calls (the first sets the communicator up), then
 *   allocations  with bench/alloc_count.c preloaded (--count-allocs): the heap allocations
 *                of --iters calls, per call, charged to themis or to others (see there);
 *                the largest count of any rank
 *   latency      --reps times: a barrier, then --iters calls back to back; the time per
 *                call is the slowest rank's; reported: the median and the least of reps
 *
 * Sizes are each rank's bytes: the vector of MPI_Allreduce, the block each rank gets of
 * MPI_Reduce_scatter_block and MPI_Reduce_scatter (equal counts) and gives to
 * MPI_Allgather; MPI_FLOAT (sum) elements, at least one.
 *
 * Output, one line per collective and size:
 *   hot_path,COLLECTIVE,BYTES,MEDIAN_US,MIN_US,ALLOCS_THEMIS,ALLOCS_OTHER
 * (allocations per call, -1 where not counted). bench/run_hot_path.sh runs it on two
 * builds of the component alternately and compares. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

enum { ALLREDUCE, REDUCE_SCATTER_BLOCK, REDUCE_SCATTER, ALLGATHER, NCOLL };
static const char *const names[NCOLL] = {"allreduce", "reduce_scatter_block", "reduce_scatter",
                                         "allgather"};

static int rank, size;

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: themis-hot-path [options]\n"
                "  -m LO:HI         sizes in bytes, LO, 4 LO, 16 LO, ... up to HI (4:65536)\n"
                "  -n ITERS         calls per sample (200)\n"
                "  -w WARMUP        calls before measuring (50)\n"
                "  -r REPS          latency samples per size (15)\n"
                "  -c LIST          collectives, comma-separated, or all (all): allreduce,\n"
                "                   reduce_scatter_block, reduce_scatter, allgather\n"
                "  --count-allocs   count allocations (needs bench/alloc_count.c preloaded)\n"
                "  --no-latency     allocations only\n");
}

static size_t parse_size(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1024;
    if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
    return (size_t) v;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* One call of collective c over `count` floats per rank. */
static void call(int c, MPI_Comm comm, float *s, float *r, int count, const int *counts)
{
    switch (c) {
    case ALLREDUCE: MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, comm); break;
    case REDUCE_SCATTER_BLOCK:
        MPI_Reduce_scatter_block(s, r, count, MPI_FLOAT, MPI_SUM, comm);
        break;
    case REDUCE_SCATTER: MPI_Reduce_scatter(s, r, counts, MPI_FLOAT, MPI_SUM, comm); break;
    case ALLGATHER: MPI_Allgather(s, count, MPI_FLOAT, r, count, MPI_FLOAT, comm); break;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t lo = 4, hi = 65536;
    int iters = 200, warmup = 50, reps = 15, count_allocs = 0, latency = 1;
    int want[NCOLL] = {1, 1, 1, 1};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-m") && v) {
            const char *colon = strchr(v, ':');
            lo = parse_size(v);
            hi = colon ? parse_size(colon + 1) : lo;
            ++i;
        } else if (!strcmp(a, "-n") && v) {
            iters = atoi(v), ++i;
        } else if (!strcmp(a, "-w") && v) {
            warmup = atoi(v), ++i;
        } else if (!strcmp(a, "-r") && v) {
            reps = atoi(v), ++i;
        } else if (!strcmp(a, "-c") && v) {
            if (strcmp(v, "all")) {
                for (int c = 0; c < NCOLL; ++c) want[c] = 0;
                for (const char *item = v; *item;) { /* whole items of the list */
                    const size_t len = strcspn(item, ",");
                    int found = 0;
                    for (int c = 0; c < NCOLL; ++c)
                        if (strlen(names[c]) == len && !strncmp(item, names[c], len))
                            want[c] = found = 1;
                    if (!found) {
                        usage();
                        MPI_Abort(MPI_COMM_WORLD, 2);
                    }
                    item += len + (item[len] == ',');
                }
            }
            ++i;
        } else if (!strcmp(a, "--count-allocs")) {
            count_allocs = 1;
        } else if (!strcmp(a, "--no-latency")) {
            latency = 0;
        } else {
            usage();
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (lo < 1 || hi < lo || iters < 1 || reps < 1) {
        usage();
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    void (*start)(void) = NULL;
    void (*stop)(unsigned long *) = NULL;
    if (count_allocs) {
        start = (void (*)(void)) dlsym(RTLD_DEFAULT, "alloc_count_start");
        stop = (void (*)(unsigned long *)) dlsym(RTLD_DEFAULT, "alloc_count_stop");
        if ((!start || !stop) && rank == 0)
            fprintf(stderr, "themis-hot-path: alloc_count.so not preloaded: no counts\n");
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const size_t max_count = hi / sizeof(float) > 0 ? hi / sizeof(float) : 1;
    float *s = malloc(max_count * (size_t) size * sizeof(float));
    float *r = malloc(max_count * (size_t) size * sizeof(float));
    int *counts = malloc((size_t) size * sizeof(int));
    double *samples = malloc((size_t) reps * sizeof(double));
    for (size_t i = 0; i < max_count * (size_t) size; ++i) s[i] = (float) (i % 7);
    if (rank == 0) printf("# hot_path,collective,bytes,median_us,min_us,allocs_themis,allocs_other\n");
    for (int c = 0; c < NCOLL; ++c) {
        if (!want[c]) continue;
        for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
            const int count = bytes / sizeof(float) > 0 ? (int) (bytes / sizeof(float)) : 1;
            for (int k = 0; k < size; ++k) counts[k] = count;
            for (int k = 0; k < warmup; ++k) call(c, comm, s, r, count, counts);
            long mine[2] = {-1, -1}, most[2] = {-1, -1};
            if (start && stop) {
                unsigned long got[3];
                MPI_Barrier(comm);
                start();
                for (int k = 0; k < iters; ++k) call(c, comm, s, r, count, counts);
                stop(got);
                mine[0] = (long) got[1], mine[1] = (long) got[2];
            }
            MPI_Reduce(mine, most, 2, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
            for (int k = 0; latency && k < reps; ++k) {
                MPI_Barrier(comm);
                const double t0 = MPI_Wtime();
                for (int j = 0; j < iters; ++j) call(c, comm, s, r, count, counts);
                const double t = (MPI_Wtime() - t0) / iters;
                MPI_Reduce(&t, &samples[k], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            }
            if (rank != 0) continue;
            double median = -1, least = -1;
            if (latency) {
                qsort(samples, (size_t) reps, sizeof(double), cmp_double);
                median = reps % 2 ? samples[reps / 2]
                                  : (samples[reps / 2 - 1] + samples[reps / 2]) / 2;
                least = samples[0];
            }
            printf("hot_path,%s,%zu,%.2f,%.2f,%.2f,%.2f\n", names[c], bytes,
                   median < 0 ? -1 : median * 1e6, least < 0 ? -1 : least * 1e6,
                   most[0] < 0 ? -1.0 : (double) most[0] / iters,
                   most[1] < 0 ? -1.0 : (double) most[1] / iters);
            fflush(stdout);
        }
    }
    MPI_Comm_free(&comm);
    free(s), free(r), free(counts), free(samples);
    MPI_Finalize();
    return 0;
}
