/* themis-comm-setup: what a new communicator costs up to its first result (issue #48).
 *
 * Each sample makes a new communicator of MPI_COMM_WORLD's group, runs one collective on it
 * and frees it; its time, from the creation to the call's end, is the slowest rank's. A
 * parent communicator made first has had one call of the size measured, so the group is
 * known to the job as a program's world communicator is after its first call. Which
 * module runs the collectives is the job's choice (--mca coll ...): bench/run_comm_setup.sh
 * alternates jobs with themis and without it and compares them.
 * Forms of the new communicator (-f): dup (MPI_Comm_dup), split (MPI_Comm_split, one colour,
 * key = rank: the group kept), idup (MPI_Comm_idup, then MPI_Wait). The call (-c): allreduce
 * (blocking) or iallreduce (then MPI_Wait), of -m bytes of floats, every result checked
 * (exact: small integers). -k keeps every communicator until the end (a library that holds
 * its duplicate), instead of freeing each after its call (a test suite).
 *
 * Output, rank 0:
 *   comm_setup,FORM[-kept],CALL,BYTES,RANKS,MEDIAN_MS,MIN_MS,MAX_MS,WRONG_ELEMENTS
 * and the exit status is 1 when any element was wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int rank, size;

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: themis-comm-setup [-f dup|split|idup] [-c allreduce|iallreduce]\n"
                        "                         [-m BYTES] [-n SAMPLES] [-w WARMUP] [-k]\n"
                        "  defaults: -f dup -c allreduce -m 1048576 -n 20 -w 2\n");
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* A new communicator of `parent`'s group in form `form`. */
static MPI_Comm new_comm(MPI_Comm parent, const char *form)
{
    MPI_Comm c = MPI_COMM_NULL;
    if (strcmp(form, "split") == 0) {
        MPI_Comm_split(parent, 0, rank, &c);
    } else if (strcmp(form, "idup") == 0) {
        MPI_Request r;
        MPI_Comm_idup(parent, &c, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Comm_dup(parent, &c);
    }
    return c;
}

/* One sample on a new communicator of `parent`: this rank's seconds from its creation to
 * the end of the call; *errors gains the wrong result elements. The communicator is freed, or
 * kept in *kept when kept is not NULL. */
static double sample(MPI_Comm parent, const char *form, const char *coll, float *s, float *r,
                     int count, long *errors, MPI_Comm *kept)
{
    for (int i = 0; i < count; ++i) s[i] = (float) ((rank + i) % 7);
    const double t0 = MPI_Wtime();
    MPI_Comm c = new_comm(parent, form);
    if (strcmp(coll, "iallreduce") == 0) {
        MPI_Request req;
        MPI_Iallreduce(s, r, count, MPI_FLOAT, MPI_SUM, c, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, c);
    }
    const double t = MPI_Wtime() - t0;
    if (kept)
        *kept = c;
    else
        MPI_Comm_free(&c);
    for (int i = 0; i < count; ++i) {
        long want = 0;
        for (int q = 0; q < size; ++q) want += (q + i) % 7;
        *errors += r[i] != (float) want;
    }
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *form = "dup", *coll = "allreduce";
    size_t bytes = 1 << 20;
    int samples = 20, warmup = 2, keep = 0;
    for (int i = 1; i < argc; ++i) {
        if (i + 1 < argc && strcmp(argv[i], "-f") == 0) form = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-c") == 0) coll = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-m") == 0) bytes = strtoull(argv[++i], NULL, 0);
        else if (i + 1 < argc && strcmp(argv[i], "-n") == 0) samples = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-w") == 0) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "-k") == 0) keep = 1;
        else {
            usage();
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (strcmp(form, "dup") && strcmp(form, "split") && strcmp(form, "idup")) {
        usage();
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int count = bytes / sizeof(float) > 0 ? (int) (bytes / sizeof(float)) : 1;
    float *s = malloc(sizeof(float) * (size_t) count), *r = malloc(sizeof(float) * (size_t) count);

    /* The parent, set up by a call of the size measured, and a control communicator. */
    MPI_Comm parent, ctl;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Comm_dup(MPI_COMM_WORLD, &parent);
    MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, parent);

    double *times = malloc(sizeof(double) * (size_t) samples);
    MPI_Comm *kept = calloc((size_t) (samples + warmup), sizeof(MPI_Comm));
    long errors = 0, wrong = 0;
    for (int it = -warmup; it < samples; ++it) {
        MPI_Barrier(ctl);
        double t = sample(parent, form, coll, s, r, count, &errors,
                          keep ? &kept[it + warmup] : NULL),
               slowest = 0;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, ctl);
        if (it >= 0) times[it] = slowest;
    }
    MPI_Allreduce(&errors, &wrong, 1, MPI_LONG, MPI_SUM, ctl);
    if (rank == 0) {
        qsort(times, (size_t) samples, sizeof(double), cmp_double);
        const double median = samples % 2 ? times[samples / 2]
                                          : 0.5 * (times[samples / 2 - 1] + times[samples / 2]);
        printf("comm_setup,%s%s,%s,%zu,%d,%.3f,%.3f,%.3f,%ld\n", form, keep ? "-kept" : "", coll,
               bytes, size,
               median * 1e3, times[0] * 1e3, times[samples - 1] * 1e3, wrong);
    }
    if (keep)
        for (int i = 0; i < samples + warmup; ++i) MPI_Comm_free(&kept[i]);
    free(kept);
    MPI_Comm_free(&parent);
    MPI_Comm_free(&ctl);
    free(times);
    free(s);
    free(r);
    MPI_Finalize();
    return wrong != 0;
}
