/* themis-timeline: one collective repeated, every call's time, to watch a job through a change
 * of the network (bench/run_rate_change.sh changes a link's rate while it runs).
 *
 * Every rank times each of --calls MPI_Allreduce (MPI_FLOAT sum) of --bytes on
 * MPI_COMM_WORLD, back to back; every call's result is checked (each rank gives rank + 1 + i
 * for element i mod 64: every element's sum is exact in float). At the end rank 0 prints
 * one line per call: its index, when it started (seconds since the first call, rank 0's
 * clock) and the slowest rank's time, in ms, then the number of wrong elements seen:
 *   timeline,CALL,START_S,MS
 *   timeline_errors,N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: themis-timeline [--bytes B (16777216)] [--calls N (60)]\n");
    MPI_Finalize();
    exit(2);
}

/* Fills rank `rank`'s vector of `n` floats. */
static void fill(float *v, size_t n, int rank)
{
    for (size_t i = 0; i < n; ++i) v[i] = (float) (rank + 1 + (int) (i % 64));
}

/* Elements of the sum of every rank's vector that are wrong. */
static long wrong(const float *v, size_t n, int size)
{
    long bad = 0;
    for (size_t i = 0; i < n; ++i) {
        const double expect = (double) size * (size + 1) / 2 + (double) size * (double) (i % 64);
        bad += v[i] != (float) expect;
    }
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t bytes = 16u << 20;
    int calls = 60;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
            calls = atoi(argv[++i]);
        else
            usage(rank);
    }
    const size_t n = bytes / sizeof(float);
    if (n == 0 || calls < 1) usage(rank);
    float *v = malloc(n * sizeof *v);
    double *start = malloc(2 * (size_t) calls * sizeof *start), *took = start + calls;
    if (!v || !start) MPI_Abort(MPI_COMM_WORLD, 1);
    long bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int c = 0; c < calls; ++c) {
        fill(v, n, rank);
        start[c] = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, v, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        took[c] = MPI_Wtime() - t0 - start[c];
        bad += wrong(v, n, size);
    }
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : took, took, calls, MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &bad, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int c = 0; c < calls; ++c)
            printf("timeline,%d,%.3f,%.1f\n", c, start[c], took[c] * 1e3);
        printf("timeline_errors,%ld\n", bad);
    }
    free(v);
    free(start);
    MPI_Finalize();
    return bad != 0;
}
