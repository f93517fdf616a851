/* coll_themis.h: types shared by the component's C glue and its C++ entry points.
 *
 * coll/themis takes the MPI_Allreduce, MPI_Reduce_scatter, MPI_Reduce_scatter_block,
 * MPI_Allgather, MPI_Bcast and MPI_Reduce slots (THEMIS_COLLECTIVES: each with its
 * nonblocking and persistent forms) of intra-communicators and runs them as chunked
 * hierarchical collectives scheduled by Themis over the network's dimensions. What
 * it does not accelerate goes, unchanged, to the module that held the slot before it
 * (the "previous" module saved at enable time). */
#ifndef MCA_COLL_THEMIS_H
#define MCA_COLL_THEMIS_H

#include "coll_themis_compat.h"

#include <stdbool.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "settings.h"

BEGIN_C_DECLS

/* Values of the enum parameters the core does not share (those it does: settings.h). */
enum { THEMIS_TRANSPORT_AUTO = 0, THEMIS_TRANSPORT_PML = 1, THEMIS_TRANSPORT_UCX = 2 };
/* coll_themis_node_transport: node-local dimensions by single copy (cma) or the transport. */
enum { THEMIS_NODE_AUTO = 0, THEMIS_NODE_CMA = 1, THEMIS_NODE_TRANSPORT = 2 };
/* coll_themis_cuda: how device buffers move (only registered when built with CUDA). */
enum { THEMIS_CUDA_AUTO = 0, THEMIS_CUDA_STAGED = 1, THEMIS_CUDA_OFF = 2 };
/* coll_themis_cuda_ipc: the device-direct node dimension. */
enum { THEMIS_CUDA_IPC_AUTO = 0, THEMIS_CUDA_IPC_OFF = 1 };

/* Every collective themis takes over, once: F(X, name, ID, Mpi, Core) with its slot's name in
 * Open MPI's module (coll_<name>; the nonblocking form coll_i<name>, the persistent one
 * coll_<name>_init), its index (THEMIS_COLL_<ID>), its MPI name after "MPI_", and the core's
 * collective that runs it (themis::Collective, C++ only). Its parameters before the
 * communicator are THEMIS_PARAMS_<name>, beside it. Slots, prototypes, names and counts all
 * come from this list; F gets X, a macro of its caller's, passed through. A new collective
 * is a row here, its parameters, and its adapter (coll_themis_entry.h). */
#define THEMIS_COLLECTIVES(F, X)                                                                   \
    F(X, allreduce, ALLREDUCE, Allreduce, AllReduce)                                               \
    F(X, reduce_scatter, REDUCE_SCATTER, Reduce_scatter, ReduceScatter)                            \
    F(X, reduce_scatter_block, REDUCE_SCATTER_BLOCK, Reduce_scatter_block, ReduceScatter)          \
    F(X, allgather, ALLGATHER, Allgather, AllGather)                                               \
    F(X, bcast, BCAST, Bcast, Bcast)                                                               \
    F(X, reduce, REDUCE, Reduce, Reduce)

#define THEMIS_PARAMS_allreduce                                                                    \
    (const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
#define THEMIS_PARAMS_reduce_scatter                                                               \
    (const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,              \
     struct ompi_op_t *op)
#define THEMIS_PARAMS_reduce_scatter_block                                                         \
    (const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
#define THEMIS_PARAMS_allgather                                                                    \
    (const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,         \
     struct ompi_datatype_t *rdtype)
#define THEMIS_PARAMS_bcast (void *buff, int count, struct ompi_datatype_t *dtype, int root)
#define THEMIS_PARAMS_reduce                                                                       \
    (const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op, \
     int root)

/* THEMIS_PARAMS(name): a collective's parameters, unparenthesized (the argument is expanded
 * before THEMIS_UNPAREN applies to it). */
#define THEMIS_UNPAREN(...) __VA_ARGS__
#define THEMIS_UNPAREN_PARAMS(params) THEMIS_UNPAREN params
#define THEMIS_PARAMS(name) THEMIS_UNPAREN_PARAMS(THEMIS_PARAMS_##name)

/* Every slot, X(slot, ID): the blocking forms in the list's order, then the nonblocking and
 * the persistent ones in the same order. Everything per slot (saved previous layer, its
 * lifetime, the module's functions, the stats names) is generated from this. */
#define THEMIS_BLOCKING_SLOT(X, name, id, mpi, core) X(name, id)
#define THEMIS_NONBLOCKING_SLOT(X, name, id, mpi, core) X(i##name, I##id)
#define THEMIS_PERSISTENT_SLOT(X, name, id, mpi, core) X(name##_init, id##_INIT)
#define THEMIS_SLOTS(X)                                                                            \
    THEMIS_COLLECTIVES(THEMIS_BLOCKING_SLOT, X)                                                    \
    THEMIS_COLLECTIVES(THEMIS_NONBLOCKING_SLOT, X)                                                 \
    THEMIS_COLLECTIVES(THEMIS_PERSISTENT_SLOT, X)

#define THEMIS_COLLECTIVE_INDEX(X, name, id, mpi, core) THEMIS_COLLECTIVE_##id,
enum { THEMIS_COLLECTIVES(THEMIS_COLLECTIVE_INDEX, _) THEMIS_COLLECTIVE_COUNT };
#undef THEMIS_COLLECTIVE_INDEX

#define THEMIS_SLOT_INDEX(slot, id) THEMIS_COLL_##id,
enum { THEMIS_SLOTS(THEMIS_SLOT_INDEX) THEMIS_COLL_COUNT };
#undef THEMIS_SLOT_INDEX

typedef struct mca_coll_themis_component_t {
    themis_coll_base_component_t super;
    int output; /* opal_output stream, verbosity = verbose */

    /* MCA parameters (coll_themis_<name>): defaults, ranges and descriptions are in
     * coll_themis_component.c's table */
    int priority;
    int verbose;
    char *dims;
    int policy;
    int intra_policy;
    int load_model;
    int chunks;
    size_t min_chunk_bytes;
    bool carry_load; /* nonblocking calls plan from the load the previous one left */
    int max_active;
    size_t max_active_bytes; /* stage bytes running at once per dimension; 0: no bound */
    size_t min_bytes;
    double threshold;
    int plan_cache_size;
    int transport;
    size_t pml_message_bytes; /* largest message of the pml transport; 0: auto */
    int node_transport;       /* THEMIS_NODE_* */
    bool single_dim;
    char *trace;                /* path prefix of the stage-timing CSVs; empty: none */
    double calibration_seconds; /* time budget of measuring a layout's rates; 0: never */
    char *calibration_file;     /* measured rates kept between jobs; empty: none */
    int refine_calls;           /* blocking calls per window of the rate refinement; 0: never */
    double refine_threshold;    /* a dimension's rate this far off the others' is revised */
    char *topo_file;            /* hosts' coordinates in the network's dimensions; empty: none */
    double grid_probe_seconds;  /* budget of probing the hosts' grid (dims=auto); 0: never */
    bool split_packages;        /* auto splits a node whose ranks sit on several packages */
    int cuda;                   /* THEMIS_CUDA_* */
    size_t staging_bytes;       /* host staging budget for device buffers, per process */
    char *cuda_driver;          /* the CUDA driver library dlopen()ed: soname or path */
    int cuda_ipc;               /* THEMIS_CUDA_IPC_* */
    int cuda_ipc_cache;         /* peers' device allocations kept open per process */
    bool min_bytes_given;       /* coll_themis_min_bytes set: no measured crossover */
} mca_coll_themis_component_t;

THEMIS_COMPONENT_DECLSPEC extern mca_coll_themis_component_t mca_coll_themis_component;

/* Lazy set-up of a communicator: it starts on the first eligible call, never in enable
 * (creating communicators there deadlocks, see docs/design.md, "Set-up"), and runs from the
 * progress loop until it ends ready or declined (coll_themis_setup_task.h). */
enum { THEMIS_SETUP_PENDING = 0, THEMIS_SETUP_RUNNING, THEMIS_SETUP_READY, THEMIS_SETUP_DECLINED };

struct themis_context; /* C++: per-communicator topology, engine and plan cache */

typedef struct mca_coll_themis_module_t {
    mca_coll_base_module_t super;

    /* The previous layer, one function and module per slot taken over. */
#define THEMIS_PREVIOUS_FIELDS(slot, id)                                                           \
    mca_coll_base_module_##slot##_fn_t previous_##slot;                                            \
    mca_coll_base_module_t *previous_##slot##_module;
    THEMIS_SLOTS(THEMIS_PREVIOUS_FIELDS)
#undef THEMIS_PREVIOUS_FIELDS

    /* The communicator the previous layer's calls take (the module's own). */
    struct ompi_communicator_t *comm;
    int setup_state;
    struct themis_context *context; /* from the start of set-up on */

    /* Calls per collective (a persistent request's: its starts), how many themis ran
     * itself, and the persistent requests handed whole to the module below at their init,
     * whose starts themis never sees (verbose >= 2 prints them when the communicator is
     * freed). */
    unsigned long calls[THEMIS_COLL_COUNT];
    unsigned long accelerated[THEMIS_COLL_COUNT];
    unsigned long below_requests[THEMIS_COLL_COUNT];
} mca_coll_themis_module_t;

OBJ_CLASS_DECLARATION(mca_coll_themis_module_t);

/* coll_themis_module.c */
int mca_coll_themis_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_themis_comm_query(struct ompi_communicator_t *comm, int *priority);

/* Entry points, coll_themis_<collective>.cpp: the blocking form, the nonblocking one (the same
 * collective on the same engine, completed from Open MPI's progress loop,
 * coll_themis_request.h) and the persistent one (MPI_*_init; in 4.1 MPIX_*_init of the
 * pcollreq extension: every MPI_Start runs the nonblocking form's path). */
#define THEMIS_PROTOTYPES(X, name, id, mpi, core)                                                  \
    int mca_coll_themis_##name(THEMIS_PARAMS(name), struct ompi_communicator_t *comm,              \
                               mca_coll_base_module_t *module);                                    \
    int mca_coll_themis_i##name(THEMIS_PARAMS(name), struct ompi_communicator_t *comm,             \
                                ompi_request_t **request, mca_coll_base_module_t *module);         \
    int mca_coll_themis_##name##_init(THEMIS_PARAMS(name), struct ompi_communicator_t *comm,       \
                                      struct ompi_info_t *info, ompi_request_t **request,          \
                                      mca_coll_base_module_t *module);
THEMIS_COLLECTIVES(THEMIS_PROTOTYPES, _)
#undef THEMIS_PROTOTYPES

/* coll_themis_component.c: prints a message of help-coll-themis.txt from this
 * process; whether this is the job's first process (to print a message once); puts
 * every parameter outside its valid range back to its default, said once per job. */
void mca_coll_themis_show_help(const char *topic, ...);
bool mca_coll_themis_first_process(void);
/* coll_themis_log.cpp: true the first time this process asks about TOPIC, false after, on
 * any thread (MPI_THREAD_MULTIPLE): what is said once per process asks it first. */
bool mca_coll_themis_first_time(const char *topic);
void mca_coll_themis_check_params(void);

/* The info keys themis reads per communicator (MPI_Comm_set_info, MPI_Comm_dup_with_info):
 * each overrides the parameter coll_<key without "themis_"> and takes that parameter's
 * values, one table for both (coll_themis_component.c); the list ends with a NULL key. */
typedef struct {
    const char *key;
    const mca_base_var_enum_value_t *values; /* {0, NULL}-terminated */
} mca_coll_themis_info_key_t;
extern const mca_coll_themis_info_key_t mca_coll_themis_info_keys[];

/* `text` as a value of info key `key`: its entry in the key's values, NULL if none. */
const mca_base_var_enum_value_t *mca_coll_themis_info_value(const char *key, const char *text);

/* coll_themis_module.c: the previous layer of `comm`'s own collectives, as a module whose
 * previous_* slots and comm are `comm`'s (a declined communicator's private duplicate:
 * coll_themis_setup_task.h); freed with free(). */
mca_coll_themis_module_t *mca_coll_themis_fallback_new(struct ompi_communicator_t *comm);

/* coll_themis_context.cpp: releases the C++ state of a communicator. */
void mca_coll_themis_context_free(struct themis_context *context);

/* coll_themis_context.cpp: a themis info key was given a value on some communicator
 * (MPI_Comm_set_info, or a communicator's creation): every set-up communicator resolves
 * its settings again on its next call. */
void mca_coll_themis_info_changed(void);

/* coll_themis_setup_task.cpp: stops advancing set-ups (component close). */
void mca_coll_themis_setup_finalize(void);

/* coll_themis_request.cpp: stops progressing nonblocking calls (component close). */
void mca_coll_themis_request_finalize(void);

/* coll_themis_ucx.cpp: releases the process's UCX worker (component close). */
void mca_coll_themis_ucx_finalize(void);

#if THEMIS_HAVE_CUDA
/* cuda/buffers.cpp: releases streams, device and pinned memory (component close). */
void mca_coll_themis_cuda_finalize(void);
#endif

END_C_DECLS

#endif /* MCA_COLL_THEMIS_H */
