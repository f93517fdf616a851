/* themis-info: what coll/themis finds on this job's network, and what it would do.
 *
 *   mpirun -np 8 [--mca coll_themis_topo_file F] themis-info [-c COLL] [-m BYTES]
 *
 * Runs one collective of BYTES (default 16M; k, M, G suffixes) on a duplicate of
 * MPI_COMM_WORLD with the component's verbose output on in rank 0, so the component
 * itself says, on stderr: the hosts' grid and where it came from (the event grid: source,
 * dims, every host's coordinates, or why there is none), its layout (levels), the dimensions with every bandwidth and
 * latency and where each came from (given, measured, cached, default), the calibration's
 * cost, and for the call the plan (chunks, predicted time and share of the ideal bound,
 * and at the default -v 10 every chunk's order of dimensions). Then rank 0 prints the
 * measured time of a second call (the first one pays for set-up and calibration) and
 * whether every rank's result was exact. COLL: allreduce (default), reduce_scatter_block,
 * allgather. Other ranks stay quiet; -v sets the verbosity (1: set-up only, 5: also the
 * plan's summary, 10: also the orders). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

enum coll { ALLREDUCE, REDUCE_SCATTER_BLOCK, ALLGATHER };

struct options {
    enum coll coll;
    long long bytes;
    int verbose;
};

static void usage_exit(const char *why)
{
    fprintf(stderr,
            "themis-info: %s\nusage: mpirun ... themis-info [-c allreduce|reduce_scatter_block|"
            "allgather] [-m BYTES] [-v LEVEL]\n",
            why);
    exit(2);
}

static long long parse_bytes(const char *text)
{
    char *end = NULL;
    double v = strtod(text, &end);
    long long mult = 1;
    if (end && *end) {
        switch (*end) {
        case 'k': case 'K': mult = 1LL << 10; break;
        case 'm': case 'M': mult = 1LL << 20; break;
        case 'g': case 'G': mult = 1LL << 30; break;
        default: usage_exit("BYTES: expected a number with an optional k, M or G");
        }
        if (end[1]) usage_exit("BYTES: expected a number with an optional k, M or G");
    }
    if (end == text || !(v > 0)) usage_exit("BYTES: expected a positive size");
    return (long long) (v * (double) mult);
}

static struct options parse_options(int argc, char **argv)
{
    struct options o = {ALLREDUCE, 16LL << 20, 10};
    int c;
    while ((c = getopt(argc, argv, "c:m:v:h")) != -1) {
        if (c == 'c') {
            if (!strcmp(optarg, "allreduce")) o.coll = ALLREDUCE;
            else if (!strcmp(optarg, "reduce_scatter_block")) o.coll = REDUCE_SCATTER_BLOCK;
            else if (!strcmp(optarg, "allgather")) o.coll = ALLGATHER;
            else usage_exit("unknown collective");
        } else if (c == 'm') {
            o.bytes = parse_bytes(optarg);
        } else if (c == 'v') {
            o.verbose = atoi(optarg);
        } else {
            usage_exit("help");
        }
    }
    return o;
}

/* The component reads its parameters from the environment at MPI_Init: turn its log on
 * in world rank 0 only, unless the user already chose a verbosity. */
static void verbose_in_rank_zero(int level)
{
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if ((rank == NULL || !strcmp(rank, "0")) && !getenv("OMPI_MCA_coll_themis_verbose")) {
        char value[16];
        snprintf(value, sizeof value, "%d", level);
        setenv("OMPI_MCA_coll_themis_verbose", value, 1);
    }
}

/* One call, timed in *seconds (after a barrier): every rank contributes rank+1+i%1000 at
 * element i; returns 1 when this rank's result equals the value computed here
 * independently. */
static int run_checked(enum coll coll, long long count, MPI_Comm comm, double *seconds)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const long long block = count / size;
    int *in = malloc(sizeof(int) * (size_t) count), *out = malloc(sizeof(int) * (size_t) count);
    if (!in || !out) MPI_Abort(comm, 1);
    int ok = 1;
    if (coll == ALLGATHER) {
        for (long long i = 0; i < block; ++i) in[i] = (int) (rank * block + i) % 1000003;
        MPI_Barrier(comm);
        *seconds = MPI_Wtime();
        MPI_Allgather(in, (int) block, MPI_INT, out, (int) block, MPI_INT, comm);
        *seconds = MPI_Wtime() - *seconds;
        for (long long i = 0; i < block * size; ++i) ok &= out[i] == (int) (i % 1000003);
    } else {
        for (long long i = 0; i < count; ++i) in[i] = rank + 1 + (int) (i % 1000);
        /* sum over r of (r + 1 + i%1000) */
        const long long ranks_sum = (long long) size * (size + 1) / 2;
        MPI_Barrier(comm);
        *seconds = MPI_Wtime();
        if (coll == ALLREDUCE) {
            MPI_Allreduce(in, out, (int) count, MPI_INT, MPI_SUM, comm);
            *seconds = MPI_Wtime() - *seconds;
            for (long long i = 0; i < count; ++i)
                ok &= out[i] == (int) (ranks_sum + size * (i % 1000));
        } else {
            MPI_Reduce_scatter_block(in, out, (int) block, MPI_INT, MPI_SUM, comm);
            *seconds = MPI_Wtime() - *seconds;
            for (long long i = 0; i < block; ++i)
                ok &= out[i] == (int) (ranks_sum + size * ((rank * block + i) % 1000));
        }
    }
    free(in);
    free(out);
    return ok;
}

int main(int argc, char **argv)
{
    const struct options o = parse_options(argc, argv);
    verbose_in_rank_zero(o.verbose);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long long count = (o.bytes / (long long) sizeof(int)) / size * size;
    if (count == 0) usage_exit("BYTES: smaller than one int per rank");

    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    double first = 0, seconds = 0, slowest[2] = {0, 0};
    int ok = run_checked(o.coll, count, comm, &first); /* set-up, calibration, first plan */
    ok &= run_checked(o.coll, count, comm, &seconds);
    double mine[2] = {first, seconds};
    int all_ok = 0;
    MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, comm);
    if (rank == 0) {
        static const char *names[] = {"allreduce", "reduce_scatter_block", "allgather"};
        printf("themis-info: %d ranks, %s of %lld bytes: first call %.3f ms (with set-up and "
               "calibration), second call %.3f ms (slowest rank); results %s\n",
               size, names[o.coll], count * (long long) sizeof(int), slowest[0] * 1e3,
               slowest[1] * 1e3, all_ok ? "exact on every rank" : "WRONG");
        printf("themis-info: the component's own lines (coll:themis, on stderr) above say "
               "what it found and planned; none means it did not run themis here\n");
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return all_ok || rank != 0 ? 0 : 1;
}
