/* mpi_check_rooted.c -- the family "rooted" of themis-mpi-check: MPI_Bcast and MPI_Reduce
 * (themis runs both as a description of phases: scatter then all-gather, reduce-scatter
 * then gather), every form, from several roots, over the size sweep. */
#include "mpi_check.h"

#include "../common/persistent_coll.h" /* HAVE_PERSISTENT_COLL */

#include <stdio.h>

/* Runs `s` (its coll, type, op and count set) from the first, a middle and the last rank
 * of its communicator, in the forms `forms` (a bit per FORM_*). */
static void run_from_roots(spec_t s, unsigned forms) {
    static const char *const form_names[] = {"blocking", "nonblocking", "persistent"};
    const int n = s.c->size, roots[] = {0, n / 2, n - 1};
    char variant[64];
    for (int r = 0; r < 3; r++) {
        if (r > 0 && roots[r] == roots[r - 1]) continue;
        for (int f = FORM_BLOCKING; f <= FORM_PERSISTENT; f++) {
            if (!(forms & (1u << f))) continue;
            if (f == FORM_PERSISTENT && !HAVE_PERSISTENT_COLL) continue;
            snprintf(variant, sizeof variant, "root=%d %s", roots[r], form_names[f]);
            s.root = roots[r], s.form = f, s.variant = variant;
            run_spec(&s);
        }
    }
}

/* rooted: on every communicator, MPI_Reduce of MPI_INT and MPI_DOUBLE (MPI_SUM) and of
 * MPI_DOUBLE_INT (MPI_MINLOC, a pair type with a hole: in a temporary buffer), in place at
 * the root too; MPI_Bcast of MPI_INT, MPI_DOUBLE_INT and a vector with holes (packed). Every
 * count of the size sweep blocking, every third nonblocking and every third persistent; on
 * the first communicator also 2M+3 elements (with --large). */
void family_rooted(void) {
    static const struct {
        const char *type;
        kind_t kind;
    } reductions[] = {{"MPI_INT", K_SUM}, {"MPI_DOUBLE", K_SUM}, {"MPI_DOUBLE_INT", K_MINLOC}};
    MPI_Datatype vec, vec_resized;
    MPI_Type_vector(2, 2, 3, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 6 * (MPI_Aint)sizeof(int), &vec_resized);
    MPI_Type_free(&vec);
    const int vec_offs[] = {0, 1, 3, 4};
    layout Lv;
    derived_int(&Lv, "vector(2,2,3,MPI_INT)/6", vec_resized, 4, vec_offs, 6);
    const layout bcast_layouts[] = {predefined(find_type("MPI_INT")),
                                    predefined(find_type("MPI_DOUBLE_INT")), Lv};
    const op_case data = predefined_op(K_DATA);
    const size_t two_m = ((size_t)2 << 20) + 3;
    size_t counts[65];

    for (int ci = 0; ci < g_ncomms; ci++) {
        comm_info *c = &g_comms[ci];
        for (size_t t = 0; t < sizeof reductions / sizeof reductions[0]; t++) {
            const layout L = predefined(find_type(reductions[t].type));
            const op_case oc = predefined_op(reductions[t].kind);
            int k = sweep_counts(c, (size_t)L.size, false, opt.large && ci == 0, counts);
            if (opt.large && ci == 0 && t == 0) counts[k++] = two_m;
            FOR_INPLACE(ip) {
                for (int i = 0; i < k; i++) {
                    spec_t s = {.coll = C_REDUCE,
                                .c = c,
                                .L = &L,
                                .oc = &oc,
                                .count = counts[i],
                                .inplace = ip};
                    run_from_roots(s, 1u << FORM_BLOCKING | (i % 3 == 0) << FORM_NONBLOCKING |
                                          (i % 3 == 1) << FORM_PERSISTENT);
                }
            }
        }
        for (size_t t = 0; t < sizeof bcast_layouts / sizeof bcast_layouts[0]; t++) {
            const layout *L = &bcast_layouts[t];
            int k = sweep_counts(c, (size_t)L->size, false, opt.large && ci == 0, counts);
            if (opt.large && ci == 0 && t == 0) counts[k++] = two_m;
            for (int i = 0; i < k; i++) {
                spec_t s = {.coll = C_BCAST, .c = c, .L = L, .oc = &data, .count = counts[i]};
                run_from_roots(s, 1u << FORM_BLOCKING | (i % 3 == 0) << FORM_NONBLOCKING |
                                      (i % 3 == 1) << FORM_PERSISTENT);
            }
        }
    }
    free_derived(&Lv);
}
