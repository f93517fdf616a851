/* mpi_check.h -- what the files of themis-mpi-check (themis_mpi_check.c and
 * mpi_check_*.c) share: the options and global state, the types a case is made of, and
 * the functions one file calls in another. See themis_mpi_check.c for what the program
 * checks and how. */
#pragma once

#include <mpi.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ====================================================================== options */

/* The collectives checked: the four themis takes first (--collectives, --big), then
 * those it does not take, checked with the same machinery. Names: coll_names. */
enum {
    C_ALLREDUCE,
    C_REDUCE_SCATTER,
    C_REDUCE_SCATTER_BLOCK,
    C_ALLGATHER,
    C_MAIN_COLLS,
    C_REDUCE = C_MAIN_COLLS,
    C_IALLREDUCE,
    C_SCAN,
    C_BCAST
};
extern const char *const coll_names[];

typedef struct {
    unsigned families, colls, comms, big_colls;
    int inplace_lo, inplace_hi; /* in-place modes run: lo..hi (0 = not, 1 = MPI_IN_PLACE) */
    size_t sizes[64];
    int nsizes;
    size_t chunks, min_bytes;
    int large, many, cycles, big, max_report, verbose;
    int nonblocking;   /* the four collectives as MPI_I...: started, then MPI_Test polled */
    int free_early;    /* persistent: the op and datatypes freed right after the init calls */
    unsigned info_via; /* 1: MPI_Comm_dup_with_info, 2: MPI_Comm_set_info, 4: set_info late */
    const char *info_key, *info_value; /* --info-policy / --info-transport */
    const char *types;                 /* NULL = every type of the table */
    uint64_t seed;
} options_t;
extern options_t opt;

/* ====================================================================== bookkeeping */

extern int g_rank, g_size;     /* in MPI_COMM_WORLD */
extern long g_cases, g_failed; /* cases run; cases that failed on this rank */
extern bool g_check_holes;     /* check the holes of receive datatypes (see family_holes) */

/* One case: what it is (for messages) and how many problems it found. */
typedef struct {
    char what[320];
    int bad;
} check_t;

/* Starts case `ck`, described by the printf-style arguments. */
void check_start(check_t *ck, const char *fmt, ...);
/* Records a problem of `ck`; prints a FAIL line while under --max-report. */
void check_fail(check_t *ck, const char *fmt, ...);
/* Records a problem of `ck` when the MPI call `call` returned rc != MPI_SUCCESS. */
void check_rc(check_t *ck, int rc, const char *call);
/* Ends case `ck`: counts it (and its failure). */
void check_end(check_t *ck);
/* Prints a fatal error and aborts every rank. */
void die(const char *fmt, ...);
/* malloc that dies when out of memory (and gives a pointer for 0 bytes). */
void *xmalloc(size_t bytes);

/* ====================================================================== input values */

/* splitmix64's finalizer: the hash every input value and seed comes from. */
static inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* How a case generates its inputs (and, for predefined ops, which op it applies). */
typedef enum {
    K_SUM,
    K_PROD,
    K_MIN,
    K_MAX,
    K_LAND,
    K_LOR,
    K_LXOR,
    K_BAND,
    K_BOR,
    K_BXOR,
    K_MINLOC,
    K_MAXLOC,
    K_SUMFRAC, /* MPI_SUM over fractional values: compared with a tolerance */
    K_DATA,    /* any valid values (allgather, user ops, overflow tests) */
    K_COUNT
} kind_t;
extern const char *const kind_names[]; /* K_COUNT names, for messages */
#define KB(k) (1u << (k))              /* a kind's bit in type_desc.kinds */

/* The predefined op of kind k (MPI_OP_NULL for K_DATA). */
MPI_Op kind_op(kind_t k);

/* ====================================================================== datatypes */

/* One predefined datatype: how to generate its inputs, reduce them (acc = acc op in,
 * acc holding the lower ranks) and compare results. Arrays are of the C type, whose
 * sizeof equals the MPI extent (checked at start-up). */
typedef struct type_desc {
    const char *name;
    MPI_Datatype dt;
    size_t size;
    unsigned kinds;
    void (*gen)(void *buf, size_t first, size_t n, int rank, int nranks, kind_t k, uint64_t seed);
    void (*reduce)(void *acc, const void *in, size_t n, kind_t k);
    /* Number of mismatches in [0, n); the first one's index and values go to *first/text. */
    size_t (*compare)(const void *got, const void *exp, size_t n, kind_t k, int nranks,
                      size_t *first, char *text, size_t len);
} type_desc;

extern const type_desc types[]; /* every predefined datatype checked */
extern const size_t ntypes;     /* entries of types[] */

/* The entry of types[] named `name` (an MPI name such as "MPI_INT"); dies if none. */
const type_desc *find_type(const char *name);

/* ====================================================================== layouts */

/* A datatype as the checks see it: `nblk` elements of a predefined base type per
 * element, at `offs` (in base elements), `ext` base elements apart. Predefined types
 * are {1, {0}, 1}. Results are checked "packed": the base elements in order. */
typedef struct layout {
    char name[48];
    MPI_Datatype dt;
    const type_desc *base;
    int nblk, offs[8], ext;
    MPI_Aint extent, true_lb, true_extent; /* from MPI */
    int size;                              /* MPI_Type_size */
    bool holes;                            /* bytes inside the extent outside the type map */
    bool owned;                            /* a derived type this program frees */
} layout;

/* The layout of predefined datatype t. */
layout predefined(const type_desc *t);
/* Commits derived type dt over MPI_INT (its ints at offs, ext ints apart) into *L. */
void derived_int(layout *L, const char *name, MPI_Datatype dt, int nblk, const int *offs, int ext);
/* Frees a layout made by derived_int. */
void free_derived(layout *L);
/* Whether L's base elements lie packed, without holes. */
bool layout_is_packed(const layout *L);
/* Bytes a buffer of `count` elements of L needs (its true extent). */
size_t span(const layout *L, size_t count);
/* Copies n packed elements to typed elements [first, first+n). */
void to_typed(const layout *L, unsigned char *typed, const unsigned char *packed, size_t first,
              size_t n);
/* Copies typed elements [first, first+n) to n packed elements. */
void from_typed(const layout *L, unsigned char *packed, const unsigned char *typed, size_t first,
                size_t n);

/* ====================================================================== ops */

/* Reference of a user op on packed ints: acc = acc op in (acc: the lower ranks). */
typedef void (*ref_fn)(void *acc, const void *in, size_t bytes);

typedef struct op_case {
    const char *name;
    kind_t kind; /* input generation (and the predefined op) */
    MPI_Op op;
    ref_fn ref; /* user ops: the reference; NULL: the base type's reduce for `kind` */
} op_case;

/* The case of predefined op kind k (K_DATA: for allgather, no op). */
op_case predefined_op(kind_t k);
/* User op, commutative: a op b = a + b + 1 on the ints of any layout of this program. */
void user_plus1(void *in, void *inout, int *len, MPI_Datatype *dt);
/* The reference of user_plus1 on packed ints. */
void ref_plus1(void *acc, const void *in, size_t bytes);
/* User op, non-commutative: composition of affine maps over pairs of packed ints. */
void user_affine(void *in, void *inout, int *len, MPI_Datatype *dt);
/* The reference of user_affine on packed ints. */
void ref_affine(void *acc, const void *in, size_t bytes);

/* ====================================================================== communicators */

typedef struct {
    MPI_Comm comm;
    char name[MPI_MAX_OBJECT_NAME];
    int rank, size;
    uint64_t seq; /* cases run on it: the same on all its ranks */
    bool warm;    /* a blocking call has run on it (themis sets communicators up there) */
} comm_info;

#define NCOMMS_MAX 8
extern comm_info g_comms[NCOMMS_MAX]; /* --comms: the communicators most families use */
extern int g_ncomms;
extern comm_info g_world; /* MPI_COMM_WORLD, always */

/* Inputs of the next case on c: the same on all ranks of c. */
uint64_t next_seed(comm_info *c);
/* Describes comm (named `name` unless NULL) in *c; errors return from then on. */
void comm_info_init(comm_info *c, MPI_Comm comm, const char *name);
/* Frees c's communicator unless it is MPI_COMM_WORLD or MPI_COMM_SELF. */
void comm_info_free(comm_info *c);

/* ====================================================================== the case runner */

/* One collective call and its check. Counts are in elements of L. */
typedef struct {
    int coll;
    comm_info *c;
    const layout *L;    /* datatype (receive datatype for allgather) */
    const layout *SL;   /* allgather: a different send datatype, else NULL */
    const op_case *oc;  /* reductions */
    size_t count;       /* allreduce/reduce/scan: count; rsb/allgather: per rank */
    const int *rcounts; /* reduce_scatter */
    int root;           /* reduce, bcast */
    int form;           /* reduce, bcast: FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT */
    int inplace;
    const char *variant; /* extra text for messages */
} spec_t;

/* How run_spec calls a rooted collective: MPI_Bcast; MPI_Ibcast polled with MPI_Test
 * (after warm_up); MPI(X)_Bcast_init, started once, waited for and freed. */
enum { FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT };

/* Runs one checked blocking allreduce on c, once: themis sets c up in it. */
void warm_up(comm_info *c);
/* Runs case s and checks its result, buffers and guard bytes. */
void run_spec(const spec_t *s);

/* ====================================================================== counts */

/* a / b, rounded up. */
static inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* A count of type_size elements that runs through themis on c (per rank: for
 * reduce_scatter_block and allgather). */
size_t themis_count(comm_info *c, size_t type_size, bool per_rank);
/* The counts of the size sweep into out[] (at most 64); returns how many. */
int sweep_counts(comm_info *c, size_t type_size, bool per_rank, bool large, size_t *out);

/* Reduce_scatter recvcounts: see rs_counts. Names: rs_variant_names. */
typedef enum { RS_UNIFORM, RS_UNEVEN, RS_ZEROS, RS_SINGLE, RS_VARIANTS } rs_variant;
extern const char *const rs_variant_names[];

/* Reduce_scatter recvcounts of variant v over n ranks, averaging at least avg, into rc. */
void rs_counts(rs_variant v, size_t avg, int n, int *rc);

/* ====================================================================== families */

/* The four collectives at a themis size on c: datatype `type`, op k. */
void run_four(comm_info *c, const char *type, kind_t k, int inplace);

/* Loops and tests over the command line's choices. */
#define FOR_INPLACE(ip) for (int ip = opt.inplace_lo; ip <= opt.inplace_hi; ip++)
#define COLL_ON(coll) (opt.colls & (1u << (coll)))

/* The families of cases (--tests, --info-*, --big): over data in mpi_check_families.c, over
 * communicators in mpi_check_comms.c: */
void family_sizes(void);   /* a few datatypes over the whole size sweep */
void family_types(void);   /* every predefined datatype with every op it allows */
void family_derived(void); /* derived datatypes: contiguous and vector */
void family_userop(void);  /* commutative and non-commutative user ops */
void family_self(void);    /* MPI_COMM_SELF */
void family_others(void);  /* collectives themis does not take */
void family_many(void);    /* many communicators alive at once */
void family_cycles(void);  /* communicators created, used and freed in turn */
void family_inherit(void); /* a later communicator starts with the crossover's decisions */
void family_cut(void);     /* communicators freed, and MPI_Finalize reached, mid-trial */
void family_quirks(void);  /* Open MPI's own deviations: as without themis */
void family_holes(void);   /* the holes of MINLOC/MAXLOC pair types */
void family_info(void);    /* --info-policy / --info-transport */
void family_big(void);     /* --big: more than 2^31 bytes in one call */
void family_rooted(void);  /* MPI_Bcast and MPI_Reduce, every form, several roots */
/* and in mpi_check_nonblocking.c: */
void family_nonblocking(void); /* many nonblocking calls in flight */
void family_persistent(void);  /* persistent requests (MPIX_*_init) */
void family_nbfail(void); /* a failed nonblocking call's error (THEMIS_TEST_FAIL_NONBLOCKING) */
