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

/* This file measures: the bandwidth probe behind --bw measure, the compute loop of the
 * nonblocking modes, the interleaved samples and their statistics, and main().  The
 * command line is parsed in bench_options.c, the calls and their data live in
 * bench_data.c and the results are printed and written by bench_report.c
 * (bench_common.h declares what they share). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench_common.h"

/* Set by main() right after MPI_Init; every file reads them (bench_common.h). */
int world_rank, world_size;

/* ------------------------------------------------------------------ bandwidth probe */

/* Per-rank bandwidth of one ring step (every rank sends `bytes` to its right neighbour
 * and receives as much from its left one, all at once): best of 5, max over ranks. */
static double measure_ring_bw(MPI_Comm comm, size_t bytes)
{
    char *s = malloc(bytes), *r = malloc(bytes);
    if (!s || !r) fail("out of memory");
    memset(s, 1, bytes);
    memset(r, 0, bytes);
    const int right = (world_rank + 1) % world_size;
    const int left = (world_rank + world_size - 1) % world_size;
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
    MPI_Comm comm = s->o->impls[k].comm;
    if (s->o->cold) { /* a communicator no call has used yet, with the same info keys */
        MPI_Info info;
        MPI_Comm_get_info(s->o->impls[k].comm, &info);
        MPI_Comm_dup_with_info(s->o->impls[k].comm, info, &comm);
        MPI_Info_free(&info);
        MPI_Barrier(s->ctl);
    }
    *spun = 0;
    const double t0 = MPI_Wtime();
    for (int b = 0; b < s->n_calls; ++b)
        if (run_call(&s->calls[b], comm, s->reqs ? &s->reqs[b] : NULL) != MPI_SUCCESS)
            fail("%s failed in %s", coll_names[s->calls[b].coll], s->o->impls[k].def->name);
    if (s->reqs) {
        if (s->compute_s)
            *spun = compute(s->compute_s[k], s->o->test_every_us, s->n_calls, s->reqs);
        if (MPI_Waitall(s->n_calls, s->reqs, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            fail("MPI_Waitall failed in %s", s->o->impls[k].def->name);
    }
    const double t = MPI_Wtime() - t0;
    if (s->o->cold) MPI_Comm_free(&comm);
    return t;
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
        printf("\n");
        print_themis_settings();
        printf("# ideal bound: ");
        if (o.n_bw) {
            printf("dims");
            for (int d = 0; d < o.n_peers; ++d)
                printf(" %d@%.3gGB/s", o.peers[d], o.bw[d] / 1e9);
            printf("%s\n", o.measure_bw ? " (measured ring step)" : "");
        } else {
            printf("none (give --bw, --dims or --bw measure)\n");
        }
        if (impl_index(&o, "han") >= 0)
            printf("# note: coll/han steps aside when all ranks share one node "
                   "(then han = tuned)\n");
        if (o.device) printf("# buffers: CUDA device memory\n");
        if (o.nb) print_nonblocking_notes(&o, spin_rate);
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
