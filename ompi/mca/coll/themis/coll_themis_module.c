/* coll_themis_module.c: init_query, comm_query, enable/disable and the module's
 * lifetime. Enable only saves the previous layer; everything that needs
 * communication happens lazily on the first eligible call. */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_themis.h"
#include "coll_themis_log.h"

#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static void forget_previous(mca_coll_themis_module_t *m)
{
#define FORGET(slot, id) m->previous_##slot##_module = NULL;
    THEMIS_SLOTS(FORGET)
#undef FORGET
}

static void module_construct(mca_coll_themis_module_t *m)
{
#define CLEAR(slot, id) m->previous_##slot = NULL;
    THEMIS_SLOTS(CLEAR)
#undef CLEAR
    forget_previous(m);
    m->comm = NULL;
    m->setup_state = THEMIS_SETUP_PENDING;
    m->context = NULL;
    for (int i = 0; i < THEMIS_COLL_COUNT; ++i)
        m->calls[i] = m->accelerated[i] = m->below_requests[i] = 0;
}

static void print_call_counts(const mca_coll_themis_module_t *m)
{
#define NAME(slot, id) #slot,
    static const char *names[THEMIS_COLL_COUNT] = {THEMIS_SLOTS(NAME)};
#undef NAME
    for (int i = 0; i < THEMIS_COLL_COUNT; ++i) {
        if (0 == m->calls[i] && 0 == m->below_requests[i]) continue;
        char calls[24], themis[24], below[24];
        snprintf(calls, sizeof calls, "%lu", m->calls[i]);
        snprintf(themis, sizeof themis, "%lu", m->accelerated[i]);
        snprintf(below, sizeof below, "%lu", m->below_requests[i]);
        /* below_requests only where there are some: a NULL key ends the list. */
        mca_coll_themis_log_event(2, "stats", m->comm, "coll", names[i], "calls", calls,
                                  "themis", themis, m->below_requests[i] ? "below_requests" : NULL,
                                  below, NULL);
    }
}

static void release_previous(mca_coll_themis_module_t *m)
{
    /* disable runs once per slot we own: release each saved module only once. */
#define RELEASE(slot, id)                                                                      \
    if (m->previous_##slot##_module) OBJ_RELEASE(m->previous_##slot##_module);
    THEMIS_SLOTS(RELEASE)
#undef RELEASE
    forget_previous(m);
}

static void module_destruct(mca_coll_themis_module_t *m)
{
    print_call_counts(m);
    mca_coll_themis_context_free(m->context);
    m->context = NULL;
    release_previous(m);
}

OBJ_CLASS_INSTANCE(mca_coll_themis_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

int mca_coll_themis_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    /* The parameters hold what the user gave by now: put bad values back to the default. */
    mca_coll_themis_check_params();
    return OMPI_SUCCESS;
}

/* Whether every slot has a previous layer to hand calls down to. */
static bool has_previous(const mca_coll_themis_module_t *m)
{
#define HAS(slot, id) && m->previous_##slot && m->previous_##slot##_module
    return true THEMIS_SLOTS(HAS);
#undef HAS
}

static bool has_any_previous(const mca_coll_themis_module_t *m)
{
#define ANY(slot, id) || (m->previous_##slot && m->previous_##slot##_module)
    return false THEMIS_SLOTS(ANY);
#undef ANY
}

/* Says (verbose 1) that themis leaves COMM alone because some of its slots have no module
 * below (a communicator made for some collectives only, e.g. han's inter-node ones with
 * their own component list), naming those slots. */
static void log_partly_below(const mca_coll_themis_module_t *m, struct ompi_communicator_t *comm)
{
    char slots[512] = "";
#define MISSING(slot, id)                                                                      \
    if (!m->previous_##slot || !m->previous_##slot##_module)                                   \
        snprintf(slots + strlen(slots), sizeof slots - strlen(slots), "%s%s",                  \
                 slots[0] ? "," : "", #slot);
    THEMIS_SLOTS(MISSING)
#undef MISSING
    mca_coll_themis_log_event(1, "declined", comm, "reason", "nothing_below", "slots", slots, NULL);
}

/* Keeps a themis info key on the communicator (Open MPI drops keys nobody subscribed to):
 * valid values (those of the parameter the key overrides) are kept, anything else is dropped.
 * Open MPI calls it when the key is subscribed to (enable) and when MPI_Comm_set_info gives
 * it a value, before it stores the value: set-up communicators resolve their settings from
 * the communicator's info again on their next call, not on every call. */
static const char *info_filter(const char *key, const char *value)
{
    const mca_base_var_enum_value_t *v = mca_coll_themis_info_value(key, value);
    mca_coll_themis_info_changed();
    return v ? v->string : NULL;
}

/* The layer `comm` runs each slot on now. */
static void save_previous(mca_coll_themis_module_t *m, struct ompi_communicator_t *comm)
{
#define SAVE(slot, id)                                                                         \
    m->previous_##slot = comm->c_coll->coll_##slot;                                            \
    m->previous_##slot##_module = comm->c_coll->coll_##slot##_module;
    THEMIS_SLOTS(SAVE)
#undef SAVE
}

/* The component of MODULE, one of the modules Open MPI enabled on COMM before ours: both
 * series list them, lowest priority first, in the communicator's module list as they are
 * enabled. */
static const char *component_of(struct ompi_communicator_t *comm,
                                const mca_coll_base_module_t *module)
{
    mca_coll_base_avail_coll_t *item;
    if (NULL == comm->c_coll->module_list) return "unknown";
    OPAL_LIST_FOREACH (item, comm->c_coll->module_list, mca_coll_base_avail_coll_t) {
        if (item->ac_module == module) return item->ac_component_name;
    }
    return "unknown";
}

/* Says (verbose 1) which component runs each of our collectives below us: where themis
 * delegates a call, it goes there. */
static void log_below(const mca_coll_themis_module_t *m, struct ompi_communicator_t *comm)
{
#define BELOW(slot, id) , #slot, component_of(comm, m->previous_##slot##_module)
    mca_coll_themis_log_event(1, "below", comm THEMIS_SLOTS(BELOW), NULL);
#undef BELOW
}

mca_coll_themis_module_t *mca_coll_themis_fallback_new(struct ompi_communicator_t *comm)
{
    mca_coll_themis_module_t *m = calloc(1, sizeof *m);
    if (NULL == m) return NULL;
    save_previous(m, comm);
    m->comm = comm;
    m->setup_state = THEMIS_SETUP_DECLINED;
    return m;
}

static int themis_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_themis_module_t *m = (mca_coll_themis_module_t *) module;
    save_previous(m, comm);
    if (!has_previous(m)) {
        /* A slot with nothing below us: Open MPI 4.1 needs every slot filled, so themis
         * cannot take this communicator. Nothing below at all: the user selected themis
         * alone; say what to type instead (once per process). */
        if (has_any_previous(m)) {
            log_partly_below(m, comm);
        } else if (0 == ompi_comm_rank(comm) && mca_coll_themis_first_time("themis-alone")) {
            mca_coll_themis_show_help("themis-alone");
        }
        forget_previous(m);
        return OMPI_ERR_NOT_FOUND;
    }
    /* Taking a slot releases its previous owner: keep ours alive. */
#define RETAIN(slot, id) OBJ_RETAIN(m->previous_##slot##_module);
    THEMIS_SLOTS(RETAIN)
#undef RETAIN
    m->comm = comm;
    log_below(m, comm);
    for (const mca_coll_themis_info_key_t *k = mca_coll_themis_info_keys; k->key; ++k)
        themis_info_subscribe(&comm->super, k->key, info_filter);
    return OMPI_SUCCESS;
}

static int themis_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    (void) comm;
    /* Called once per owned slot; what it frees must stay freed (idempotent). The
     * context (with its private communicator) goes with the module's destructor. */
    (void) module;
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_themis_comm_query(struct ompi_communicator_t *comm,
                                                   int *priority)
{
    mca_coll_themis_component_t *c = &mca_coll_themis_component;
    if (OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2 || c->priority < 0) {
        mca_coll_themis_log_event(1, "declined", comm, "reason",
                                  OMPI_COMM_IS_INTER(comm) ? "intercommunicator"
                                  : c->priority < 0        ? "negative_priority"
                                                           : "single_rank",
                                  NULL);
        return NULL;
    }
    mca_coll_themis_module_t *m = OBJ_NEW(mca_coll_themis_module_t);
    if (NULL == m) return NULL;
    *priority = c->priority;
    m->super.coll_module_enable = themis_module_enable;
    m->super.coll_module_disable = themis_module_disable;
#define TAKE(slot, id) m->super.coll_##slot = mca_coll_themis_##slot;
    THEMIS_SLOTS(TAKE)
#undef TAKE
    return &m->super;
}
