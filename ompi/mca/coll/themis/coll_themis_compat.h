/* coll_themis_compat.h: what differs between the Open MPI series coll/themis builds
 * against, 4.1 and 5.0, behind one set of names. The glue calls these and never the
 * series' own spelling where the two differ; everything else it calls is the same in
 * both (checked against the 4.1.4 and 5.0.9 headers). Include it first (C++: before any
 * other Open MPI header, coll_themis_prelude.h does so), after nothing but system headers.
 *
 * The series comes from ompi_config.h, i.e. from the headers compiled against, so it
 * cannot disagree with them; configure refuses other series with a sentence of its own.
 *
 * What is the same in both, so not here: coll selection and stacking (modules enabled from
 * the lowest priority up, each slot's previous owner saved at enable, disable once per
 * owned slot: coll_base_comm_select.c / coll_base_comm_unselect.c), the enable/disable
 * hook types, the persistent collectives' module slots (coll_<name>_init), requests
 * (OMPI_REQUEST_INIT, req_start, req_free, ompi_request_complete, and the MPI layer's
 * retention of a user op or derived datatype through ompi_coll_base_nbc_request_t, which
 * is skipped for a persistent request inactive at init in both), the nonblocking id
 * agreement and activation of a communicator (ompi_comm_nextcid_nb, ompi_comm_activate_nb
 * with OMPI_COMM_CID_GROUP and a tag), opal_info_set, opal_progress_register,
 * opal_output, opal_show_help_vstring/add_dir, MCA variable registration. */
#ifndef COLL_THEMIS_COMPAT_H
#define COLL_THEMIS_COMPAT_H

#include "ompi_config.h"

/* ------------------------------------------------------------------- the series */
#if OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1
#define THEMIS_OMPI_SERIES 41
#elif OMPI_MAJOR_VERSION == 5 && OMPI_MINOR_VERSION == 0
#define THEMIS_OMPI_SERIES 50
#else
#error "coll/themis builds against the Open MPI 4.1 and 5.0 series only"
#endif

/* -------------------------------------------------- the internal headers in C++ */
/* Some inline functions of Open MPI's internal headers are not valid C++ (a void* passed
 * where intptr_t*, void** or char* is expected); the macros below add the casts C makes
 * implicitly, so that the headers compile cleanly as C++17:
 *  4.1: the pointer compare-exchange macro (5.0's casts already);
 *  5.0: the hash table lookup in ompi_comm_lookup_cid (communicator.h);
 *  both: the copy in ompi_3buff_op_user (op.h).
 * 5.0.9's opal/util/event.h (included by nearly every internal header) opens
 * BEGIN_C_DECLS twice and closes it once: included here first, the one left open is
 * closed, or every C++ template after it fails ("template with C linkage").
 * ompi/communicator/comm_request.h declares C functions without saying so (both series):
 * included here first, in C linkage, before communicator.h includes it. */
#if defined(__cplusplus)
#if THEMIS_OMPI_SERIES == 41
#include "opal/threads/thread_usage.h"
#undef OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR(x, y, z)                                           \
    opal_thread_compare_exchange_strong_ptr((volatile intptr_t *)(x), (void **)(y), (void *)(z))
#else
#include "opal/util/event.h"
END_C_DECLS
#include "opal/class/opal_hash_table.h"
#define opal_hash_table_get_value_ptr(t, k, l, p)                                                  \
    (opal_hash_table_get_value_ptr)((t), (k), (l), (void **)(p))
#endif
#include "ompi/datatype/ompi_datatype.h"
#define ompi_datatype_copy_content_same_ddt(t, c, d, s)                                            \
    (ompi_datatype_copy_content_same_ddt)((t), (c), (char *)(d), (char *)(s))
extern "C" {
#include "ompi/communicator/comm_request.h"
}
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/util/info.h"
#include "opal/util/info_subscriber.h"

BEGIN_C_DECLS

/* ------------------------------------------------- component and module versions */
/* The coll framework's component structure and its version: 2.0.0 in 4.1, 2.4.0 in 5.0
 * (5.0 refuses a component of any other coll API version, as 4.1 does). */
#if THEMIS_OMPI_SERIES == 41
typedef mca_coll_base_component_2_0_0_t themis_coll_base_component_t;
#define THEMIS_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#else
typedef mca_coll_base_component_2_4_0_t themis_coll_base_component_t;
#define THEMIS_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#endif

/* The component structure's declaration: exported from the DSO. 5.0 has no
 * OMPI_MODULE_DECLSPEC; its components use OMPI_DECLSPEC, the same visibility. */
#if THEMIS_OMPI_SERIES == 41
#define THEMIS_COMPONENT_DECLSPEC OMPI_MODULE_DECLSPEC
#else
#define THEMIS_COMPONENT_DECLSPEC OMPI_DECLSPEC
#endif

/* ------------------------------------------------------------- default priority */
/* Above every component the series selects by default for the collectives themis takes,
 * so that a plain mpirun runs them on themis and hands the rest down unchanged:
 *  4.1: tuned 30 (han 0, adapt 0, sm 0, libnbc 10, basic 10);
 *  5.0: han 35, tuned 30, ftagree 30, libnbc 10, ucc 10, and coll/cuda 78 where Open MPI
 *       is built with CUDA (themis runs device buffers itself, cuda becomes the module it
 *       hands calls down to). hcoll (90) stays above: a site that installed it chose it;
 *       coll_themis_priority 95 puts themis over it.
 *  Components at or above it select themselves only for what themis declines anyway
 *  (self 75: one-rank communicators; inter 40: intercommunicators) or only when asked
 *  for (sync 50, monitoring). */
#if THEMIS_OMPI_SERIES == 41
#define THEMIS_DEFAULT_PRIORITY 35
#else
#define THEMIS_DEFAULT_PRIORITY 80
#endif

/* -------------------------------------------------------- persistent collectives */
/* MPI 4's persistent collectives: Open MPI 4.1 has them as the pcollreq extension,
 * MPIX_<Name>_init; 5.0 as MPI_<Name>_init. Same module slots. For messages. */
#if THEMIS_OMPI_SERIES == 41
#define THEMIS_INIT_NAME(name) "MPIX_" name "_init"
#else
#define THEMIS_INIT_NAME(name) "MPI_" name "_init"
#endif

/* ------------------------------------------------------------------ communicators */
/* A communicator's id, the same on every rank of it and unique among the process's
 * communicators (tags, file names, messages): 4.1's context id. 5.0 gives a communicator
 * made from another one the same local index on every rank; one made from a group
 * (MPI_Comm_create_from_group, sessions) has only a 128-bit id shared by its ranks, and
 * gets THEMIS_NO_COMM_ID here. */
#define THEMIS_NO_COMM_ID UINT32_MAX
static inline uint32_t themis_comm_id(const struct ompi_communicator_t *comm) {
#if THEMIS_OMPI_SERIES == 41
    return comm->c_contextid;
#else
    return OMPI_COMM_IS_GLOBAL_INDEX(comm) ? ompi_comm_get_local_cid(comm) : THEMIS_NO_COMM_ID;
#endif
}

/* A new intra-communicator over `comm`'s group (not yet given an id, not active), with
 * its error handler and no attributes or topology: ompi_comm_set, whose arguments
 * after the error handler differ (4.1: copy_topocomponent, local and remote group;
 * 5.0: local and remote group, flags). */
static inline int themis_comm_set_intra(struct ompi_communicator_t **newcomm,
                                        struct ompi_communicator_t *comm) {
#if THEMIS_OMPI_SERIES == 41
    return ompi_comm_set(newcomm, comm, ompi_comm_size(comm), NULL, 0, NULL, NULL,
                         comm->error_handler, false, comm->c_local_group, NULL);
#else
    return ompi_comm_set(newcomm, comm, ompi_comm_size(comm), NULL, 0, NULL, NULL,
                         comm->error_handler, comm->c_local_group, NULL, 0);
#endif
}

/* ---------------------------------------------------------------------------- info */
/* The value of `key` in `info` as text (at most size - 1 characters); false, and `value`
 * empty, when the key is not set. 4.1 copies into a caller's buffer; 5.0 hands out a
 * reference-counted string. */
bool themis_info_get(opal_info_t *info, const char *key, char *value, size_t size);

/* Keeps info key `key` on `object` (a communicator: &comm->super) when a user sets it:
 * Open MPI drops keys nobody subscribed to. `filter(key, value)` gives the value to keep
 * (a string that lives as long as the process), or NULL to drop the key. One filter per
 * process (the callback's type carries no data, and differs: 4.1's takes and gives char *,
 * 5.0's const char *): every call must pass the same one. */
typedef const char *(*themis_info_filter_fn)(const char *key, const char *value);
int themis_info_subscribe(opal_infosubscriber_t *object, const char *key,
                          themis_info_filter_fn filter);

END_C_DECLS

#endif /* COLL_THEMIS_COMPAT_H */
