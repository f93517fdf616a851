/* coll_themis_component.c: the component; its MCA parameters, one table row each, from
 * which registration, defaults and the check of values come; open and close. */
#include "ompi_config.h"

#include "coll_themis.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
#include "opal/util/printf.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

static int themis_register(void);
static int themis_open(void);
static int themis_close(void);

mca_coll_themis_component_t mca_coll_themis_component = {
    .super =
        {
            .collm_version =
                {
                    THEMIS_COLL_BASE_VERSION,
                    .mca_component_name = "themis",
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_open_component = themis_open,
                    .mca_close_component = themis_close,
                    .mca_register_component_params = themis_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = mca_coll_themis_init_query,
            .collm_comm_query = mca_coll_themis_comm_query,
        },
    .output = -1,
    /* The MCA parameters get their defaults from themis_params below, at registration. */
};

/* The choices the core shares (settings.h), as Open MPI's enum values. */
static const mca_base_var_enum_value_t policy_values[] = {
    THEMIS_POLICY_CHOICES(THEMIS_CHOICE_ROW){0, NULL}};
static const mca_base_var_enum_value_t intra_values[] = {
    THEMIS_INTRA_CHOICES(THEMIS_CHOICE_ROW){0, NULL}};
static const mca_base_var_enum_value_t load_values[] = {
    THEMIS_LOAD_CHOICES(THEMIS_CHOICE_ROW){0, NULL}};
static const mca_base_var_enum_value_t transport_values[] = {{THEMIS_TRANSPORT_AUTO, "auto"},
                                                             {THEMIS_TRANSPORT_PML, "pml"},
                                                             {THEMIS_TRANSPORT_UCX, "ucx"},
                                                             {0, NULL}};
static const mca_base_var_enum_value_t node_transport_values[] = {
    {THEMIS_NODE_AUTO, "auto"},
    {THEMIS_NODE_CMA, "cma"},
    {THEMIS_NODE_TRANSPORT, "transport"},
    {0, NULL}};

const mca_coll_themis_info_key_t mca_coll_themis_info_keys[] = {
    {"themis_policy", policy_values},
    {"themis_transport", transport_values},
    {"themis_node_transport", node_transport_values},
    {NULL, NULL}};

const mca_base_var_enum_value_t *mca_coll_themis_info_value(const char *key, const char *text) {
    for (const mca_coll_themis_info_key_t *k = mca_coll_themis_info_keys; text && k->key; ++k) {
        if (0 != strcmp(key, k->key)) continue;
        for (const mca_base_var_enum_value_t *v = k->values; v->string; ++v)
            if (0 == strcmp(text, v->string)) return v;
    }
    return NULL;
}

#if THEMIS_HAVE_CUDA
static const mca_base_var_enum_value_t cuda_values[] = {{THEMIS_CUDA_AUTO, "auto"},
                                                        {THEMIS_CUDA_STAGED, "staged"},
                                                        {THEMIS_CUDA_OFF, "off"},
                                                        {0, NULL}};
static const mca_base_var_enum_value_t cuda_ipc_values[] = {
    {THEMIS_CUDA_IPC_AUTO, "auto"}, {THEMIS_CUDA_IPC_OFF, "off"}, {0, NULL}};
#endif

/* The numbers a parameter accepts: lo to hi (hi = INFINITY: no upper bound), and 0 too
 * where or_zero says so (0 = auto beside a range that starts higher). Unchecked: any. */
typedef struct {
    bool checked;
    double lo, hi;
    bool or_zero;
} themis_param_range_t;

/* One MCA parameter, coll_themis_<name>: everything registration, ompi_info and the
 * check of its value at init_query need. Numbers (int, size_t, double, bool, enum) are
 * held as doubles, exact for every value these parameters use. */
typedef struct {
    const char *name;
    mca_base_var_type_t type;
    void *storage;              /* the field of mca_coll_themis_component */
    double default_value;       /* of a number; what a bad value becomes */
    const char *default_string; /* of a string; NULL: empty */
    themis_param_range_t range;
    const mca_base_var_enum_value_t *choices; /* the names of an enum's values */
    int level;                                /* OPAL_INFO_LVL_*: when ompi_info shows it */
    /* What it does and what its values mean. Its valid values too, but for a checked
     * range: registration appends that as "(valid: 1 to 64)". */
    const char *help;
} themis_param_t;

/* A parameter's storage and its MCA type, which follows from the field's C type so that
 * the two cannot disagree. */
#define FIELD(f)                                                                                   \
    .storage = &mca_coll_themis_component.f,                                                   \
    .type = _Generic(mca_coll_themis_component.f, int: MCA_BASE_VAR_TYPE_INT,                 \
                     size_t: MCA_BASE_VAR_TYPE_SIZE_T, double: MCA_BASE_VAR_TYPE_DOUBLE,       \
                     bool: MCA_BASE_VAR_TYPE_BOOL, char *: MCA_BASE_VAR_TYPE_STRING)
#define THEMIS_TEXT(macro) THEMIS_TEXT_OF(macro)
#define THEMIS_TEXT_OF(literal) #literal
#define RANGE(lo_, hi_) .range = {.checked = true, .lo = (lo_), .hi = (hi_)}

/* Every parameter, in the order ompi_info lists them. README.md's parameter tables must
 * agree (names and defaults): test/mpi/check_ompi_info.sh compares them. The defaults and
 * ranges the core and themis-sim share come from settings.h; why each default is what it
 * is: docs/design.md, "Why the defaults". */
static const themis_param_t themis_params[] = {
    {.name = "priority",
     FIELD(priority),
     .level = OPAL_INFO_LVL_6,
     .default_value = THEMIS_DEFAULT_PRIORITY,
     .help = "Priority of coll/themis (valid: any integer; the default is above the "
             "components Open MPI selects by default for allreduce, reduce_scatter(_block), "
             "allgather, bcast and reduce: 35 on 4.1 (tuned 30), 80 on 5.0 (han 35, tuned 30, cuda "
             "78); "
             "negative disables it)"},
    {.name = "verbose",
     FIELD(verbose),
     .level = OPAL_INFO_LVL_9,
     .default_value = 0,
     .help = "Verbosity (valid: 0 silent, 1 per-communicator decisions, 2 also call counts "
             "at communicator free, 5 per-call plans, 10 plan details)"},
    {.name = "dims",
     FIELD(dims),
     .level = OPAL_INFO_LVL_4,
     .default_string = "auto",
     .help = "Network dimensions (valid: auto | SPEC; SPEC = PEERSxPEERS...[:bw=LIST][:lat=LIST]"
             "[:alg=LIST][:fill=LIST], e.g. 2x4:bw=200Gbps,100Gbps:lat=1us,5us:alg=ring,hd; "
             "fill = per dimension the fraction of bw 1/2/... stages in flight reach; "
             "auto[:bw=...] = ranks of a node form dimension 0 (split by package where "
             "they span several), nodes the next ones (coll_themis_topo_file's "
             "dimensions, else one); rates not given are measured)"},
    {.name = "topo_file",
     FIELD(topo_file),
     .level = OPAL_INFO_LVL_4,
     .help = "Text file giving each host's coordinates in the network's dimensions (see "
             "README, \"Topology file\"); with dims=auto the layout becomes node level x "
             "those dimensions (valid: empty = none, or a readable file)"},
    {.name = "split_packages",
     FIELD(split_packages),
     .level = OPAL_INFO_LVL_5,
     .default_value = true,
     .help = "With dims=auto, split a node whose ranks sit on several packages (sockets) "
             "into package-local ranks x packages, as hwloc reports the binding (valid: "
             "true, false)"},
    {.name = "grid_probe_seconds",
     FIELD(grid_probe_seconds),
     .level = OPAL_INFO_LVL_4,
     .default_value = 20,
     RANGE(0, 600),
     .help = "Time budget for finding the hosts' grid by probing the network, with "
             "dims=auto when neither coll_themis_topo_file nor Slurm's topology gives one "
             "and the communicator spans at least 4 hosts; once per set of hosts in a "
             "process; 0 = never probe"},
    {.name = "calibration_seconds",
     FIELD(calibration_seconds),
     .level = OPAL_INFO_LVL_4,
     .default_value = 0.5,
     RANGE(0, 60),
     .help = "Time budget for measuring the bandwidth and latency of the dimensions whose "
             "rates coll_themis_dims does not give, on a layout's first use; 0 = never "
             "measure, use the defaults"},
    {.name = "refine_calls",
     FIELD(refine_calls),
     .level = OPAL_INFO_LVL_5,
     .default_value = 8,
     RANGE(0, 1000000),
     .help = "Calls on themis (blocking or not) per window of the rate refinement: every "
             "window the ranks agree on how busy each dimension measured against its plan, "
             "and revise measured rates that are off (coll_themis_refine_threshold); 0 = never"},
    {.name = "refine_threshold",
     FIELD(refine_threshold),
     .level = OPAL_INFO_LVL_5,
     .default_value = 0.15,
     RANGE(0, 100),
     .help = "How far one dimension's measured rate may be off relative to the others' (a "
             "fraction) before the rates are revised at run time; 0 = never"},
    {.name = "calibration_file",
     FIELD(calibration_file),
     .level = OPAL_INFO_LVL_4,
     .default_string = "auto",
     .help = "File that keeps what a job measured for later jobs on the same hosts: rates "
             "and node transport choices, keyed by the layout and its hosts, and grids found "
             "by probing, keyed by the hosts; delete it when the network changes (valid: "
             "auto = the user's cache, $XDG_CACHE_HOME/coll-themis/calibration, else "
             "~/.cache/coll-themis/calibration; none = keep nothing; or a path in a writable "
             "directory)"},
    {.name = "single_dim",
     FIELD(single_dim),
     .level = OPAL_INFO_LVL_5,
     .default_value = false,
     .help = "Run themis also when dims=auto finds a single dimension (all ranks on one "
             "node, or one rank per node), where it has nothing to balance (valid: "
             "true, false = hand such communicators to the previous module)"},
    {.name = "policy",
     FIELD(policy),
     .choices = policy_values,
     .level = OPAL_INFO_LVL_4,
     .default_value = THEMIS_POLICY_DEFAULT,
     .help = "Inter-dimension chunk scheduling (valid: baseline = fixed hierarchical "
             "order, themis = load-balancing order); MPI_Info key themis_policy overrides "
             "it per communicator"},
    {.name = "intra_policy",
     FIELD(intra_policy),
     .choices = intra_values,
     .level = OPAL_INFO_LVL_5,
     .default_value = THEMIS_INTRA_DEFAULT,
     .help = "Order of ready stages within a dimension (valid: fifo, scf = smallest "
             "chunk first)"},
    {.name = "load_model",
     FIELD(load_model),
     .choices = load_values,
     .level = OPAL_INFO_LVL_5,
     .default_value = THEMIS_LOAD_DEFAULT,
     .help = "What the load tracker charges per stage (valid: reference = bandwidth time "
             "only, latency = bandwidth time plus steps x step latency)"},
    {.name = "transport",
     FIELD(transport),
     .choices = transport_values,
     .level = OPAL_INFO_LVL_4,
     .default_value = THEMIS_TRANSPORT_PML,
     .help = "How the per-dimension stages move data (valid: auto = UCX when it starts, "
             "else the PML; pml = Open MPI's point-to-point layer; ucx = UCX UCP directly)"},
    {.name = "node_transport",
     FIELD(node_transport),
     .choices = node_transport_values,
     .level = OPAL_INFO_LVL_4,
     .default_value = THEMIS_NODE_AUTO,
     .help = "How dimensions whose peers share a node move data (valid: auto = per "
             "dimension the faster of cma and transport, measured at set-up; cma = single "
             "copy: ranks read their peers' buffers with process_vm_readv, where every rank "
             "can; transport = coll_themis_transport's, as on the network); MPI_Info key "
             "themis_node_transport overrides it per communicator"},
    {.name = "pml_message_bytes",
     FIELD(pml_message_bytes),
     .level = OPAL_INFO_LVL_5,
     .default_value = 0,
     .range = {.checked = true, .lo = 1024, .hi = INFINITY, .or_zero = true},
     .help = "Largest message the pml transport sends; larger ones go as several parts: "
             "0 = auto, just under the eager limit on dimensions whose peers ob1 reaches "
             "through btl tcp, so that no message waits for a rendezvous round trip, whole "
             "messages elsewhere; N = parts of at most N bytes on every dimension, "
             "1073741824 = never split; the same on every rank"},
    {.name = "chunks",
     FIELD(chunks),
     .level = OPAL_INFO_LVL_5,
     .default_value = THEMIS_CHUNKS_DEFAULT,
     RANGE(0, THEMIS_CHUNKS_MAX),
     .help = "Chunks a collective is split into, fewer where min_chunk_bytes asks; 0 = "
             "auto: the count predicted fastest, up to " THEMIS_TEXT(
                 THEMIS_AUTO_CHUNKS_MAX) ", where at least 5 percent faster than the most, else "
                                         "the most"},
    {.name = "min_chunk_bytes",
     FIELD(min_chunk_bytes),
     .level = OPAL_INFO_LVL_5,
     .default_value = THEMIS_MIN_CHUNK_BYTES_DEFAULT,
     .help = "Smallest chunk in bytes: fewer chunks are used for smaller messages, but one "
             "per network dimension where predicted clearly faster (valid: 0 = no floor, or a "
             "byte count)"},
    {.name = "carry_load",
     FIELD(carry_load),
     .level = OPAL_INFO_LVL_5,
     .default_value = THEMIS_CARRY_LOAD_DEFAULT,
     .help = "Plan each nonblocking or persistent call from the per-dimension load the one "
             "before it on the communicator left unbalanced, one load tracker for calls in "
             "flight together (valid: true; false = plan every call alone, which suits "
             "calls that never overlap)"},
    {.name = "max_active",
     FIELD(max_active),
     .level = OPAL_INFO_LVL_5,
     .default_value = THEMIS_MAX_ACTIVE_DEFAULT,
     RANGE(THEMIS_MAX_ACTIVE_MIN, THEMIS_MAX_ACTIVE_MAX),
     .help = "Stages running at once per dimension, K"},
    {.name = "max_active_bytes",
     FIELD(max_active_bytes),
     .level = OPAL_INFO_LVL_5,
     .default_value = THEMIS_MAX_ACTIVE_BYTES_DEFAULT,
     .help = "Stage bytes running at once per dimension: a stage starts beside others only "
             "if all fit under this bound, since a link carries their data first come "
             "first served (valid: 0 = no bound but max_active, or a byte count; a stage "
             "starts on an idle dimension whatever its size)"},
    {.name = "min_bytes",
     FIELD(min_bytes),
     .level = OPAL_INFO_LVL_4,
     .default_value = 64 * 1024,
     .help = "Messages smaller than this many bytes go to the previous module (valid: >= 0). "
             "Not set: each communicator measures, per collective, from which size of 16 KiB "
             "to 4 MiB its blocking calls run faster on themis, and its nonblocking and "
             "persistent calls follow that, this default until measured"},
    {.name = "threshold",
     FIELD(threshold),
     .level = OPAL_INFO_LVL_6,
     .default_value = THEMIS_THRESHOLD_DEFAULT,
     RANGE(THEMIS_THRESHOLD_MIN, THEMIS_THRESHOLD_MAX),
     .help = "Themis falls back to the baseline order when the dimension loads differ by "
             "less than this fraction of a chunk; the default is the paper's"},
    {.name = "trace",
     FIELD(trace),
     .level = OPAL_INFO_LVL_9,
     .help = "Record when every stage of every themis collective became ready, started "
             "and ended, as CSV in PREFIX.cid<C>.rank<R>.csv, for themis-sim --measured "
             "(valid: empty = off, or a path prefix in a writable directory)"},
    {.name = "plan_cache_size",
     FIELD(plan_cache_size),
     .level = OPAL_INFO_LVL_6,
     .default_value = 64,
     RANGE(1, 4096),
     .help = "Compiled plans kept per communicator"},
#if THEMIS_HAVE_CUDA
    {.name = "cuda",
     FIELD(cuda),
     .choices = cuda_values,
     .level = OPAL_INFO_LVL_4,
     .default_value = THEMIS_CUDA_AUTO,
     .help = "CUDA device buffers, detected per call through the CUDA driver (valid: auto = "
             "handed to the transport when it moves device memory (UCX with CUDA), else "
             "staged through host memory; staged = always staged; off = never looked for: "
             "device buffers then fail as in an Open MPI without CUDA support)"},
    {.name = "staging_bytes",
     FIELD(staging_bytes),
     .level = OPAL_INFO_LVL_5,
     .default_value = 128 * 1024 * 1024,
     .help = "Pinned host memory, in bytes, per process that staging device buffers may hold at "
             "once (raised where a plan needs more to make progress: its largest "
             "(max_active+1) x dimensions chunks), and that host copies of device buffers "
             "for the module below keep between calls (at least 16 MiB) (valid: >= 0)"},
    {.name = "cuda_driver",
     FIELD(cuda_driver),
     .level = OPAL_INFO_LVL_6,
     .default_string = "libcuda.so.1",
     .help = "The CUDA driver library themis opens at run time (valid: a soname the loader "
             "finds, or an absolute path, which loads exactly that file)"},
    {.name = "cuda_ipc",
     FIELD(cuda_ipc),
     .choices = cuda_ipc_values,
     .level = OPAL_INFO_LVL_4,
     .default_value = THEMIS_CUDA_IPC_AUTO,
     .help = "Device-direct node dimensions: ranks of one node exchange device memory "
             "through CUDA IPC, network dimensions bounce it through pinned host memory; "
             "agreed per communicator at set-up, also runs a dims=auto communicator on one "
             "node (valid: auto = where every rank has a CUDA context and IPC works, with "
             "coll_themis_cuda=auto; off = never, device data staged as before)"},
    {.name = "cuda_ipc_cache",
     FIELD(cuda_ipc_cache),
     .level = OPAL_INFO_LVL_6,
     .default_value = 128,
     RANGE(1, 65536),
     .help = "Peers' device allocations kept open (CUDA IPC mappings) per process, least "
             "recently used closed first"},
#endif
};
#undef FIELD
#undef RANGE
#undef THEMIS_TEXT
#undef THEMIS_TEXT_OF

#define THEMIS_PARAM_COUNT (sizeof themis_params / sizeof themis_params[0])

static void set_default(const themis_param_t *p) {
    switch (p->type) {
    case MCA_BASE_VAR_TYPE_INT: *(int *)p->storage = (int)p->default_value; break;
    case MCA_BASE_VAR_TYPE_SIZE_T: *(size_t *)p->storage = (size_t)p->default_value; break;
    case MCA_BASE_VAR_TYPE_DOUBLE: *(double *)p->storage = p->default_value; break;
    case MCA_BASE_VAR_TYPE_BOOL: *(bool *)p->storage = 0 != p->default_value; break;
    /* Open MPI keeps its own copy of a string, made at registration. */
    case MCA_BASE_VAR_TYPE_STRING: *(char **)p->storage = (char *)p->default_string; break;
    default: break;
    }
}

/* The number a numeric parameter holds now. */
static double stored_number(const themis_param_t *p) {
    switch (p->type) {
    case MCA_BASE_VAR_TYPE_INT: return *(const int *)p->storage;
    case MCA_BASE_VAR_TYPE_SIZE_T: return (double)*(const size_t *)p->storage;
    case MCA_BASE_VAR_TYPE_DOUBLE: return *(const double *)p->storage;
    default: return 0;
    }
}

/* A number as its parameter's type prints: 4096, 0.0625. */
static void format_number(const themis_param_t *p, double value, char *text, size_t size) {
    snprintf(text, size, MCA_BASE_VAR_TYPE_DOUBLE == p->type ? "%g" : "%.0f", value);
}

/* The checked range in words: "1 to 64", "0 or 1024 and more". */
static void describe_range(const themis_param_t *p, char *text, size_t size) {
    const char *zero = p->range.or_zero ? "0 or " : "";
    char lo[32], hi[32];
    format_number(p, p->range.lo, lo, sizeof lo);
    if (isinf(p->range.hi)) {
        snprintf(text, size, "%s%s and more", zero, lo);
        return;
    }
    format_number(p, p->range.hi, hi, sizeof hi);
    snprintf(text, size, "%s%s to %s", zero, lo, hi);
}

static bool in_range(const themis_param_t *p, double value) {
    if (p->range.or_zero && 0 == value) return true;
    return value >= p->range.lo && value <= p->range.hi; /* false for NaN */
}

static void register_param(const themis_param_t *p) {
    mca_base_var_enum_t *choices = NULL;
    if (NULL != p->choices) {
        char enum_name[64];
        snprintf(enum_name, sizeof enum_name, "coll_themis_%s", p->name);
        (void)mca_base_var_enum_create(enum_name, p->choices, &choices);
    }
    char *help = NULL;
    if (p->range.checked) {
        char range[96];
        describe_range(p, range, sizeof range);
        (void)opal_asprintf(&help, "%s (valid: %s)", p->help, range);
    }
    set_default(p);
    /* Open MPI copies the description. */
    (void)mca_base_component_var_register(&mca_coll_themis_component.super.collm_version, p->name,
                                          help ? help : p->help, p->type, choices, 0, 0, p->level,
                                          MCA_BASE_VAR_SCOPE_READONLY, p->storage);
    free(help);
    if (NULL != choices) OBJ_RELEASE(choices);
}

static int themis_register(void) {
    for (size_t k = 0; k < THEMIS_PARAM_COUNT; ++k) register_param(&themis_params[k]);
    return OMPI_SUCCESS;
}

void mca_coll_themis_check_params(void) {
    for (size_t k = 0; k < THEMIS_PARAM_COUNT; ++k) {
        const themis_param_t *p = &themis_params[k];
        if (!p->range.checked || in_range(p, stored_number(p))) continue;
        char name[64], got[32], range[96], fallback[32];
        snprintf(name, sizeof name, "coll_themis_%s", p->name);
        format_number(p, stored_number(p), got, sizeof got);
        describe_range(p, range, sizeof range);
        format_number(p, p->default_value, fallback, sizeof fallback);
        if (mca_coll_themis_first_process())
            mca_coll_themis_show_help("bad-param", name, got, range, fallback);
        set_default(p);
    }
}

/* Whether the user set coll_themis_<name> (command line, environment, file, MPI_T) rather
 * than leaving its default. */
static bool param_given(const char *name) {
    const int index = mca_base_var_find("ompi", "coll", "themis", name);
    const void *storage = NULL;
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
    if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &storage, &source, NULL))
        return false;
    return MCA_BASE_VAR_SOURCE_DEFAULT != source;
}

static int themis_open(void) {
    mca_coll_themis_component_t *c = &mca_coll_themis_component;
    c->min_bytes_given = param_given("min_bytes");
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    /* Our help file is installed beside the component, not in Open MPI's data dir. */
    opal_show_help_add_dir(THEMIS_HELP_DIR);
    return OMPI_SUCCESS;
}

static int themis_close(void) {
    mca_coll_themis_setup_finalize();
    mca_coll_themis_request_finalize();
#if THEMIS_HAVE_UCX
    mca_coll_themis_ucx_finalize();
#endif
#if THEMIS_HAVE_CUDA
    mca_coll_themis_cuda_finalize();
#endif
    if (mca_coll_themis_component.output >= 0) {
        opal_output_close(mca_coll_themis_component.output);
        mca_coll_themis_component.output = -1;
    }
    return OMPI_SUCCESS;
}

/* Open MPI 4.1.4 sometimes loses help messages that opal_show_help forwards to mpirun
 * ("Data unpack would read past end of buffer" in orte/util/show_help.c), so themis
 * renders its messages here and prints them from this process. */
void mca_coll_themis_show_help(const char *topic, ...) {
    va_list ap;
    va_start(ap, topic);
    char *text = opal_show_help_vstring("help-coll-themis.txt", topic, true, ap);
    va_end(ap);
    if (NULL != text) {
        opal_output(0, "%s", text);
        free(text);
    }
}

bool mca_coll_themis_first_process(void) { return 0 == opal_proc_local_get()->proc_name.vpid; }
