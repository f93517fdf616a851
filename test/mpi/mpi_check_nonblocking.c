/* mpi_check_nonblocking.c -- the nonblocking and persistent families of themis-mpi-check:
 * many requests in flight at once, completed in different ways, on communicators themis
 * has or has not set up yet. Their values are closed forms of (rank, element, request)
 * rather than the case runner's hashed inputs, so that many calls can share one check. */
#include "mpi_check.h"

#include "../common/persistent_coll.h" /* MPI(X)_*_init, per series */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nonblocking: many requests outstanding at once, of all four nonblocking forms, mixed
 * with blocking calls, completed by MPI_Waitall or by MPI_Test polling; one freed after
 * completion; and two communicators started in opposite orders on even and odd ranks (legal
 * in MPI: it must not deadlock), both before and after themis set them up. Every value
 * is a closed form of (rank, element, request). */
#define NB_REQS 8

/* Input of request k on a rank; every form reduces or gathers these. */
static int nb_value(int rank, int i, int k) { return rank * 3 + i % 1000 + k; }

/* nb_value(r, i, k) summed over ranks r = 0..n-1. */
static int nb_sum(int n, int i, int k) { return n * (i % 1000 + k) + 3 * n * (n - 1) / 2; }

typedef struct {
    int form, count; /* form: C_ALLREDUCE .. C_ALLGATHER; count: per rank for RS/AG */
    int *in, *out;
} nb_call;

static void nb_start(comm_info *c, nb_call *x, int form, int count, int k, MPI_Request *req,
                     check_t *ck)
{
    const int n = c->size, total = form == C_ALLREDUCE ? count : count * n;
    x->form = form, x->count = count;
    x->in = xmalloc((size_t) total * sizeof(int));
    x->out = xmalloc((size_t) total * sizeof(int));
    for (int i = 0; i < total; i++) x->in[i] = nb_value(c->rank, i, k);
    int rc;
    int *counts = xmalloc((size_t) n * sizeof(int));
    for (int r = 0; r < n; r++) counts[r] = count;
    switch (form) {
    case C_ALLREDUCE:
        rc = MPI_Iallreduce(x->in, x->out, count, MPI_INT, MPI_SUM, c->comm, req);
        break;
    case C_REDUCE_SCATTER:
        rc = MPI_Ireduce_scatter(x->in, x->out, counts, MPI_INT, MPI_SUM, c->comm, req);
        break;
    case C_REDUCE_SCATTER_BLOCK:
        rc = MPI_Ireduce_scatter_block(x->in, x->out, count, MPI_INT, MPI_SUM, c->comm, req);
        break;
    default:
        rc = MPI_Iallgather(x->in + (size_t) c->rank * count, count, MPI_INT, x->out, count,
                            MPI_INT, c->comm, req);
    }
    free(counts);
    check_rc(ck, rc, coll_names[form]);
}

/* Checks a completed call whose inputs were those of request number k. */
static void nb_check(comm_info *c, const nb_call *x, int k, check_t *ck)
{
    const int n = c->size;
    const int total = x->form == C_ALLGATHER ? x->count * n : x->count;
    for (int j = 0; j < total; j++) {
        /* RS: this rank's block of the sum; AG: rank j/count's block of the inputs */
        const int i = x->form == C_ALLREDUCE || x->form == C_ALLGATHER ? j : c->rank * x->count + j;
        const int want = x->form == C_ALLGATHER ? nb_value(j / x->count, i, k) : nb_sum(n, i, k);
        if (x->out[j] != want) {
            check_fail(ck, "request %d (%s) element %d: got %d expected %d", k,
                       coll_names[x->form], j, x->out[j], want);
            break;
        }
    }
}

/* Checks and frees a completed call started with request number k. */
static void nb_finish(comm_info *c, nb_call *x, int k, check_t *ck)
{
    nb_check(c, x, k, ck);
    free(x->in);
    free(x->out);
}

/* NB_REQS requests of every form in turn on c, a blocking call among them. */
static void nb_many(comm_info *c, bool poll, bool blocking_among)
{
    const int count = (int) themis_count(c, sizeof(int), false);
    const int per_rank = count / c->size + 1;
    nb_call calls[NB_REQS];
    MPI_Request reqs[NB_REQS];
    check_t ck;
    check_start(&ck, "%d nonblocking collectives outstanding comm=%s count=%d (%s%s)", NB_REQS,
                c->name, count, poll ? "MPI_Test polling" : "MPI_Waitall",
                blocking_among ? ", blocking calls among them" : "");
    for (int k = 0; k < NB_REQS; k++) {
        const int form = k % C_MAIN_COLLS;
        nb_start(c, &calls[k], form, form == C_ALLREDUCE ? count : per_rank, k, &reqs[k], &ck);
        if (blocking_among && k == NB_REQS / 2) run_four(c, "MPI_DOUBLE", K_SUM, 0);
    }
    if (poll) {
        int done = 0;
        while (!done)
            check_rc(&ck, MPI_Testall(NB_REQS, reqs, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    } else {
        check_rc(&ck, MPI_Waitall(NB_REQS, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
    }
    for (int k = 0; k < NB_REQS; k++) nb_finish(c, &calls[k], k, &ck);
    check_end(&ck);
}

/* A training loop's shape on fresh communicators that only nonblocking calls ever use (no
 * blocking call of the four, no barrier): per round, on each of `ncomms` communicators
 * (taken in opposite orders on even and odd ranks), four MPI_Iallreduce, two
 * MPI_Iallgather, an MPI_Ireduce_scatter_block and an MPI_Ireduce_scatter, with a one-int
 * MPI_Iallreduce (below coll_themis_min_bytes: the module below's, at once) and an
 * MPI_Ibcast (never themis's) among them, all polled with MPI_Testall. The first round's
 * first call starts every set-up cold, every rank's set-ups in another order; the CTest
 * runs expect themis on every such communicator for every nonblocking form. */
#define NB_LOOP_FORMS 8

static void nb_cold_loop(const char *name, int ncomms, int rounds)
{
    static const int forms[NB_LOOP_FORMS] = {C_ALLREDUCE, C_ALLGATHER, C_ALLREDUCE,
                                             C_REDUCE_SCATTER_BLOCK, C_ALLREDUCE,
                                             C_REDUCE_SCATTER, C_ALLGATHER, C_ALLREDUCE};
    comm_info *cs = xmalloc((size_t) ncomms * sizeof *cs);
    for (int i = 0; i < ncomms; i++) {
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        char cname[64];
        snprintf(cname, sizeof cname, "%s_%c", name, 'a' + i);
        comm_info_init(&cs[i], d, cname);
    }
    const int count = (int) themis_count(&cs[0], sizeof(int), false);
    const int per_rank = count / cs[0].size + 1;
    const int per_comm = NB_LOOP_FORMS + 2, total = ncomms * per_comm;
    nb_call *calls = xmalloc((size_t) total * sizeof *calls);
    MPI_Request *reqs = xmalloc((size_t) total * sizeof *reqs);
    int *small_in = xmalloc((size_t) ncomms * sizeof(int)), *small_out = xmalloc((size_t) ncomms * sizeof(int));
    int *bcast = xmalloc((size_t) ncomms * sizeof(int));
    for (int round = 0; round < rounds; round++) {
        check_t ck;
        check_start(&ck, "round %d of a nonblocking-only loop on %d fresh communicators %s_* "
                         "(opposite orders on even and odd ranks, MPI_Testall)",
                    round, ncomms, name);
        for (int j = 0; j < ncomms; j++) {
            const int i = g_rank % 2 ? ncomms - 1 - j : j;
            comm_info *c = &cs[i];
            for (int f = 0; f < NB_LOOP_FORMS; f++) {
                const int k = i * per_comm + f, form = forms[f];
                nb_start(c, &calls[k], form, form == C_ALLREDUCE ? count : per_rank, k + round,
                         &reqs[k], &ck);
                if (f == 1) {
                    small_in[i] = c->rank + round;
                    check_rc(&ck, MPI_Iallreduce(&small_in[i], &small_out[i], 1, MPI_INT, MPI_SUM,
                                                 c->comm, &reqs[i * per_comm + NB_LOOP_FORMS]),
                             "small MPI_Iallreduce");
                }
                if (f == 4) {
                    bcast[i] = c->rank == 0 ? 1000 + round : -1;
                    check_rc(&ck, MPI_Ibcast(&bcast[i], 1, MPI_INT, 0, c->comm,
                                             &reqs[i * per_comm + NB_LOOP_FORMS + 1]),
                             "MPI_Ibcast");
                }
            }
        }
        int done = 0;
        while (!done) check_rc(&ck, MPI_Testall(total, reqs, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
        for (int i = 0; i < ncomms; i++) {
            const int n = cs[i].size;
            for (int f = 0; f < NB_LOOP_FORMS; f++) {
                const int k = i * per_comm + f;
                nb_finish(&cs[i], &calls[k], k + round, &ck);
            }
            if (small_out[i] != n * (n - 1) / 2 + n * round)
                check_fail(&ck, "%s: small MPI_Iallreduce gave %d", cs[i].name, small_out[i]);
            if (bcast[i] != 1000 + round)
                check_fail(&ck, "%s: MPI_Ibcast gave %d", cs[i].name, bcast[i]);
        }
        check_end(&ck);
    }
    free(small_in);
    free(small_out);
    free(bcast);
    free(calls);
    free(reqs);
    for (int i = 0; i < ncomms; i++) comm_info_free(&cs[i]);
    free(cs);
}

/* Two communicators, each with an Iallreduce, started A then B on even ranks and B then
 * A on odd ones. */
static void nb_orders(const char *name, bool warm)
{
    comm_info cs[2];
    for (int i = 0; i < 2; i++) {
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        char cname[64];
        snprintf(cname, sizeof cname, "%s_%c", name, 'a' + i);
        comm_info_init(&cs[i], d, cname);
        if (warm) warm_up(&cs[i]);
    }
    const int count = (int) themis_count(&cs[0], sizeof(int), false);
    nb_call calls[2];
    MPI_Request reqs[2];
    check_t ck;
    check_start(&ck, "iallreduce on %s_a and %s_b started in opposite orders on even and odd "
                     "ranks (%s)", name, name, warm ? "set up" : "first calls");
    for (int j = 0; j < 2; j++) {
        const int i = g_rank % 2 ? 1 - j : j;
        nb_start(&cs[i], &calls[i], C_ALLREDUCE, count, i, &reqs[i], &ck);
    }
    check_rc(&ck, MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (int i = 0; i < 2; i++) nb_finish(&cs[i], &calls[i], i, &ck);
    check_end(&ck);
    for (int i = 0; i < 2; i++) comm_info_free(&cs[i]);
}

/* A request polled with MPI_Request_get_status (which leaves it allocated) until it is
 * complete, then freed with MPI_Request_free. */
static void nb_free_completed(comm_info *c)
{
    const int count = (int) themis_count(c, sizeof(int), false);
    nb_call x;
    MPI_Request req;
    check_t ck;
    check_start(&ck, "iallreduce comm=%s count=%d freed after completion", c->name, count);
    nb_start(c, &x, C_ALLREDUCE, count, 5, &req, &ck);
    int flag = 0;
    while (!flag)
        check_rc(&ck, MPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE),
                 "MPI_Request_get_status");
    check_rc(&ck, MPI_Request_free(&req), "MPI_Request_free");
    if (req != MPI_REQUEST_NULL) check_fail(&ck, "MPI_Request_free left the request set");
    nb_finish(c, &x, 5, &ck);
    check_end(&ck);
}

/* A plain int sum, as a user op. */
static void nb_user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void) type;
    for (int i = 0; i < *len; i++) ((int *) inout)[i] += ((const int *) in)[i];
}

/* A commutative user op and a derived datatype (themis runs both) in the four nonblocking
 * forms, freed by the program as soon as the calls are started: MPI keeps them until the
 * calls complete. Open MPI's MPI layer does so by storing them in the request, which it
 * takes to be its nonblocking-collective request type: a smaller request is overrun. */
static void nb_user_objects(comm_info *c)
{
    const int n = c->size, count = (int) themis_count(c, sizeof(int), false);
    const int per_rank = 3 * (count / n / 3 + 1); /* whole contig(3, MPI_INT) elements */
    MPI_Op sum;
    MPI_Datatype int3;
    MPI_Op_create(nb_user_sum, 1, &sum);
    MPI_Type_contiguous(3, MPI_INT, &int3);
    MPI_Type_commit(&int3);
    int *counts = xmalloc((size_t) n * sizeof(int));
    for (int r = 0; r < n; r++) counts[r] = per_rank;
    nb_call calls[C_MAIN_COLLS];
    MPI_Request reqs[C_MAIN_COLLS];
    check_t ck;
    check_start(&ck, "nonblocking forms with a user op and contig(3,MPI_INT), freed at once, comm=%s",
                c->name);
    for (int f = 0; f < C_MAIN_COLLS; f++) {
        nb_call *x = &calls[f];
        x->form = f, x->count = f == C_ALLREDUCE ? count : per_rank;
        const int total = f == C_ALLREDUCE ? count : per_rank * n;
        x->in = xmalloc((size_t) total * sizeof(int));
        x->out = xmalloc((size_t) total * sizeof(int));
        for (int i = 0; i < total; i++) x->in[i] = nb_value(c->rank, i, f);
        int rc;
        switch (f) {
        case C_ALLREDUCE:
            rc = MPI_Iallreduce(x->in, x->out, count, MPI_INT, sum, c->comm, &reqs[f]);
            break;
        case C_REDUCE_SCATTER:
            rc = MPI_Ireduce_scatter(x->in, x->out, counts, MPI_INT, sum, c->comm, &reqs[f]);
            break;
        case C_REDUCE_SCATTER_BLOCK:
            rc = MPI_Ireduce_scatter_block(x->in, x->out, per_rank, MPI_INT, sum, c->comm, &reqs[f]);
            break;
        default:
            rc = MPI_Iallgather(x->in + (size_t) c->rank * per_rank, per_rank / 3, int3, x->out,
                                per_rank / 3, int3, c->comm, &reqs[f]);
        }
        check_rc(&ck, rc, coll_names[f]);
    }
    MPI_Op_free(&sum);
    MPI_Type_free(&int3);
    check_rc(&ck, MPI_Waitall(C_MAIN_COLLS, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (int f = 0; f < C_MAIN_COLLS; f++) nb_finish(c, &calls[f], f, &ck);
    free(counts);
    check_end(&ck);
}

#if HAVE_PERSISTENT_COLL
static void persistent_rounds(comm_info *c);
#endif

/* persistent: one persistent request of each of the four forms (MPIX_*_init) on c, started
 * together three times with MPI_Startall, new inputs each round (round r = request number
 * r: the closed forms above), then freed; on every communicator after a blocking call, and
 * on a fresh one whose first calls they are. With --free-early, on communicators of every rank the reductions
 * use a commutative user op and allgather contig(3,MPI_INT), both freed right after the
 * init calls: the request must keep them (themis does; Open MPI 4.1.4's MPI layer retains
 * nothing for a request inactive at init, so libnbc's own persistent forms read a freed
 * datatype at MPI_Start, with or without themis loaded). */
void family_persistent(void)
{
#if HAVE_PERSISTENT_COLL
    for (int ci = 0; ci < g_ncomms; ci++) {
        warm_up(&g_comms[ci]);
        persistent_rounds(&g_comms[ci]);
    }
    /* A fresh communicator whose first calls are these persistent ones: set up by the
     * first of them, its starts held until the set-up ends (CTest expects themis). */
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    comm_info c;
    comm_info_init(&c, d, "chk_pers_cold");
    persistent_rounds(&c);
    comm_info_free(&c);
#else
    if (g_rank == 0) printf("themis_mpi_check: no persistent collectives in this Open MPI: persistent family skipped\n");
#endif
}

#if HAVE_PERSISTENT_COLL
/* One persistent request of each form on c, started together three times. */
static void persistent_rounds(comm_info *c)
{
    const int n = c->size, count = (int) themis_count(c, sizeof(int), false);
    const int per_rank = 3 * (count / n / 3 + 1); /* whole contig(3, MPI_INT) elements */
    nb_call calls[C_MAIN_COLLS];
    MPI_Request reqs[C_MAIN_COLLS];
    int *counts = xmalloc((size_t) n * sizeof(int));
    for (int r = 0; r < n; r++) counts[r] = per_rank;
    const bool free_early = opt.free_early && n == g_size;
    MPI_Op sum = MPI_SUM;
    MPI_Datatype block = MPI_INT; /* allgather's element */
    int per_block = 1;
    if (free_early) {
        MPI_Op_create(nb_user_sum, 1, &sum);
        MPI_Type_contiguous(3, MPI_INT, &block);
        MPI_Type_commit(&block);
        per_block = 3;
    }
    check_t ck;
    check_start(&ck, "persistent forms comm=%s count=%d, 3 MPI_Startall rounds%s", c->name,
                count, free_early ? ", user op and contig(3,MPI_INT) freed after init" : "");
    for (int f = 0; f < C_MAIN_COLLS; f++) {
        nb_call *x = &calls[f];
        x->form = f, x->count = f == C_ALLREDUCE ? count : per_rank;
        const size_t total = (size_t) (f == C_ALLREDUCE ? count : per_rank * n);
        x->in = xmalloc(total * sizeof(int));
        x->out = xmalloc(total * sizeof(int));
        int rc;
        switch (f) {
        case C_ALLREDUCE:
            rc = Persistent_allreduce_init(x->in, x->out, count, MPI_INT, sum, c->comm,
                                     MPI_INFO_NULL, &reqs[f]);
            break;
        case C_REDUCE_SCATTER:
            rc = Persistent_reduce_scatter_init(x->in, x->out, counts, MPI_INT, sum, c->comm,
                                          MPI_INFO_NULL, &reqs[f]);
            break;
        case C_REDUCE_SCATTER_BLOCK:
            rc = Persistent_reduce_scatter_block_init(x->in, x->out, per_rank, MPI_INT, sum,
                                                c->comm, MPI_INFO_NULL, &reqs[f]);
            break;
        default:
            rc = Persistent_allgather_init(x->in + (size_t) c->rank * per_rank,
                                     per_rank / per_block, block, x->out,
                                     per_rank / per_block, block, c->comm, MPI_INFO_NULL,
                                     &reqs[f]);
        }
        check_rc(&ck, rc, coll_names[f]);
    }
    if (free_early) {
        MPI_Op_free(&sum);
        MPI_Type_free(&block);
    }
    for (int round = 0; round < 3; round++) {
        for (int f = 0; f < C_MAIN_COLLS; f++) {
            const int total = f == C_ALLREDUCE ? count : per_rank * n;
            for (int i = 0; i < total; i++) calls[f].in[i] = nb_value(c->rank, i, round);
            memset(calls[f].out, 0xff, (size_t) total * sizeof(int));
        }
        check_rc(&ck, MPI_Startall(C_MAIN_COLLS, reqs), "MPI_Startall");
        check_rc(&ck, MPI_Waitall(C_MAIN_COLLS, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (int f = 0; f < C_MAIN_COLLS; f++) nb_check(c, &calls[f], round, &ck);
    }
    for (int f = 0; f < C_MAIN_COLLS; f++) {
        check_rc(&ck, MPI_Request_free(&reqs[f]), "MPI_Request_free");
        free(calls[f].in);
        free(calls[f].out);
    }
    free(counts);
    check_end(&ck);
}
#endif

/* nbfail (run with THEMIS_TEST_FAIL_NONBLOCKING=1 on every rank: every nonblocking call
 * themis runs then fails in the progress loop): MPI_Wait returns an error of class
 * MPI_ERR_OTHER (no hang, no crash), the request is gone, and the communicator still runs
 * blocking calls. Open MPI 4.1 reports a failed collective request to MPI_COMM_WORLD's
 * error handler (5.0 to the request's communicator, which themis sets): MPI_ERRORS_RETURN
 * on both here. */
void family_nbfail(void)
{
    check_t ck;
    check_start(&ck, "a failed nonblocking call reports to its communicator's error handler");
    if (!getenv("THEMIS_TEST_FAIL_NONBLOCKING")) {
        check_fail(&ck, "run with THEMIS_TEST_FAIL_NONBLOCKING=1");
        check_end(&ck);
        return;
    }
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    comm_info c;
    comm_info_init(&c, d, "chk_nbfail");
    warm_up(&c); /* a blocking call: themis sets the communicator up */
    nb_call x;
    MPI_Request req;
    nb_start(&c, &x, C_ALLREDUCE, (int) themis_count(&c, sizeof(int), false), 0, &req, &ck);
    const int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_OTHER)
        check_fail(&ck, "MPI_Wait returned %d (class %d), expected class MPI_ERR_OTHER", rc, cls);
    if (req != MPI_REQUEST_NULL) {
        check_fail(&ck, "the failed request was not freed");
        MPI_Request_free(&req);
    }
    free(x.in);
    free(x.out);
    int one = 1, ranks = 0;
    check_rc(&ck, MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, d), "MPI_Allreduce after");
    if (ranks != c.size) check_fail(&ck, "MPI_Allreduce after: %d, expected %d", ranks, c.size);
    comm_info_free(&c);
    check_end(&ck);
}

void family_nonblocking(void)
{
    for (int ci = 0; ci < g_ncomms; ci++) {
        warm_up(&g_comms[ci]);
        nb_many(&g_comms[ci], false, true);
        nb_many(&g_comms[ci], true, true);
        nb_free_completed(&g_comms[ci]);
        nb_user_objects(&g_comms[ci]);
    }
    nb_orders("chk_order", true);
    nb_orders("chk_order_cold", false);
    nb_cold_loop("chk_nb_cold2", 2, 3);
    nb_cold_loop("chk_nb_cold3", 3, 2);
}
