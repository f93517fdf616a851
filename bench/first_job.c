/* themis-first-job: a short job, as a user's first try would be (issue #48): MPI_Init, N
 * MPI_Allreduce calls of B bytes of floats on MPI_COMM_WORLD, every result checked (exact: small
 * integers), MPI_Finalize. Nothing else: bench/run_first_job.sh times the whole job from the
 * outside, mpirun to exit, themis against the module below.
 *
 *   themis-first-job [-n CALLS] [-m BYTES]      (1 call of 1 MiB by default)
 *
 * Rank 0 prints "first_job,CALLS,BYTES,RANKS,SECONDS_IN_CALLS,WRONG_ELEMENTS"; the exit status
 * is 1 when any element was wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, calls = 1;
    size_t bytes = 1 << 20;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0) calls = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-m") == 0) bytes = strtoull(argv[i + 1], NULL, 0);
    }
    const int count = bytes / sizeof(float) > 0 ? (int) (bytes / sizeof(float)) : 1;
    float *s = malloc(sizeof(float) * (size_t) count), *r = malloc(sizeof(float) * (size_t) count);
    long wrong = 0, all_wrong = 0;
    double seconds = 0;
    for (int c = 0; c < calls; ++c) {
        for (int i = 0; i < count; ++i) s[i] = (float) ((rank + i + c) % 7);
        const double t0 = MPI_Wtime();
        MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        seconds += MPI_Wtime() - t0;
        for (int i = 0; i < count; ++i) {
            long want = 0;
            for (int q = 0; q < size; ++q) want += (q + i + c) % 7;
            wrong += r[i] != (float) want;
        }
    }
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("first_job,%d,%zu,%d,%.3f,%ld\n", calls, bytes, size, seconds, all_wrong);
    free(s);
    free(r);
    MPI_Finalize();
    return all_wrong != 0;
}
