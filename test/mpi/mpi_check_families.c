/* mpi_check_families.c -- the blocking families of cases of themis-mpi-check over data
 * (--tests sizes, types, holes, derived, userop; --big): which collectives, datatypes, ops
 * and counts each one runs. The families over communicators are in mpi_check_comms.c, the
 * nonblocking and persistent ones in mpi_check_nonblocking.c. */
#include "mpi_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== families */

/* The four collectives themis takes, at `count` (allreduce) / `count_b` (per rank). */
static void run_main_colls(comm_info *c, const layout *L, const op_case *oc,
                           const op_case *data, size_t count, size_t count_b, int inplace,
                           rs_variant v, const char *variant)
{
    spec_t s = {.c = c, .L = L, .oc = oc, .inplace = inplace, .variant = variant};
    if (COLL_ON(C_ALLREDUCE)) {
        s.coll = C_ALLREDUCE, s.count = count;
        run_spec(&s);
    }
    if (COLL_ON(C_REDUCE_SCATTER)) {
        int *rc = xmalloc(sizeof(int) * (size_t) c->size);
        rs_counts(v, count_b, c->size, rc);
        s.coll = C_REDUCE_SCATTER, s.count = count_b, s.rcounts = rc;
        s.variant = variant ? variant : rs_variant_names[v];
        run_spec(&s);
        s.variant = variant;
        free(rc);
    }
    if (COLL_ON(C_REDUCE_SCATTER_BLOCK)) {
        s.coll = C_REDUCE_SCATTER_BLOCK, s.count = count_b;
        run_spec(&s);
    }
    if (COLL_ON(C_ALLGATHER) && data) {
        s.coll = C_ALLGATHER, s.count = count_b, s.oc = data;
        run_spec(&s);
    }
}

/* sizes: a few datatypes over the whole size sweep, on every communicator. */
void family_sizes(void)
{
    static const struct { const char *type; kind_t kind; bool large; } sweep[] = {
        {"MPI_INT", K_SUM, true},
        {"MPI_DOUBLE", K_SUM, true},
        {"MPI_UINT8_T", K_BXOR, false},
        {"MPI_DOUBLE_INT", K_MINLOC, false},
    };
    const op_case data = predefined_op(K_DATA);
    size_t counts[64];
    for (int ci = 0; ci < g_ncomms; ci++) {
        comm_info *c = &g_comms[ci];
        for (size_t t = 0; t < sizeof sweep / sizeof sweep[0]; t++) {
            const layout L = predefined(find_type(sweep[t].type));
            const op_case oc = predefined_op(sweep[t].kind);
            /* large counts only on the first communicator: they cost time */
            const bool large = opt.large && sweep[t].large && ci == 0;
            FOR_INPLACE(ip) {
                spec_t s = {.c = c, .L = &L, .oc = &oc, .inplace = ip};
                int k = sweep_counts(c, (size_t) L.size, false, large, counts);
                if (COLL_ON(C_ALLREDUCE))
                    for (int i = 0; i < k; i++) {
                        s.coll = C_ALLREDUCE, s.count = counts[i];
                        run_spec(&s);
                    }
                k = sweep_counts(c, (size_t) L.size, true, large, counts);
                for (int i = 0; i < k; i++) {
                    s.count = counts[i];
                    if (COLL_ON(C_REDUCE_SCATTER_BLOCK)) {
                        s.coll = C_REDUCE_SCATTER_BLOCK, s.oc = &oc;
                        run_spec(&s);
                    }
                    if (COLL_ON(C_ALLGATHER)) {
                        s.coll = C_ALLGATHER, s.oc = &data;
                        run_spec(&s);
                    }
                    if (COLL_ON(C_REDUCE_SCATTER)) {
                        int *rc = xmalloc(sizeof(int) * (size_t) c->size);
                        s.coll = C_REDUCE_SCATTER, s.oc = &oc, s.rcounts = rc;
                        /* every variant at every count, except single: at one count */
                        for (int v = 0; v < RS_VARIANTS; v++) {
                            if (v == RS_SINGLE && i != k / 2) continue;
                            if (counts[i] == 0 && v != RS_UNIFORM) continue; /* all zero */
                            rs_counts((rs_variant) v, counts[i], c->size, rc);
                            s.variant = rs_variant_names[v];
                            run_spec(&s);
                        }
                        s.variant = NULL;
                        free(rc);
                    }
                }
            }
        }
    }
}

/* --types: a comma-separated list of names (MPI_INT,MPI_DOUBLE_INT), else all. */
static bool type_selected(const char *name)
{
    if (!opt.types) return true;
    const size_t len = strlen(name);
    for (const char *p = opt.types; (p = strstr(p, name)); p += len)
        if ((p == opt.types || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return true;
    return false;
}

/* types: every predefined datatype with every op MPI allows on it (first communicator).
 * The holes of pair types are checked by family "holes". */
void family_types(void)
{
    g_check_holes = false;
    comm_info *c = &g_comms[0];
    const op_case data = predefined_op(K_DATA);
    for (size_t t = 0; t < ntypes; t++) {
        if (!type_selected(types[t].name)) continue;
        const layout L = predefined(&types[t]);
        const size_t count = themis_count(c, (size_t) L.size, false);
        const size_t count_b = themis_count(c, (size_t) L.size, true);
        FOR_INPLACE(ip) {
            for (int k = 0; k < K_COUNT; k++) {
                if (!(types[t].kinds & KB(k))) continue;
                const op_case oc = predefined_op((kind_t) k);
                if (COLL_ON(C_ALLREDUCE)) { /* a small count too: the previous module */
                    spec_t s = {.coll = C_ALLREDUCE, .c = c, .L = &L, .oc = &oc, .count = 3,
                                .inplace = ip};
                    run_spec(&s);
                }
                run_main_colls(c, &L, &oc, NULL, count, count_b, ip, RS_ZEROS, NULL);
            }
            if (COLL_ON(C_ALLGATHER)) {
                spec_t s = {.coll = C_ALLGATHER, .c = c, .L = &L, .oc = &data,
                            .count = count_b, .inplace = ip};
                run_spec(&s);
            }
        }
    }
    g_check_holes = true;
}

/* holes: the bytes of a receive buffer that are not in the datatype's type map (the
 * padding of MINLOC/MAXLOC pairs: after the int of MPI_DOUBLE_INT, between the short and
 * the int of MPI_SHORT_INT) keep their contents. (Derived types with holes: "derived".) */
void family_holes(void)
{
    static const char *const names[] = {"MPI_SHORT_INT", "MPI_DOUBLE_INT", "MPI_LONG_INT",
                                        "MPI_LONG_DOUBLE_INT"};
    const op_case data = predefined_op(K_DATA);
    for (int ci = 0; ci < g_ncomms; ci++) {
        comm_info *c = &g_comms[ci];
        for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
            const layout L = predefined(find_type(names[t]));
            FOR_INPLACE(ip) {
                for (kind_t k = K_MINLOC; k <= K_MAXLOC; k++) {
                    const op_case oc = predefined_op(k);
                    run_main_colls(c, &L, &oc, k == K_MINLOC ? &data : NULL,
                                   themis_count(c, (size_t) L.size, false),
                                   themis_count(c, (size_t) L.size, true), ip, RS_ZEROS, NULL);
                }
            }
        }
    }
}

/* derived: a contiguous and a vector type. Open MPI 4.1 accepts only user ops on
 * derived types; themis leaves reductions on derived types to the previous module,
 * and runs allgather itself when the receive type is contiguous. */
void family_derived(void)
{
    MPI_Datatype contig, vec, vec_resized;
    MPI_Type_contiguous(3, MPI_INT, &contig);
    const int contig_offs[] = {0, 1, 2};
    layout Lc, Lv;
    derived_int(&Lc, "contig(3,MPI_INT)", contig, 3, contig_offs, 3);
    /* ints at 0,1,3,4; extent 6 ints: holes inside and at the end */
    MPI_Type_vector(2, 2, 3, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 6 * (MPI_Aint) sizeof(int), &vec_resized);
    MPI_Type_free(&vec);
    const int vec_offs[] = {0, 1, 3, 4};
    derived_int(&Lv, "vector(2,2,3,MPI_INT)/6", vec_resized, 4, vec_offs, 6);
    const layout Li = predefined(find_type("MPI_INT"));
    MPI_Op plus1;
    MPI_Op_create(user_plus1, 1, &plus1);
    const op_case sum = {"user_plus1(commutative)", K_SUM, plus1, ref_plus1},
                  data = predefined_op(K_DATA);

    for (int ci = 0; ci < g_ncomms; ci++) {
        comm_info *c = &g_comms[ci];
        const layout *Ls[] = {&Lc, &Lv};
        FOR_INPLACE(ip) {
            for (int d = 0; d < 2; d++) {
                const size_t count = themis_count(c, (size_t) Ls[d]->size, false);
                const size_t count_b = themis_count(c, (size_t) Ls[d]->size, true);
                run_main_colls(c, Ls[d], &sum, &data, count, count_b, ip, RS_UNEVEN, NULL);
            }
            if (COLL_ON(C_ALLGATHER) && !ip) {
                /* same type signature, different types on each side */
                const size_t count_b = 3 * themis_count(c, (size_t) Lc.size, true);
                spec_t s = {.coll = C_ALLGATHER, .c = c, .L = &Li, .SL = &Lc, .oc = &data,
                            .count = count_b};
                run_spec(&s);
                s.L = &Lc, s.SL = &Li, s.count = count_b / 3;
                run_spec(&s);
                s.L = &Li, s.SL = &Lv, s.count = count_b / 3 * 4;
                run_spec(&s);
            }
        }
    }
    free_derived(&Lc);
    free_derived(&Lv);
    MPI_Op_free(&plus1);
}

/* userop: commutative (themis may run it) and non-commutative (previous module) user
 * ops, on predefined and derived types; MPI_Reduce with the non-commutative one. */
void family_userop(void)
{
    MPI_Op plus1, affine;
    MPI_Op_create(user_plus1, 1, &plus1);
    MPI_Op_create(user_affine, 0, &affine);
    const op_case oc_plus1 = {"user_plus1(commutative)", K_SUM, plus1, ref_plus1};
    const op_case oc_affine = {"user_affine(non-commutative)", K_DATA, affine, ref_affine};
    MPI_Datatype c3, c2;
    MPI_Type_contiguous(3, MPI_INT, &c3);
    MPI_Type_contiguous(2, MPI_INT, &c2);
    const int offs[] = {0, 1, 2};
    layout Lc3, Lc2;
    derived_int(&Lc3, "contig(3,MPI_INT)", c3, 3, offs, 3);
    derived_int(&Lc2, "contig(2,MPI_INT)", c2, 2, offs, 2);
    const layout Li = predefined(find_type("MPI_INT"));
    const layout L2i = predefined(find_type("MPI_2INT"));
    const struct { const layout *L; const op_case *oc; } cases[] = {
        {&Li, &oc_plus1}, {&Lc3, &oc_plus1}, {&L2i, &oc_affine}, {&Lc2, &oc_affine}};

    for (int ci = 0; ci < g_ncomms; ci++) {
        comm_info *c = &g_comms[ci];
        FOR_INPLACE(ip) {
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const layout *L = cases[i].L;
                const size_t count = themis_count(c, (size_t) L->size, false);
                const size_t count_b = themis_count(c, (size_t) L->size, true);
                run_main_colls(c, L, cases[i].oc, NULL, count, count_b, ip, RS_UNEVEN, NULL);
                spec_t s = {.coll = C_REDUCE, .c = c, .L = L, .oc = cases[i].oc, .count = count,
                            .root = c->size - 1, .inplace = ip};
                run_spec(&s);
                s.coll = C_SCAN;
                run_spec(&s);
            }
        }
    }
    free_derived(&Lc3);
    free_derived(&Lc2);
    MPI_Op_free(&plus1);
    MPI_Op_free(&affine);
}

/* The four collectives at a themis size, for the communicator families below. */
void run_four(comm_info *c, const char *type, kind_t k, int inplace)
{
    const layout L = predefined(find_type(type));
    const op_case oc = predefined_op(k), data = predefined_op(K_DATA);
    run_main_colls(c, &L, &oc, &data, themis_count(c, (size_t) L.size, false),
                   themis_count(c, (size_t) L.size, true), inplace, RS_UNEVEN, NULL);
}

/* --big: more than 2^31 bytes in one collective (2^28+2 doubles = 2^31+16 bytes). */
void family_big(void)
{
    comm_info *c = &g_world;
    const layout L = predefined(find_type("MPI_DOUBLE"));
    const op_case sum = predefined_op(K_SUM), data = predefined_op(K_DATA);
    const size_t total = ((size_t) 1 << 28) + 2;
    const size_t per_rank = ceil_div(total, (size_t) c->size);
    spec_t s = {.c = c, .L = &L, .oc = &sum, .inplace = opt.inplace_lo};
    const double t0 = MPI_Wtime();
    for (int coll = 0; coll < C_MAIN_COLLS; coll++) {
        if (!(opt.big_colls & (1u << coll))) continue;
        s.coll = coll;
        s.count = coll == C_ALLREDUCE ? total : per_rank;
        s.oc = coll == C_ALLGATHER ? &data : &sum;
        int *rc = NULL;
        if (coll == C_REDUCE_SCATTER) {
            rc = xmalloc(sizeof(int) * (size_t) c->size);
            rs_counts(RS_UNEVEN, per_rank, c->size, rc);
            s.rcounts = rc;
        }
        run_spec(&s);
        free(rc);
        if (c->rank == 0 && opt.verbose >= 1)
            printf("themis_mpi_check: big %s done at %.1f s\n", coll_names[coll], MPI_Wtime() - t0);
    }
}
