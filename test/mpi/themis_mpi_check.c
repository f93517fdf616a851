/* themis_mpi_check.c -- self-checking MPI test of coll/themis (and of whatever module
 * runs the collectives: the program uses only the public MPI API).
 *
 * Every case runs one collective on one communicator and checks the result against a
 * value the program computes itself from the inputs. Inputs are a hash of (case seed,
 * rank, element index), so every rank can generate every other rank's input and fold
 * them in rank order: the reference never depends on MPI.
 *
 *   integers  exact (values chosen so that SUM and PROD cannot overflow)
 *   floats    exact when the inputs are small integers / powers of two (SUM, PROD, MIN,
 *             MAX); for the "MPI_SUM(frac)" cases (values in [-1,1)) the tolerance is
 *             |got - expected| <= 2 * N^2 * eps * max|x|  (N ranks, eps of the type):
 *             any two summation orders of N terms differ by at most that much.
 *   complex   exact (small Gaussian integers)
 *   MINLOC / MAXLOC: value and index exact (ties resolved to the lowest index).
 *   user ops  the reference applies its own implementation of the op in rank order
 *             (the ordered definition), so a non-commutative op checks the order.
 *
 * Besides the values, every case checks that the send buffer was not modified, that
 * nothing was written in the 64 bytes before and after the receive buffer's true
 * extent, and, for datatypes with holes, that the holes of the receive buffer kept
 * their (rank-dependent) contents.
 *
 * Families of cases (--tests): sizes, types, derived, userop, self, others, many,
 * cycles, quirks, holes; plus --info-policy and --big. See usage().
 *
 * Output: one "themis_mpi_check: FAIL ..." line per problem (bounded by --max-report),
 * and from rank 0 a final line "themis_mpi_check: N passed, M failed" (N cases, M the
 * largest number of failed cases seen by one rank, after an MPI_Allreduce). The exit
 * status is 1 when M > 0, 2 on bad options.
 *
 * This file holds the options, the global state and main; mpi_check.h declares what the
 * other files share: mpi_check_values.c (input values, datatypes, layouts, ops),
 * mpi_check_runner.c (bookkeeping, guarded buffers, communicators, the case runner,
 * counts),
 * mpi_check_families.c (the blocking families) and mpi_check_nonblocking.c (the
 * nonblocking and persistent families).
 */
#include "mpi_check.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== options */

const char *const coll_names[] = {"allreduce", "reduce_scatter", "reduce_scatter_block",
                                  "allgather", "reduce",         "iallreduce",
                                  "scan",      "bcast"};

enum {
    F_SIZES,
    F_TYPES,
    F_DERIVED,
    F_USEROP,
    F_SELF,
    F_OTHERS,
    F_MANY,
    F_CYCLES,
    F_QUIRKS,
    F_HOLES,
    F_NONBLOCKING,
    F_PERSISTENT,
    F_NBFAIL,
    F_INHERIT,
    F_CUT,
    F_ROOTED,
    F_COUNT
};
static const char *const family_names[] = {
    "sizes",  "types", "derived",     "userop",     "self",   "others",  "many",  "cycles",
    "quirks", "holes", "nonblocking", "persistent", "nbfail", "inherit", "cut",    "rooted"};

enum { CM_WORLD, CM_DUP, CM_REV, CM_HALF, CM_COUNT };
static const char *const comm_kinds[] = {"world", "dup", "rev", "half"};

options_t opt;

/* ====================================================================== global state */

/* Described where mpi_check.h declares them. */
int g_rank, g_size;
long g_cases, g_failed;
bool g_check_holes = true;
comm_info g_comms[NCOMMS_MAX];
int g_ncomms;
comm_info g_world;

/* ====================================================================== main */

static void usage(void) {
    printf("usage: themis_mpi_check [options]\n"
           "  --tests LIST        families: sizes,types,derived,userop,self,others,many,cycles,\n"
           "                      quirks,holes,nonblocking,persistent,rooted, all (default) or\n"
           "                      none;\n"
           "                      nbfail (not in all: with THEMIS_TEST_FAIL_NONBLOCKING=1),\n"
           "                      inherit (not in all: a duplicate starts with the crossover's\n"
           "                      decisions; check_crossover.sh reads its stats)\n"
           "                      cut (not in all: communicators freed, and MPI_Finalize\n"
           "                      reached, in every state of a crossover trial)\n"
           "  --collectives LIST  allreduce,reduce_scatter,reduce_scatter_block,allgather or all\n"
           "  --comms LIST        world,dup,rev,half or all (default all): MPI_COMM_WORLD, a dup\n"
           "                      (chk_dup), a split with ranks reversed (chk_rev), halves split\n"
           "                      by rank parity (chk_half)\n"
           "  --in-place MODE     no | yes | both (default no)\n"
           "  --sizes LIST        explicit counts for the sizes family (default: computed)\n"
           "  --types LIST        datatypes of the types family, e.g. MPI_INT,MPI_SHORT_INT "
           "(default all)\n"
           "  --chunks N          coll_themis_chunks in force "
           "(default: $OMPI_MCA_coll_themis_chunks or 64)\n"
           "  --min-bytes N       coll_themis_min_bytes in force "
           "(default: $OMPI_MCA_coll_themis_min_bytes or 65536)\n"
           "  --no-large          leave out the ~1M-element counts\n"
           "  --nonblocking       the four collectives of every family as MPI_Iallreduce, ...,\n"
           "                      completed by MPI_Test polling (after one blocking call per\n"
           "                      communicator: themis sets communicators up in blocking calls)\n"
           "  --free-early        persistent: make the requests of full-size communicators\n"
           "                      with a user op and contig(3,MPI_INT), freed right after the\n"
           "                      init calls (only where themis runs them: Open MPI 4.1's own\n"
           "                      persistent collectives need them until the request is freed)\n"
           "  --many N            communicators alive at once (default 20)\n"
           "  --cycles N          create/use/free cycles (default 50)\n"
           "  --info-policy P     also give MPI_COMM_WORLD dups the MPI_Info key themis_policy=P\n"
           "                      and use them: chk_info_P (MPI_Comm_dup_with_info) and\n"
           "                      chk_setinfo_P (MPI_Comm_set_info)\n"
           "  --info-transport T  the same with the key themis_transport=T (chk_info_T, ...)\n"
           "  --info-node-transport T  the same with the key themis_node_transport=T\n"
           "  --info-via LIST     dup,set or both (default): which of the two; late: a plain\n"
           "                      dup used (chk_late_before), then given the key by\n"
           "                      MPI_Comm_set_info and used again (chk_late_P)\n"
           "  --big[=LIST]        only the > 2^31-byte test, for LIST collectives "
           "(default allreduce)\n"
           "  --seed N  --max-report N  --verbose N (0 quiet, 1 default, 2 every case)\n");
}

static unsigned parse_list(const char *s, const char *const *names, int n, const char *what,
                           bool *ok) {
    if (strcmp(s, "all") == 0) return (1u << n) - 1;
    if (strcmp(s, "none") == 0) return 0;
    unsigned mask = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < n && strcmp(tok, names[i])) i++;
        if (i == n) {
            if (g_rank == 0) fprintf(stderr, "themis_mpi_check: unknown %s \"%s\"\n", what, tok);
            *ok = false;
        } else {
            mask |= 1u << i;
        }
    }
    free(copy);
    return mask;
}

static size_t env_size(const char *name, size_t fallback) {
    const char *v = getenv(name);
    return v && *v ? (size_t)strtoull(v, NULL, 0) : fallback;
}

static bool parse_options(int argc, char **argv) {
    /* nbfail, inherit and cut: asked for only */
    opt.families =
        ((1u << F_COUNT) - 1) & ~(1u << F_NBFAIL) & ~(1u << F_INHERIT) & ~(1u << F_CUT);
    opt.colls = (1u << C_MAIN_COLLS) - 1;
    opt.comms = (1u << CM_COUNT) - 1;
    opt.big_colls = 1u << C_ALLREDUCE;
    opt.info_via = 3;
    opt.chunks = env_size("OMPI_MCA_coll_themis_chunks", 64);
    opt.min_bytes = env_size("OMPI_MCA_coll_themis_min_bytes", 65536);
    opt.large = 1, opt.many = 20, opt.cycles = 50, opt.max_report = 30, opt.verbose = 1;
    opt.seed = 20240229;
    enum {
        O_TESTS = 256,
        O_COLLS,
        O_COMMS,
        O_INPLACE,
        O_SIZES,
        O_CHUNKS,
        O_MINB,
        O_NOLARGE,
        O_MANY,
        O_CYCLES,
        O_INFO,
        O_BIG,
        O_SEED,
        O_MAXREP,
        O_VERBOSE,
        O_HELP,
        O_TYPES,
        O_INFOVIA,
        O_INFOTRANSPORT,
        O_INFONODE,
        O_NONBLOCKING,
        O_FREEEARLY
    };
    static const struct option lo[] = {{"tests", 1, 0, O_TESTS},
                                       {"collectives", 1, 0, O_COLLS},
                                       {"comms", 1, 0, O_COMMS},
                                       {"in-place", 1, 0, O_INPLACE},
                                       {"sizes", 1, 0, O_SIZES},
                                       {"chunks", 1, 0, O_CHUNKS},
                                       {"min-bytes", 1, 0, O_MINB},
                                       {"no-large", 0, 0, O_NOLARGE},
                                       {"many", 1, 0, O_MANY},
                                       {"cycles", 1, 0, O_CYCLES},
                                       {"info-policy", 1, 0, O_INFO},
                                       {"big", 2, 0, O_BIG},
                                       {"seed", 1, 0, O_SEED},
                                       {"max-report", 1, 0, O_MAXREP},
                                       {"verbose", 1, 0, O_VERBOSE},
                                       {"help", 0, 0, O_HELP},
                                       {"types", 1, 0, O_TYPES},
                                       {"info-via", 1, 0, O_INFOVIA},
                                       {"info-transport", 1, 0, O_INFOTRANSPORT},
                                       {"info-node-transport", 1, 0, O_INFONODE},
                                       {"nonblocking", 0, 0, O_NONBLOCKING},
                                       {"free-early", 0, 0, O_FREEEARLY},
                                       {0, 0, 0, 0}};
    bool ok = true;
    int o;
    opterr = g_rank == 0;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (o) {
        case O_TESTS:
            opt.families = parse_list(optarg, family_names, F_COUNT, "test family", &ok);
            if (strcmp(optarg, "all") == 0) opt.families &= ~(1u << F_NBFAIL) & ~(1u << F_INHERIT);
            break;
        case O_COLLS:
            opt.colls = parse_list(optarg, coll_names, C_MAIN_COLLS, "collective", &ok);
            break;
        case O_COMMS:
            opt.comms = parse_list(optarg, comm_kinds, CM_COUNT, "communicator", &ok);
            break;
        case O_INPLACE:
            if (!strcmp(optarg, "no"))
                opt.inplace_lo = opt.inplace_hi = 0;
            else if (!strcmp(optarg, "yes"))
                opt.inplace_lo = opt.inplace_hi = 1;
            else if (!strcmp(optarg, "both"))
                opt.inplace_lo = 0, opt.inplace_hi = 1;
            else
                ok = false;
            break;
        case O_SIZES: {
            char *copy = strdup(optarg), *save = NULL;
            opt.nsizes = 0;
            for (char *t = strtok_r(copy, ",", &save); t && opt.nsizes < 64;
                 t = strtok_r(NULL, ",", &save))
                opt.sizes[opt.nsizes++] = (size_t)strtoull(t, NULL, 0);
            free(copy);
            break;
        }
        case O_CHUNKS: opt.chunks = (size_t)strtoull(optarg, NULL, 0); break;
        case O_MINB: opt.min_bytes = (size_t)strtoull(optarg, NULL, 0); break;
        case O_NOLARGE: opt.large = 0; break;
        case O_NONBLOCKING: opt.nonblocking = 1; break;
        case O_FREEEARLY: opt.free_early = 1; break;
        case O_MANY: opt.many = atoi(optarg); break;
        case O_CYCLES: opt.cycles = atoi(optarg); break;
        case O_INFO: opt.info_key = "themis_policy", opt.info_value = optarg; break;
        case O_INFOTRANSPORT: opt.info_key = "themis_transport", opt.info_value = optarg; break;
        case O_INFONODE: opt.info_key = "themis_node_transport", opt.info_value = optarg; break;
        case O_TYPES: opt.types = optarg; break;
        case O_INFOVIA: {
            static const char *const via[] = {"dup", "set", "late"};
            opt.info_via =
                strcmp(optarg, "both") ? parse_list(optarg, via, 3, "--info-via", &ok) : 3;
            break;
        }
        case O_BIG:
            opt.big = 1;
            if (optarg)
                opt.big_colls = parse_list(optarg, coll_names, C_MAIN_COLLS, "collective", &ok);
            break;
        case O_SEED: opt.seed = strtoull(optarg, NULL, 0); break;
        case O_MAXREP: opt.max_report = atoi(optarg); break;
        case O_VERBOSE: opt.verbose = atoi(optarg); break;
        case O_HELP:
            if (g_rank == 0) usage();
            return false;
        default: ok = false;
        }
    }
    if (optind < argc) ok = false;
    if (opt.chunks < 1) opt.chunks = 1;
    if (!ok && g_rank == 0) usage();
    return ok;
}

static void make_comms(void) {
    comm_info_init(&g_world, MPI_COMM_WORLD, NULL);
    g_ncomms = 0;
    if (opt.comms & (1u << CM_WORLD)) g_comms[g_ncomms++] = g_world;
    MPI_Comm d;
    if (opt.comms & (1u << CM_DUP)) {
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        comm_info_init(&g_comms[g_ncomms++], d, "chk_dup");
    }
    if (opt.comms & (1u << CM_REV)) {
        MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - 1 - g_rank, &d);
        comm_info_init(&g_comms[g_ncomms++], d, "chk_rev");
    }
    if (opt.comms & (1u << CM_HALF)) {
        MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &d);
        comm_info_init(&g_comms[g_ncomms++], d, "chk_half");
    }
    if (g_ncomms == 0) g_comms[g_ncomms++] = g_world;
}

static void sanity_check_types(void) {
    for (size_t t = 0; t < ntypes; t++) {
        MPI_Aint lb, ext;
        MPI_Type_get_extent(types[t].dt, &lb, &ext);
        if ((size_t)ext != types[t].size)
            die("%s: MPI extent %ld != sizeof %zu", types[t].name, (long)ext, types[t].size);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!parse_options(argc, argv)) {
        MPI_Finalize();
        return 2;
    }
    sanity_check_types();
    make_comms();
    if (g_rank == 0 && opt.verbose >= 1)
        printf("themis_mpi_check: %d ranks, chunks %zu, min_bytes %zu, in-place %s\n", g_size,
               opt.chunks, opt.min_bytes,
               opt.inplace_lo == opt.inplace_hi ? (opt.inplace_lo ? "yes" : "no") : "both");

    static void (*const families[F_COUNT])(void) = {
        family_sizes,       family_types,      family_derived, family_userop,  family_self,
        family_others,      family_many,       family_cycles,  family_quirks,  family_holes,
        family_nonblocking, family_persistent, family_nbfail,  family_inherit, family_cut,
        family_rooted};
    const double t_start = MPI_Wtime();
    if (opt.big) {
        family_big();
    } else {
        for (int f = 0; f < F_COUNT; f++) {
            if (!(opt.families & (1u << f))) continue;
            const double t0 = MPI_Wtime();
            const long before = g_cases;
            families[f]();
            if (g_rank == 0 && opt.verbose >= 1)
                printf("themis_mpi_check: family %s: %ld cases, %.2f s\n", family_names[f],
                       g_cases - before, MPI_Wtime() - t0);
        }
        if (opt.info_key) family_info();
    }
    for (int i = g_ncomms - 1; i >= 0; i--) comm_info_free(&g_comms[i]);

    /* Small count: fine whatever module runs it. */
    long counts[2] = {g_failed, g_cases}, all[2] = {0, 0};
    const int rc = MPI_Allreduce(counts, all, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) all[0] = all[0] > 1 ? all[0] : 1;
    if (g_rank == 0)
        printf("themis_mpi_check: %ld passed, %ld failed (%.1f s)\n", all[1] - all[0], all[0],
               MPI_Wtime() - t_start);
    MPI_Finalize();
    return all[0] ? 1 : 0;
}
