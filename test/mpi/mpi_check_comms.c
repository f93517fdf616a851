/* mpi_check_comms.c -- the blocking families of cases of themis-mpi-check over
 * communicators (--tests self, others, many, cycles, quirks; --info-*): MPI_COMM_SELF, the
 * collectives themis leaves alone, many communicators alive at once or in turn, Open MPI's
 * own deviations, and the per-communicator info keys. */
#include "mpi_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* self: MPI_COMM_SELF (themis declines communicators of one rank). */
void family_self(void)
{
    comm_info self;
    comm_info_init(&self, MPI_COMM_SELF, NULL);
    FOR_INPLACE(ip) {
        run_four(&self, "MPI_INT", K_SUM, ip);
        run_four(&self, "MPI_DOUBLE", K_MAX, ip);
    }
}

/* A nonblocking allreduce (libnbc, on the user's communicator) in flight while themis
 * runs its blocking collectives on the same communicator. */
static void overlap_check(comm_info *c)
{
    const size_t count = themis_count(c, sizeof(int), false);
    int *a = xmalloc(count * sizeof(int)), *r = xmalloc(count * sizeof(int));
    for (size_t i = 0; i < count; i++) a[i] = c->rank + (int) (i % 1000);
    check_t ck;
    check_start(&ck, "iallreduce comm=%s count=%zu overlapping the blocking collectives",
                c->name, count);
    MPI_Request req;
    int rc = MPI_Iallreduce(a, r, (int) count, MPI_INT, MPI_SUM, c->comm, &req);
    check_rc(&ck, rc, "MPI_Iallreduce");
    run_four(c, "MPI_DOUBLE", K_SUM, 0);
    if (rc == MPI_SUCCESS) check_rc(&ck, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    const int n = c->size;
    for (size_t i = 0; i < count; i++)
        if (r[i] != n * (int) (i % 1000) + n * (n - 1) / 2) {
            check_fail(&ck, "element %zu: got %d expected %d", i, r[i],
                       n * (int) (i % 1000) + n * (n - 1) / 2);
            break;
        }
    check_end(&ck);
    free(a);
    free(r);
}

/* An intercommunicator between the even and the odd ranks of MPI_COMM_WORLD (themis
 * declines intercommunicators: the collectives go to coll/inter). */
static void intercomm_check(void)
{
    if (g_size < 2) return;
    const int color = g_rank % 2, count = 1000, per = 5;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 77, &inter);
    MPI_Comm_set_name(inter, "chk_inter");
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int remote = 0;
    MPI_Comm_remote_size(inter, &remote);
    int *a = xmalloc(sizeof(int) * count), *r = xmalloc(sizeof(int) * count);
    int *g = xmalloc(sizeof(int) * (size_t) (per * remote));
    for (int i = 0; i < count; i++) a[i] = g_rank * 3 + i % 7;
    check_t ck;
    check_start(&ck, "allreduce comm=chk_inter (intercommunicator) count=%d", count);
    check_rc(&ck, MPI_Allreduce(a, r, count, MPI_INT, MPI_SUM, inter), "MPI_Allreduce");
    for (int i = 0; i < count; i++) {
        int e = 0;
        for (int q = 1 - color; q < g_size; q += 2) e += q * 3 + i % 7;
        if (r[i] != e) {
            check_fail(&ck, "element %d: got %d expected %d (sum over the other group)", i, r[i],
                       e);
            break;
        }
    }
    check_end(&ck);
    check_start(&ck, "allgather comm=chk_inter (intercommunicator) count=%d", per);
    check_rc(&ck, MPI_Allgather(a, per, MPI_INT, g, per, MPI_INT, inter), "MPI_Allgather");
    for (int k = 0; k < remote; k++) /* remote rank k is world rank 2k + (1 - color) */
        for (int i = 0; i < per; i++)
            if (g[k * per + i] != (2 * k + 1 - color) * 3 + i % 7) {
                check_fail(&ck, "block of remote rank %d element %d: got %d", k, i, g[k * per + i]);
                k = remote;
                break;
            }
    check_end(&ck);
    free(a), free(r), free(g);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

/* others: collectives themis does not take still work with it loaded. */
void family_others(void)
{
    intercomm_check();
    const layout Li = predefined(find_type("MPI_INT"));
    const op_case sum = predefined_op(K_SUM);
    for (int ci = 0; ci < g_ncomms; ci++) {
        comm_info *c = &g_comms[ci];
        const int me = c->rank, n = c->size;
        const size_t count = themis_count(c, sizeof(int), false);
        check_t ck;

        check_start(&ck, "barrier comm=%s", c->name);
        check_rc(&ck, MPI_Barrier(c->comm), "MPI_Barrier");
        check_end(&ck);

        FOR_INPLACE(ip) {
            const spec_t specs[] = {
                {.coll = C_REDUCE, .c = c, .L = &Li, .oc = &sum, .count = count, .root = 0,
                 .inplace = ip},
                {.coll = C_IALLREDUCE, .c = c, .L = &Li, .oc = &sum, .count = count, .inplace = ip},
                {.coll = C_SCAN, .c = c, .L = &Li, .oc = &sum, .count = 7, .inplace = ip},
            };
            for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) run_spec(&specs[i]);
        }
        overlap_check(c);

        /* bcast from the last rank */
        const uint64_t seed = next_seed(c);
        int *buf = xmalloc(count * sizeof(int)), *exp = xmalloc(count * sizeof(int));
        find_type("MPI_INT")->gen(exp, 0, count, n - 1, n, K_DATA, seed);
        if (me == n - 1) memcpy(buf, exp, count * sizeof(int));
        else memset(buf, 0, count * sizeof(int));
        check_start(&ck, "bcast comm=%s count=%zu root=%d", c->name, count, n - 1);
        check_rc(&ck, MPI_Bcast(buf, (int) count, MPI_INT, n - 1, c->comm), "MPI_Bcast");
        if (memcmp(buf, exp, count * sizeof(int))) check_fail(&ck, "wrong data");
        check_end(&ck);
        free(buf);
        free(exp);

        /* alltoall: element j from s to d is s*1000003 + d*1009 + j */
        const int per = 5;
        int *sa = xmalloc(sizeof(int) * (size_t) (per * n));
        int *ra = xmalloc(sizeof(int) * (size_t) (per * n));
        for (int d = 0; d < n; d++)
            for (int j = 0; j < per; j++) sa[d * per + j] = me * 1000003 + d * 1009 + j;
        check_start(&ck, "alltoall comm=%s count=%d", c->name, per);
        check_rc(&ck, MPI_Alltoall(sa, per, MPI_INT, ra, per, MPI_INT, c->comm), "MPI_Alltoall");
        for (int src = 0; src < n; src++)
            for (int j = 0; j < per; j++)
                if (ra[src * per + j] != src * 1000003 + me * 1009 + j) {
                    check_fail(&ck, "from rank %d element %d: got %d", src, j, ra[src * per + j]);
                    src = n;
                    break;
                }
        check_end(&ck);
        free(sa);
        free(ra);

        /* allgatherv: rank r contributes 2r+1 (+100 on odd ranks) ints */
        int *counts = xmalloc(sizeof(int) * (size_t) n);
        int *displs = xmalloc(sizeof(int) * (size_t) n);
        int tot = 0;
        for (int r = 0; r < n; r++) {
            counts[r] = 2 * r + 1 + (r % 2) * 100;
            displs[r] = tot;
            tot += counts[r];
        }
        int *mine = xmalloc(sizeof(int) * (size_t) counts[me]);
        int *all = xmalloc(sizeof(int) * (size_t) tot);
        for (int j = 0; j < counts[me]; j++) mine[j] = me * 7777 + j;
        check_start(&ck, "allgatherv comm=%s", c->name);
        check_rc(&ck,
                 MPI_Allgatherv(mine, counts[me], MPI_INT, all, counts, displs, MPI_INT, c->comm),
                 "MPI_Allgatherv");
        for (int r = 0, stop = 0; r < n && !stop; r++)
            for (int j = 0; j < counts[r]; j++)
                if (all[displs[r] + j] != r * 7777 + j) {
                    check_fail(&ck, "block of rank %d element %d: got %d", r, j,
                               all[displs[r] + j]);
                    stop = 1;
                    break;
                }
        check_end(&ck);
        free(mine);
        free(all);
        free(counts);
        free(displs);
    }
}

/* many: communicators alive at once, all used, freed in another order. */
void family_many(void)
{
    const int m = opt.many;
    comm_info *cs = xmalloc(sizeof(comm_info) * (size_t) m);
    for (int i = 0; i < m; i++) {
        MPI_Comm d;
        char name[32];
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        snprintf(name, sizeof name, "chk_many_%02d", i);
        comm_info_init(&cs[i], d, name);
    }
    for (int i = 0; i < m; i++) run_four(&cs[i], "MPI_INT", K_SUM, opt.inplace_lo);
    for (int i = m - 1; i >= 0; i--) run_four(&cs[i], "MPI_DOUBLE", K_SUM, opt.inplace_hi);
    /* free in a permuted order (7 is coprime with 20; any m works: visit each once) */
    bool *freed = calloc((size_t) m, 1);
    for (int i = 0, j = 0; i < m; i++) {
        j = (j + 7) % m;
        while (freed[j]) j = (j + 1) % m;
        freed[j] = true;
        comm_info_free(&cs[j]);
    }
    free(freed);
    free(cs);
}

/* cycles: repeated create / use / free, alternating how the communicator is made
 * (dup, split, dup_with_info, create, idup). */
void family_cycles(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "themis_policy", "baseline");
    MPI_Group group;
    MPI_Comm_group(MPI_COMM_WORLD, &group);
    for (int i = 0; i < opt.cycles; i++) {
        MPI_Comm d = MPI_COMM_NULL;
        MPI_Request req;
        switch (i % 5) {
        case 0: MPI_Comm_dup(MPI_COMM_WORLD, &d); break;
        case 1: MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &d); break;
        case 2: MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &d); break;
        case 3: MPI_Comm_create(MPI_COMM_WORLD, group, &d); break;
        case 4:
            MPI_Comm_idup(MPI_COMM_WORLD, &d, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            break;
        }
        comm_info c;
        const int saved = opt.verbose;
        opt.verbose = 0; /* no "comm ... size" line per cycle */
        comm_info_init(&c, d, "chk_cycle");
        opt.verbose = saved;
        run_four(&c, i % 2 ? "MPI_DOUBLE" : "MPI_INT", K_SUM,
                 i % 2 ? opt.inplace_hi : opt.inplace_lo);
        comm_info_free(&c);
    }
    MPI_Group_free(&group);
    MPI_Info_free(&info);
}

/* One checked blocking MPI_Allreduce of `count` ints on c (values that vary with `call`). */
static void checked_allreduce(comm_info *c, int count, int call)
{
    int *a = xmalloc((size_t) count * sizeof(int)), *r = xmalloc((size_t) count * sizeof(int));
    for (int i = 0; i < count; i++) a[i] = c->rank + i + call;
    check_t ck;
    check_start(&ck, "allreduce comm=%s count=%d call=%d", c->name, count, call);
    check_rc(&ck, MPI_Allreduce(a, r, count, MPI_INT, MPI_SUM, c->comm), "MPI_Allreduce");
    for (int i = 0; i < count; i++)
        if (r[i] != c->size * (i + call) + c->size * (c->size - 1) / 2) {
            check_fail(&ck, "element %d: got %d", i, r[i]);
            break;
        }
    check_end(&ck);
    free(a);
    free(r);
}

/* inherit: a communicator of the same processes made after another decided a size's bin starts
 * with that decision (coll_themis_inherit.h): chk_decide, a duplicate of MPI_COMM_WORLD, runs a
 * bin's whole trial (its first 7 of 8 blocking allreduce calls of 64 KiB), then chk_heir, its duplicate, 4 calls
 * of the same size. Where the crossover is measured, the verbose-2 stats tell whether chk_heir
 * ran any of them below (test/mpi/check_crossover.sh); results are checked either way. */
void family_inherit(void)
{
    const int count = (64 << 10) / (int) sizeof(int);
    MPI_Comm d;
    comm_info decide, heir;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    comm_info_init(&decide, d, "chk_decide");
    for (int call = 0; call < 8; call++) checked_allreduce(&decide, count, call);
    MPI_Comm_dup(decide.comm, &d);
    comm_info_init(&heir, d, "chk_heir");
    for (int call = 0; call < 4; call++) checked_allreduce(&heir, count, call);
    comm_info_free(&heir);
    comm_info_free(&decide);
}

/* cut: a trial's agreements run beside the calls (src/crossover.h) and may be in flight when its
 * communicator goes. Duplicates of MPI_COMM_WORLD run 0 to 7 blocking allreduce calls of 128 KiB
 * (every state of a bin's trial, up to just after its decision) and are freed; then
 * MPI_COMM_WORLD runs 2 calls of 1 MiB, a bin no other communicator decided, so that
 * MPI_Finalize meets the agreement they started. Results are checked; a hang is the failure
 * this guards against (check_crossover.sh runs it under a timeout). */
void family_cut(void)
{
    const int count = (128 << 10) / (int) sizeof(int);
    for (int calls = 0; calls < 8; calls++) {
        MPI_Comm d;
        comm_info cut;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        comm_info_init(&cut, d, "chk_cut");
        for (int call = 0; call < calls; call++) checked_allreduce(&cut, count, call);
        comm_info_free(&cut);
    }
    for (int call = 0; call < 2; call++) checked_allreduce(&g_world, 8 * count, call);
}

/* quirks: where Open MPI 4.1.4's own reductions deviate from plain C arithmetic, themis
 * (which reduces through the same op framework) must give what a communicator without
 * themis gives (chk_nothemis: ompi_comm_coll_preference "^themis"):
 *  - 8-bit integer SUM overflow: op/avx saturates instead of wrapping (ompi#8045), but
 *    only in its vector loop: the scalar remainder wraps, so an element's result depends
 *    on the length and offset of the reduction call that covered it. Results with and
 *    without themis can then differ; that is printed as a KNOWN note, not a failure.
 *    With --mca op ^avx both must wrap, identically (checked strictly).
 *  - MIN/MAX on MPI_UNSIGNED_LONG (compared as signed, ompi#10525) and MPI_OFFSET
 *    (compared as unsigned): element-wise, so results must be identical. */
void family_quirks(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", "^themis");
    MPI_Comm d;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &d);
    MPI_Info_free(&info);
    comm_info plain;
    comm_info_init(&plain, d, "chk_nothemis");
    comm_info *c = &g_world;
    static const struct { const char *type; kind_t op; bool length_dependent; } cases[] = {
        {"MPI_INT8_T", K_SUM, true},      {"MPI_SIGNED_CHAR", K_SUM, true},
        {"MPI_CHAR", K_SUM, true},        {"MPI_UINT8_T", K_SUM, true},
        {"MPI_UNSIGNED_CHAR", K_SUM, true}, {"MPI_INT8_T", K_PROD, false},
        {"MPI_UINT8_T", K_PROD, false},   {"MPI_UNSIGNED_LONG", K_MIN, false},
        {"MPI_UNSIGNED_LONG", K_MAX, false}, {"MPI_OFFSET", K_MIN, false},
        {"MPI_OFFSET", K_MAX, false},
    };
    for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
        const type_desc *T = find_type(cases[q].type);
        const kind_t kind = cases[q].op;
        for (int coll = C_ALLREDUCE; coll <= C_REDUCE_SCATTER_BLOCK; coll += 2) {
            if (!COLL_ON(coll)) continue;
            const bool block = coll == C_REDUCE_SCATTER_BLOCK;
            const size_t count = themis_count(c, T->size, block);
            const size_t in = block ? count * (size_t) c->size : count;
            const size_t off = block ? (size_t) c->rank * count : 0;
            const uint64_t seed = next_seed(c);
            unsigned char *sbuf = xmalloc(in * T->size), *r1 = xmalloc(in * T->size),
                          *r2 = xmalloc(in * T->size), *ref = xmalloc(in * T->size),
                          *tmp = xmalloc(in * T->size);
            T->gen(sbuf, 0, in, c->rank, c->size, K_DATA, seed); /* any bits: overflows */
            check_t ck;
            check_start(&ck, "quirks %s comm=%s type=%s op=%s count=%zu: as without themis",
                        coll_names[coll], c->name, T->name, kind_names[kind], count);
            const MPI_Op op = kind_op(kind);
            comm_info *on[2] = {c, &plain};
            unsigned char *res[2] = {r1, r2};
            for (int i = 0; i < 2; i++)
                check_rc(&ck,
                         block ? MPI_Reduce_scatter_block(sbuf, res[i], (int) count, T->dt, op,
                                                          on[i]->comm)
                               : MPI_Allreduce(sbuf, res[i], (int) count, T->dt, op, on[i]->comm),
                         coll_names[coll]);
            /* plain C arithmetic (wrapping, correct comparisons) */
            T->gen(ref, 0, in, 0, c->size, K_DATA, seed);
            for (int r = 1; r < c->size; r++) {
                T->gen(tmp, 0, in, r, c->size, K_DATA, seed);
                T->reduce(ref, tmp, in, kind);
            }
            size_t differ = 0, first = 0, plain_off = 0, themis_off = 0;
            for (size_t i = 0; i < count; i++) {
                const unsigned char *a = r1 + i * T->size, *b = r2 + i * T->size,
                                    *e = ref + (off + i) * T->size;
                if (memcmp(a, b, T->size) && !differ++) first = i;
                plain_off += memcmp(b, e, T->size) != 0;
                themis_off += memcmp(a, e, T->size) != 0;
            }
            char text[200] = "";
            if (differ) {
                char t1[80] = "same", t2[80] = "same";
                size_t f = 0;
                T->compare(r1 + first * T->size, r2 + first * T->size, 1, kind, c->size, &f, t1,
                           sizeof t1);
                T->compare(r1 + first * T->size, ref + (off + first) * T->size, 1, kind, c->size,
                           &f, t2, sizeof t2);
                snprintf(text, sizeof text,
                         "first at %zu: themis vs ^themis: %s; vs C arithmetic: %s",
                         first, t1, t2);
            }
            const bool known = cases[q].length_dependent && plain_off > 0;
            if (differ && !known)
                check_fail(&ck, "%zu of %zu elements differ from the result without themis; %s",
                           differ, count, text);
            if (c->rank == 0 && opt.verbose >= 1)
                printf("themis_mpi_check: %s: %s %s %s: %zu of %zu results differ from C "
                       "arithmetic without themis, %zu with themis; %zu differ between "
                       "the two%s%s\n",
                       differ && known ? "KNOWN (op/avx 8-bit saturation, ompi#8045)" : "note",
                       coll_names[coll], T->name, kind_names[kind], plain_off, count, themis_off,
                       differ, differ ? "; " : "", text);
            check_end(&ck);
            free(sbuf), free(r1), free(r2), free(ref), free(tmp);
        }
    }
    comm_info_free(&plain);
}

/* --info-via late: a plain dup used first (chk_late_before: set up, its settings resolved),
 * then given the key by MPI_Comm_set_info and renamed chk_late_<value> before it is used
 * again: themis's lines name the communicator as it is called when they are printed, so
 * the runner sees which calls ran before the key and which after (the policy at verbose
 * 5: themis resolves its settings at set-up and again after MPI_Comm_set_info). */
static void info_set_late(MPI_Info info)
{
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    comm_info c;
    comm_info_init(&c, d, "chk_late_before");
    run_four(&c, "MPI_DOUBLE", K_SUM, opt.inplace_lo);
    MPI_Comm_set_info(d, info);
    char name[64];
    snprintf(name, sizeof name, "chk_late_%s", opt.info_value);
    comm_info_init(&c, d, name);
    run_four(&c, "MPI_DOUBLE", K_SUM, opt.inplace_lo);
    run_four(&c, "MPI_INT", K_SUM, opt.inplace_hi);
    comm_info_free(&c);
}

/* --info-policy P (--info-transport T, --info-node-transport T): the MPI_Info key
 * themis_policy=P (themis_transport=T, themis_node_transport=T) given to MPI_Comm_dup_with_info (chk_info_P) and to
 * MPI_Comm_set_info on a plain dup (chk_setinfo_P), as --info-via says. The key must be
 * visible through MPI_Comm_get_info (themis reads it from the communicator's info); the
 * runner checks what themis printed (the policy at verbose 5, the transport at 1). */
void family_info(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, opt.info_key, opt.info_value);
    comm_info cs[2];
    int n = 0;
    char name[64];
    MPI_Comm d;
    if (opt.info_via & 1) {
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &d);
        snprintf(name, sizeof name, "chk_info_%s", opt.info_value);
        comm_info_init(&cs[n++], d, name);
    }
    if (opt.info_via & 2) {
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Comm_set_info(d, info);
        snprintf(name, sizeof name, "chk_setinfo_%s", opt.info_value);
        comm_info_init(&cs[n++], d, name);
    }
    if (opt.info_via & 4) info_set_late(info);
    MPI_Info_free(&info);
    for (int i = 0; i < n; i++) {
        check_t ck;
        check_start(&ck, "info key %s=%s visible on comm=%s", opt.info_key, opt.info_value,
                    cs[i].name);
        MPI_Info got;
        char value[MPI_MAX_INFO_VAL + 1] = "";
        int flag = 0;
        MPI_Comm_get_info(cs[i].comm, &got);
        MPI_Info_get(got, opt.info_key, MPI_MAX_INFO_VAL, value, &flag);
        MPI_Info_free(&got);
        if (!flag || strcmp(value, opt.info_value))
            check_fail(&ck, "MPI_Comm_get_info: %s %s", opt.info_key, flag ? value : "not set");
        check_end(&ck);
        run_four(&cs[i], "MPI_DOUBLE", K_SUM, opt.inplace_lo);
        run_four(&g_world, "MPI_DOUBLE", K_SUM, opt.inplace_lo); /* interleaved */
    }
    for (int i = 0; i < n; i++) comm_info_free(&cs[i]);
}
