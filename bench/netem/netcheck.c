/* netcheck.c -- small validated collectives across the emulated network (test/netem/smoke.sh).
 *
 *   netcheck [COUNT] [-v]
 *
 * MPI_Allreduce (int sum, COUNT elements), MPI_Reduce_scatter_block and MPI_Allgather
 * (COUNT/size elements per rank); every rank checks every element. -v: one line per rank with
 * the processor name, gethostname() and the size of its MPI_COMM_TYPE_SHARED communicator
 * (what Open MPI believes is one node). Rank 0 prints "NETCHECK_OK ..." on success; any
 * mismatch aborts with exit status 3.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fail(const char *what, int rank, long i, int got, int want)
{
    fprintf(stderr, "NETCHECK_FAIL %s rank %d element %ld: got %d want %d\n", what, rank, i, got, want);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

int main(int argc, char **argv)
{
    int rank, size, verbose = 0;
    long count = 1 << 18;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Each line written at once: stderr may share stdout's file (test/netem/smoke.sh). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "-v")) verbose = 1;
        else count = atol(argv[i]);
    }
    count -= count % size;
    if (count < size) count = size;

    if (verbose) {
        char proc[MPI_MAX_PROCESSOR_NAME], host[256];
        int len, ssize, srank;
        MPI_Comm shm;
        MPI_Get_processor_name(proc, &len);
        gethostname(host, sizeof host);
        host[sizeof host - 1] = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
        MPI_Comm_size(shm, &ssize);
        MPI_Comm_rank(shm, &srank);
        printf("NETCHECK rank %d/%d proc_name=%s gethostname=%s shared_size=%d shared_rank=%d\n", rank,
               size, proc, host, ssize, srank);
        fflush(stdout);
        MPI_Comm_free(&shm);
    }

    int *in = malloc(sizeof(int) * (size_t)count), *out = malloc(sizeof(int) * (size_t)count);
    long block = count / size;
    const int tri = size * (size + 1) / 2;
    for (long i = 0; i < count; i++) in[i] = (rank + 1) * (int)(i % 1000 + 1);

    double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double t_ar = MPI_Wtime() - t0;
    for (long i = 0; i < count; i++)
        if (out[i] != tri * (int)(i % 1000 + 1)) fail("allreduce", rank, i, out[i], tri * (int)(i % 1000 + 1));

    MPI_Reduce_scatter_block(in, out, (int)block, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (long i = 0; i < block; i++) {
        long g = rank * block + i;
        if (out[i] != tri * (int)(g % 1000 + 1)) fail("reduce_scatter_block", rank, i, out[i], tri * (int)(g % 1000 + 1));
    }

    for (long i = 0; i < block; i++) in[i] = rank * 7 + (int)(i % 101);
    MPI_Allgather(in, (int)block, MPI_INT, out, (int)block, MPI_INT, MPI_COMM_WORLD);
    for (long i = 0; i < count; i++) {
        int r = (int)(i / block), want = r * 7 + (int)((i % block) % 101);
        if (out[i] != want) fail("allgather", rank, i, out[i], want);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("NETCHECK_OK ranks=%d count=%ld bytes=%ld allreduce_s=%.4f (allreduce, reduce_scatter_block, allgather validated)\n",
               size, count, count * (long)sizeof(int), t_ar);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
