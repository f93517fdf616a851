/* themis-bench: what its source files share.  The options name the collectives and
 * implementations to compare (bench_options.c), a struct call is one collective call with
 * its buffers and known inputs (bench_data.c), a struct result one row of the report
 * (bench_report.c); themis_bench.c measures and ties them together.  One program, so the
 * names carry no prefix; only what crosses files is declared here. */
#ifndef THEMIS_BENCH_COMMON_H
#define THEMIS_BENCH_COMMON_H

#include <stddef.h>

#include <mpi.h>

enum coll { C_ALLREDUCE, C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, C_ALLGATHER, C_BCAST, C_REDUCE,
            C_COUNT };
/* The root of MPI_Bcast and MPI_Reduce. */
enum { BENCH_ROOT = 0 };
enum dtype { T_FLOAT, T_DOUBLE, T_INT, T_CHAR, T_COUNT };
enum nb_mode { NB_BLOCKING, NB_OVERLAP, NB_BUCKETS, NB_COUNT };

/* The names the command line takes and the reports print (bench_options.c). */
extern const char *const coll_names[C_COUNT];
extern const char *const type_names[T_COUNT];
extern const char *const mode_names[NB_COUNT];
extern const char *const stat_names[3]; /* indexed by options.stat */

#define MAX_IMPLS 8
#define MAX_DIMS 8
#define MAX_BUCKETS 256

struct impl_def {
    const char *name;
    const char *preference; /* ompi_comm_coll_preference */
    const char *policy;     /* themis_policy, or NULL */
    const char *transport;  /* themis_transport, or NULL (coll_themis_transport) */
    const char *node;       /* themis_node_transport, or NULL (coll_themis_node_transport) */
};

struct impl {
    const struct impl_def *def;
    MPI_Comm comm;
};

struct options {
    size_t min_bytes, max_bytes;
    int iters, warmup;
    int validate;
    enum dtype type;
    int colls[C_COUNT]; /* which collectives, in order */
    int n_colls;
    struct impl impls[MAX_IMPLS];
    int n_impls;
    double bw[MAX_DIMS]; /* bytes/s per dimension; 0 = unknown */
    int n_bw;
    int peers[MAX_DIMS];
    int n_peers;
    int measure_bw;
    const char *dims_spec;
    const char *csv, *json, *label;
    int stat; /* 0 avg, 1 median, 2 min: what bandwidths and speedups use */
    int device; /* --mem device: the collectives' buffers in CUDA device memory */
    int nb;     /* --nonblocking: a nb_mode */
    int buckets;          /* requests outstanding at once (1 when blocking) */
    double compute_factor; /* compute loop = this x t_pure; 0 = none */
    double test_every_us;  /* MPI_Testall period in the compute loop; 0 = never */
    int cold; /* --cold: every sample on a fresh communicator (its set-up timed with it) */
};

struct call {
    enum coll coll;
    enum dtype type;
    size_t count;      /* allreduce, bcast, reduce: elements; RS/AG: elements per rank (block) */
    int *rcounts;      /* reduce_scatter: count per rank */
    void *sbuf, *rbuf; /* host: the buffers, or with --mem device their host images */
    void *dev_sbuf, *dev_rbuf; /* --mem device: what MPI gets; NULL otherwise */
};

struct result {
    enum coll coll;
    size_t bytes, count;
    double avg, med, min, max; /* seconds, over iterations of the max over ranks */
    double t;                  /* the statistic --stat picks: bandwidths, speedups */
    double algbw, busbw;  /* bytes/s */
    double ideal;         /* seconds; 0 = unknown */
    double vs_tuned, vs_best; /* 0 = no reference */
    long errors;          /* -1 = not validated */
    /* The nonblocking compute phase, seconds (overlap in %); -1 = not run. */
    double compute, total, overlap;
};

/* This process in MPI_COMM_WORLD, set by main() right after MPI_Init (themis_bench.c). */
extern int world_rank, world_size;

/* bench_options.c */

/* Rank 0 prints the error, then every rank finalizes and exits with status 2. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* This rank prints the error and aborts the job (status 3). */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Fills *o from the command line; dies on a bad option (exits 0 after -h). */
void parse_options(int argc, char **argv, struct options *o);

/* bench_data.c */

/* n calls with buffers for every collective up to o->max_bytes; fails out of memory. */
struct call *alloc_calls(const struct options *o, int n);
/* Frees what alloc_calls() returned. */
void free_calls(struct call *calls, int n);
/* Sets n_calls calls up for c at size S = bytes; returns the bytes one call moves. */
size_t setup_calls(const struct options *o, enum coll c, size_t bytes, struct call *calls,
                   int n_calls, int *rcounts);
/* Runs the blocking call, or starts its nonblocking form when req is given. */
int run_call(const struct call *c, MPI_Comm comm, MPI_Request *req);
/* Writes this rank's inputs for sample `seed` and poisons the output. */
void prepare(const struct call *c, int seed);
/* Number of wrong elements in this rank's result of sample `seed`. */
size_t check(const struct call *c, int seed);
/* --mem device: loads the CUDA driver and picks this rank's GPU; dies without one. */
void device_init(void);
/* --mem device: slowest rank's mean time of one D2H + H2D copy pair of `bytes`. */
double copy_pair_seconds(const struct call *c, size_t bytes, int iters, MPI_Comm ctl);

/* bench_report.c */

/* Reads coll_themis_* through MPI_T, and whether coll/themis is loaded at all. */
void read_themis_settings(void);
/* Prints the "# coll/themis" line: whether it is loaded, and its settings if so. */
void print_themis_settings(void);
/* busbw / algbw of collective c on n ranks, as in nccl-tests. */
double bus_factor(enum coll c, int n);
/* Lower bound on the time of c over `bytes` from the dimensions' bandwidths; 0: unknown. */
double ideal_time(const struct options *o, enum coll c, size_t bytes);
/* Position of the implementation called `name` in o->impls, or -1. */
int impl_index(const struct options *o, const char *name);
/* Prints the header of collective c's table (rank 0 calls it). */
void print_header(const struct options *o, enum coll c);
/* Prints what the nonblocking rows time, given the compute loop's steps per second. */
void print_nonblocking_notes(const struct options *o, double spin_rate);
/* Sets the speedups of one size's results and reports them (rank 0 prints and writes). */
void report(const struct options *o, struct result *res);
/* Rank 0 opens --csv and --json and writes their headers; dies when it cannot. */
void open_outputs(const struct options *o, double measured_bw);
/* Ends and closes the --csv and --json files. */
void close_outputs(void);

#endif /* THEMIS_BENCH_COMMON_H */
