/* mpi_check_runner.c -- how themis-mpi-check runs and counts its cases: the bookkeeping
 * of checks and failures, the guarded buffers a case writes into, the communicators'
 * descriptions, the case runner (one collective call, its reference result and every
 * check on it) and the counts the families run at. */
#include "mpi_check.h"

#include "../common/persistent_coll.h" /* MPI(X)_*_init, per series */

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== bookkeeping */

static long g_reported; /* FAIL lines printed by this rank */

void check_start(check_t *ck, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ck->what, sizeof ck->what, fmt, ap);
    va_end(ap);
    ck->bad = 0;
}

void check_fail(check_t *ck, const char *fmt, ...) {
    ++ck->bad;
    if (g_reported >= opt.max_report) return;
    ++g_reported;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("themis_mpi_check: FAIL [world rank %d] %s: %s\n", g_rank, ck->what, msg);
    fflush(stdout);
}

void check_rc(check_t *ck, int rc, const char *call) {
    if (rc == MPI_SUCCESS) return;
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    check_fail(ck, "%s returned %d (%s)", call, rc, s);
}

void check_end(check_t *ck) {
    ++g_cases;
    if (ck->bad) ++g_failed;
    if (opt.verbose >= 2 && g_rank == 0)
        printf("themis_mpi_check: %s %s\n", ck->bad ? "FAILED" : "ok", ck->what);
}

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "themis_mpi_check: [world rank %d] fatal: ", g_rank);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) die("out of memory allocating %zu bytes", bytes);
    return p;
}

/* ====================================================================== buffers */

/* A buffer with GUARD known bytes on either side, to catch writes outside it. */
#define GUARD 64
typedef struct {
    unsigned char *mem, *p;
    size_t span;
} gbuf_t;

static unsigned char guard_byte(size_t i) { return (unsigned char)(0xC3 ^ (i * 13)); }
/* What a receive buffer holds before the call (rank-dependent: moved bytes show). */
static unsigned char fill_byte(size_t i, int rank) {
    return (unsigned char)(0x5A ^ (rank * 29) ^ (i * 7));
}

static void gbuf_alloc(gbuf_t *b, size_t bytes) {
    b->span = bytes;
    b->mem = xmalloc(bytes + 2 * GUARD);
    b->p = b->mem + GUARD;
    for (size_t i = 0; i < GUARD; i++) {
        b->mem[i] = guard_byte(i);
        b->p[bytes + i] = guard_byte(GUARD + i);
    }
}

static bool gbuf_guards_ok(const gbuf_t *b) {
    for (size_t i = 0; i < GUARD; i++)
        if (b->mem[i] != guard_byte(i) || b->p[b->span + i] != guard_byte(GUARD + i)) return false;
    return true;
}

static void gbuf_free(gbuf_t *b) {
    free(b->mem);
    b->mem = b->p = NULL;
}

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = mix64(h ^ w);
    }
    for (; i < n; i++) h = mix64(h ^ p[i]);
    return h;
}

/* 1 for every byte of `count` elements that is in the type map, 0 for holes. */
static unsigned char *type_map_mask(const layout *L, size_t count, size_t bytes) {
    unsigned char *mask = calloc(bytes ? bytes : 1, 1);
    if (!mask) die("out of memory");
    if (!count) return mask;
    const size_t packed = (size_t)L->size * count;
    unsigned char *ones = xmalloc(packed);
    memset(ones, 0xFF, packed);
    int pos = 0;
    MPI_Unpack(ones, (int)packed, &pos, mask, (int)count, L->dt, MPI_COMM_SELF);
    free(ones);
    for (size_t i = 0; i < bytes; i++) mask[i] = mask[i] != 0;
    return mask;
}

/* ====================================================================== communicators */

/* Inputs of the next case on c: the same on all ranks of c. */
uint64_t next_seed(comm_info *c) {
    uint64_t h = opt.seed;
    for (const char *p = c->name; *p; p++) h = mix64(h ^ (unsigned char)*p);
    return mix64(h + ++c->seq);
}

void comm_info_init(comm_info *c, MPI_Comm comm, const char *name) {
    c->comm = comm;
    c->seq = 0;
    c->warm = false;
    if (name) MPI_Comm_set_name(comm, name);
    int len = 0;
    MPI_Comm_get_name(comm, c->name, &len);
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (c->rank == 0 && opt.verbose >= 1)
        printf("themis_mpi_check: comm %s size %d\n", c->name, c->size);
}

void comm_info_free(comm_info *c) {
    if (c->comm != MPI_COMM_NULL && c->comm != MPI_COMM_WORLD && c->comm != MPI_COMM_SELF)
        MPI_Comm_free(&c->comm);
}

/* ====================================================================== the case runner */

#define BLK 16384 /* elements per step of the reference computation */

/* Expected result of elements [lfirst, lfirst+n) (logical element numbers): the inputs
 * of ranks 0..nfold-1 folded in rank order, or rank `only`'s input when only >= 0. */
static void expected_block(const layout *L, const op_case *oc, unsigned char *exp,
                           unsigned char *tmp, size_t lfirst, size_t n, int nranks, int nfold,
                           int only, uint64_t seed) {
    const type_desc *B = L->base;
    const size_t nb = n * (size_t)L->nblk, first = lfirst * (size_t)L->nblk;
    if (only >= 0) {
        B->gen(exp, first, nb, only, nranks, oc->kind, seed);
        return;
    }
    B->gen(exp, first, nb, 0, nranks, oc->kind, seed);
    for (int r = 1; r < nfold; r++) {
        B->gen(tmp, first, nb, r, nranks, oc->kind, seed);
        if (oc->ref)
            oc->ref(exp, tmp, nb * B->size);
        else
            B->reduce(exp, tmp, nb, oc->kind);
    }
}

/* Writes rank `rank`'s input, logical elements [lfirst, lfirst+n), into typed elements
 * [tfirst, tfirst+n) of `typed`. */
static void write_input(const layout *L, const op_case *oc, unsigned char *typed, size_t tfirst,
                        size_t lfirst, size_t n, int rank, int nranks, uint64_t seed,
                        unsigned char *scratch) {
    for (size_t done = 0; done < n; done += BLK) {
        const size_t m = n - done < BLK ? n - done : BLK;
        L->base->gen(scratch, (lfirst + done) * (size_t)L->nblk, m * (size_t)L->nblk, rank, nranks,
                     oc->kind, seed);
        to_typed(L, typed, scratch, tfirst + done, m);
    }
}

typedef struct {
    size_t bad, first;
    char text[200];
} mismatch_t;

/* Compares typed result elements [tfirst, tfirst+n) with the expected values. */
static void compare_range(const spec_t *s, const unsigned char *typed, size_t tfirst, size_t lfirst,
                          size_t n, int nfold, int only, uint64_t seed, unsigned char **scratch,
                          mismatch_t *mm) {
    const layout *L = s->L;
    const type_desc *B = L->base;
    for (size_t done = 0; done < n; done += BLK) {
        const size_t m = n - done < BLK ? n - done : BLK;
        expected_block(L, s->oc, scratch[0], scratch[1], lfirst + done, m, s->c->size, nfold, only,
                       seed);
        const unsigned char *got;
        if (layout_is_packed(L)) {
            got = typed + (tfirst + done) * (size_t)L->extent;
        } else {
            from_typed(L, scratch[2], typed, tfirst + done, m);
            got = scratch[2];
        }
        size_t first = 0;
        char text[200];
        const size_t bad = B->compare(got, scratch[0], m * (size_t)L->nblk, s->oc->kind, s->c->size,
                                      &first, text, sizeof text);
        if (bad && !mm->bad) {
            mm->first = tfirst + done + first / (size_t)L->nblk;
            snprintf(mm->text, sizeof mm->text, "%s", text);
        }
        mm->bad += bad;
    }
}

/* themis runs a communicator's nonblocking collectives once a blocking one has set it
 * up (docs/design.md, "Nonblocking set-up"): one allreduce of a themis size, checked. */
void warm_up(comm_info *c) {
    if (c->warm) return;
    c->warm = true;
    const int count = (int)(opt.min_bytes / sizeof(int)) + c->size;
    int *a = xmalloc((size_t)count * sizeof(int)), *r = xmalloc((size_t)count * sizeof(int));
    for (int i = 0; i < count; i++) a[i] = c->rank + i;
    check_t ck;
    check_start(&ck, "allreduce comm=%s count=%d (warm-up)", c->name, count);
    check_rc(&ck, MPI_Allreduce(a, r, count, MPI_INT, MPI_SUM, c->comm), "MPI_Allreduce");
    for (int i = 0; i < count; i++)
        if (r[i] != c->size * i + c->size * (c->size - 1) / 2) {
            check_fail(&ck, "element %d: got %d", i, r[i]);
            break;
        }
    check_end(&ck);
    free(a);
    free(r);
}

/* The nonblocking form of s's collective (rc: reduce_scatter's counts). */
static int start_nonblocking(const spec_t *s, const void *sendbuf, void *recvbuf, const int *rc,
                             int scount, MPI_Datatype sdt, MPI_Request *req) {
    MPI_Comm comm = s->c->comm;
    switch (s->coll) {
    case C_ALLREDUCE:
        return MPI_Iallreduce(sendbuf, recvbuf, (int)s->count, s->L->dt, s->oc->op, comm, req);
    case C_REDUCE_SCATTER:
        return MPI_Ireduce_scatter(sendbuf, recvbuf, rc, s->L->dt, s->oc->op, comm, req);
    case C_REDUCE_SCATTER_BLOCK:
        return MPI_Ireduce_scatter_block(sendbuf, recvbuf, (int)s->count, s->L->dt, s->oc->op, comm,
                                         req);
    default:
        return MPI_Iallgather(sendbuf, scount, sdt, recvbuf, (int)s->count, s->L->dt, comm, req);
    }
}

/* Polls with MPI_Test (the progress a computing application gives). */
static int test_until_done(MPI_Request *req) {
    int flag = 0, rc = MPI_SUCCESS;
    while (rc == MPI_SUCCESS && !flag) rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    return rc;
}

/* A rooted collective (MPI_Reduce, MPI_Bcast) in form s->form (spec_t). */
static int run_rooted(const spec_t *s, const void *sendbuf, void *recvbuf) {
    const int count = (int)s->count;
    MPI_Comm comm = s->c->comm;
    const bool bcast = s->coll == C_BCAST;
    if (s->form == FORM_BLOCKING)
        return bcast ? MPI_Bcast(recvbuf, count, s->L->dt, s->root, comm)
                     : MPI_Reduce(sendbuf, recvbuf, count, s->L->dt, s->oc->op, s->root, comm);
    warm_up(s->c);
    MPI_Request req;
    int rc;
    if (s->form == FORM_NONBLOCKING) {
        rc = bcast ? MPI_Ibcast(recvbuf, count, s->L->dt, s->root, comm, &req)
                   : MPI_Ireduce(sendbuf, recvbuf, count, s->L->dt, s->oc->op, s->root, comm, &req);
        return rc == MPI_SUCCESS ? test_until_done(&req) : rc;
    }
#if HAVE_PERSISTENT_COLL
    rc = bcast ? Persistent_bcast_init(recvbuf, count, s->L->dt, s->root, comm, MPI_INFO_NULL, &req)
               : Persistent_reduce_init(sendbuf, recvbuf, count, s->L->dt, s->oc->op, s->root, comm,
                                        MPI_INFO_NULL, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Start(&req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) rc = MPI_Request_free(&req);
    return rc;
#else
    return MPI_ERR_OTHER; /* family_rooted asks for it only where there is one */
#endif
}

void run_spec(const spec_t *s) {
    comm_info *c = s->c;
    const layout *L = s->L, *SL = s->SL ? s->SL : s->L;
    const op_case *oc = s->oc;
    const int me = c->rank, n = c->size;
    const uint64_t seed = next_seed(c);
    const bool reduction = s->coll != C_ALLGATHER && s->coll != C_BCAST;

    /* Element counts: input (in SL elements for the send buffer), receive buffer, and
     * where this rank's result lies in the logical vector. */
    size_t in_elems = s->count, recv_elems = s->count, res_elems = s->count, lres = 0;
    size_t total = 0;
    int *rc = NULL;
    if (s->coll == C_REDUCE_SCATTER || s->coll == C_REDUCE_SCATTER_BLOCK) {
        rc = xmalloc(sizeof(int) * (size_t)n);
        for (int r = 0; r < n; r++) {
            rc[r] = s->coll == C_REDUCE_SCATTER ? s->rcounts[r] : (int)s->count;
            if (r < me) lres += (size_t)rc[r];
            total += (size_t)rc[r];
        }
        in_elems = total;
        res_elems = (size_t)rc[me];
        recv_elems = s->inplace ? total : res_elems;
    } else if (s->coll == C_ALLGATHER) {
        recv_elems = res_elems = s->count * (size_t)n;
    } else if (s->coll == C_REDUCE && me != s->root) {
        recv_elems = res_elems = 0;
    }
    const size_t s_elems = in_elems * (size_t)L->nblk / (size_t)SL->nblk;

    check_t ck;
    check_start(&ck, "%s comm=%s type=%s%s%s%s op=%s count=%zu%s%s%s", coll_names[s->coll], c->name,
                L->name, s->SL ? " (send " : "", s->SL ? SL->name : "", s->SL ? ")" : "",
                reduction ? oc->name : "-", s->count, s->inplace ? " in-place" : "",
                s->variant ? " " : "", s->variant ? s->variant : "");

    unsigned char *scratch[3];
    for (int i = 0; i < 3; i++) scratch[i] = xmalloc((size_t)BLK * L->nblk * L->base->size);

    /* Send buffer (unless in place) and receive buffer. */
    gbuf_t sb = {0}, rb;
    const bool use_sbuf =
        s->coll != C_BCAST && !(s->inplace && (s->coll != C_REDUCE || me == s->root));
    if (use_sbuf) {
        gbuf_alloc(&sb, span(SL, s_elems));
        write_input(SL, oc, sb.p, 0, 0, s_elems, me, n, seed, scratch[0]);
    }
    gbuf_alloc(&rb, span(L, recv_elems));
    unsigned char *mask = NULL;
    if (g_check_holes && L->holes && rb.span) {
        mask = type_map_mask(L, recv_elems, rb.span);
        for (size_t i = 0; i < rb.span; i++) rb.p[i] = fill_byte(i, me);
    }
    if (s->coll == C_BCAST && me != s->root) { /* not the input: what is there goes */
        for (size_t i = 0; i < rb.span; i++) rb.p[i] = fill_byte(i, me);
    } else if (!use_sbuf) {
        const size_t at = s->coll == C_ALLGATHER ? (size_t)me * s->count : 0;
        write_input(L, oc, rb.p, at, 0, in_elems, me, n, seed, scratch[0]);
        if (mask) /* put the holes back: the check below expects them untouched */
            for (size_t i = 0; i < rb.span; i++)
                if (!mask[i]) rb.p[i] = fill_byte(i, me);
    }
    const uint64_t shash = use_sbuf ? hash_bytes(sb.p, sb.span) : 0;
    const void *sendbuf = use_sbuf ? (const void *)sb.p : MPI_IN_PLACE;

    int mrc = MPI_SUCCESS;
    MPI_Request req;
    if (opt.nonblocking && s->coll < C_MAIN_COLLS) {
        warm_up(c);
        mrc = start_nonblocking(s, sendbuf, rb.p, rc, (int)s_elems, SL->dt, &req);
        if (mrc == MPI_SUCCESS) mrc = test_until_done(&req);
    } else
        switch (s->coll) {
        case C_ALLREDUCE:
            mrc = MPI_Allreduce(sendbuf, rb.p, (int)s->count, L->dt, oc->op, c->comm);
            break;
        case C_REDUCE_SCATTER:
            mrc = MPI_Reduce_scatter(sendbuf, rb.p, rc, L->dt, oc->op, c->comm);
            break;
        case C_REDUCE_SCATTER_BLOCK:
            mrc = MPI_Reduce_scatter_block(sendbuf, rb.p, (int)s->count, L->dt, oc->op, c->comm);
            break;
        case C_ALLGATHER:
            mrc = MPI_Allgather(sendbuf, (int)s_elems, SL->dt, rb.p, (int)s->count, L->dt, c->comm);
            break;
        case C_REDUCE:
        case C_BCAST: mrc = run_rooted(s, sendbuf, rb.p); break;
        case C_IALLREDUCE:
            mrc = MPI_Iallreduce(sendbuf, rb.p, (int)s->count, L->dt, oc->op, c->comm, &req);
            if (mrc == MPI_SUCCESS) mrc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            break;
        case C_SCAN: mrc = MPI_Scan(sendbuf, rb.p, (int)s->count, L->dt, oc->op, c->comm); break;
        }
    check_rc(&ck, mrc, coll_names[s->coll]);

    if (mrc == MPI_SUCCESS) {
        mismatch_t mm = {0, 0, ""};
        if (s->coll == C_BCAST) {
            compare_range(s, rb.p, 0, 0, s->count, n, s->root, seed, scratch, &mm);
        } else if (s->coll == C_ALLGATHER) {
            for (int q = 0; q < n; q++)
                compare_range(s, rb.p, (size_t)q * s->count, 0, s->count, n, q, seed, scratch, &mm);
        } else {
            const int nfold = s->coll == C_SCAN ? me + 1 : n;
            compare_range(s, rb.p, 0, lres, res_elems, nfold, -1, seed, scratch, &mm);
        }
        if (mm.bad)
            check_fail(&ck, "%zu of %zu values wrong; first at element %zu: %s", mm.bad,
                       res_elems * (size_t)L->nblk, mm.first, mm.text);
        if (mask) {
            size_t changed = 0, first = 0;
            for (size_t i = 0; i < rb.span; i++)
                if (!mask[i] && rb.p[i] != fill_byte(i, me) && !changed++) first = i;
            if (changed)
                check_fail(&ck,
                           "%zu bytes in the holes of the receive datatype modified "
                           "(first at byte %zu)",
                           changed, first);
        }
    }
    if (!gbuf_guards_ok(&rb)) check_fail(&ck, "wrote outside the receive buffer (guard bytes)");
    if (use_sbuf && !gbuf_guards_ok(&sb)) check_fail(&ck, "send buffer guard bytes modified");
    if (use_sbuf && hash_bytes(sb.p, sb.span) != shash) check_fail(&ck, "send buffer modified");
    check_end(&ck);

    free(mask);
    free(rc);
    for (int i = 0; i < 3; i++) free(scratch[i]);
    if (use_sbuf) gbuf_free(&sb);
    gbuf_free(&rb);
}

/* ====================================================================== counts */

static int cmp_size(const void *a, const void *b) {
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* A count that runs through themis (type size x count >= min_bytes) and ends in ragged
 * chunks and pieces. per_rank: for reduce_scatter_block / allgather (count per rank). */
size_t themis_count(comm_info *c, size_t type_size, bool per_rank) {
    const size_t q = per_rank ? opt.chunks : opt.chunks * (size_t)c->size;
    const size_t unit = per_rank ? type_size * (size_t)c->size : type_size;
    const size_t mc = ceil_div(opt.min_bytes, unit);
    return ceil_div(mc ? mc : 1, q) * q + q / 2 + 1;
}

/* The size sweep: 0, 1, around the number of ranks and chunks, around min_bytes,
 * around multiples of chunks x ranks, primes, and (large) ~1M elements. */
int sweep_counts(comm_info *c, size_t type_size, bool per_rank, bool large, size_t *out) {
    int k = 0;
    if (opt.nsizes) {
        for (int i = 0; i < opt.nsizes; i++) out[k++] = opt.sizes[i];
        return k;
    }
    const size_t C = opt.chunks, n = (size_t)c->size;
    const size_t q = per_rank ? C : C * n;
    const size_t unit = per_rank ? type_size * n : type_size;
    const size_t mc = ceil_div(opt.min_bytes, unit), m = ceil_div(mc, q) + 1;
    const size_t base[] = {0,
                           1,
                           2,
                           C - 1,
                           C,
                           C + 1,
                           mc - 1,
                           mc,
                           mc + 1,
                           q * m - 1,
                           q * m,
                           q * m + 1,
                           per_rank ? 101 : 1009,
                           per_rank ? 1009 : 7919};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) out[k++] = base[i];
    if (!per_rank) {
        const size_t around[] = {n - 1, n, n + 1, C * n - 1, C * n, C * n + 1};
        for (size_t i = 0; i < sizeof around / sizeof around[0]; i++) out[k++] = around[i];
    }
    if (large) out[k++] = per_rank ? (1048573 / n) | 1 : 1048573;
    qsort(out, (size_t)k, sizeof out[0], cmp_size);
    int u = 0;
    for (int i = 0; i < k; i++)
        if (out[i] <= INT_MAX / 8 && (u == 0 || out[i] != out[u - 1])) out[u++] = out[i];
    return u;
}

/* Reduce_scatter recvcounts averaging at least `avg` per rank (the total is at least
 * n x avg, so a count chosen for themis stays above min_bytes):
 *   uniform  avg each
 *   uneven   (r*7919 + n + avg) % (2 avg + 1), the shortfall added to the last rank
 *   zeros    like uneven, but 0 for every rank r with r % 3 == 1
 *   single   everything to the last rank, 0 elsewhere */
const char *const rs_variant_names[] = {"uniform", "uneven", "zeros", "single"};

void rs_counts(rs_variant v, size_t avg, int n, int *rc) {
    size_t total = 0;
    for (int r = 0; r < n; r++) {
        const size_t uneven = ((size_t)r * 7919 + (size_t)n + avg) % (2 * avg + 1);
        switch (v) {
        case RS_UNIFORM: rc[r] = (int)avg; break;
        case RS_UNEVEN: rc[r] = (int)uneven; break;
        case RS_ZEROS: rc[r] = r % 3 == 1 ? 0 : (int)uneven; break;
        case RS_SINGLE: rc[r] = r == n - 1 ? (int)(avg * (size_t)n) : 0; break;
        default: break;
        }
        total += (size_t)rc[r];
    }
    if (total < avg * (size_t)n) rc[n - 1] += (int)(avg * (size_t)n - total);
}
