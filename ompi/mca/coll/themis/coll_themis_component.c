/* coll_themis_component.c: the component, its MCA parameters, open and close. */
#include "ompi_config.h"

#include "coll_themis.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include <stdarg.h>
#include <stdlib.h>

static int themis_register(void);
static int themis_open(void);
static int themis_close(void);

mca_coll_themis_component_t mca_coll_themis_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
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
    .priority = 35, /* above tuned (30): themis runs first and hands the rest down */
    .verbose = 0,
    .dims = NULL,
    .policy = THEMIS_POLICY_THEMIS,
    .intra_policy = THEMIS_INTRA_SCF,
    .load_model = THEMIS_LOAD_LATENCY,
    .chunks = 128, /* at most; kDefaultChunks in src/planner.h says why not auto (0) */
    .min_chunk_bytes = 256 * 1024,
    .max_active = 4, /* one stage per dimension cannot fill a link: bench/RESULTS.md */
    .max_active_bytes = 2 * 1024 * 1024, /* more queue FIFO on a link: bench/RESULTS.md */
    .min_bytes = 64 * 1024,
    .threshold = 1.0 / 16,
    .plan_cache_size = 64,
    .single_dim = false,
    .calibration_seconds = 0.5,
    .split_packages = true,
    .transport = THEMIS_TRANSPORT_PML, /* measured faster here, see bench/RESULTS.md */
    .node_transport = THEMIS_NODE_AUTO,
    .pml_message_bytes = 0,
    .cuda = THEMIS_CUDA_AUTO,
    .staging_bytes = 128 * 1024 * 1024,
    .cuda_ipc = THEMIS_CUDA_IPC_AUTO,
    .cuda_ipc_cache = 128,
};

static const mca_base_var_enum_value_t policy_values[] = {
    {THEMIS_POLICY_BASELINE, "baseline"}, {THEMIS_POLICY_THEMIS, "themis"}, {0, NULL}};
static const mca_base_var_enum_value_t intra_values[] = {
    {THEMIS_INTRA_FIFO, "fifo"}, {THEMIS_INTRA_SCF, "scf"}, {0, NULL}};
static const mca_base_var_enum_value_t transport_values[] = {{THEMIS_TRANSPORT_AUTO, "auto"},
                                                            {THEMIS_TRANSPORT_PML, "pml"},
                                                            {THEMIS_TRANSPORT_UCX, "ucx"},
                                                            {0, NULL}};
static const mca_base_var_enum_value_t node_transport_values[] = {{THEMIS_NODE_AUTO, "auto"},
                                                                 {THEMIS_NODE_CMA, "cma"},
                                                                 {THEMIS_NODE_TRANSPORT, "transport"},
                                                                 {0, NULL}};
#if THEMIS_HAVE_CUDA
static const mca_base_var_enum_value_t cuda_values[] = {{THEMIS_CUDA_AUTO, "auto"},
                                                       {THEMIS_CUDA_STAGED, "staged"},
                                                       {THEMIS_CUDA_OFF, "off"},
                                                       {0, NULL}};
static const mca_base_var_enum_value_t cuda_ipc_values[] = {{THEMIS_CUDA_IPC_AUTO, "auto"},
                                                           {THEMIS_CUDA_IPC_OFF, "off"},
                                                           {0, NULL}};
#endif
static const mca_base_var_enum_value_t load_values[] = {
    {THEMIS_LOAD_REFERENCE, "reference"}, {THEMIS_LOAD_LATENCY, "latency"}, {0, NULL}};

static void register_var(const char *name, const char *help, mca_base_var_type_t type,
                         mca_base_var_enum_t *values, int level, void *storage)
{
    (void) mca_base_component_var_register(&mca_coll_themis_component.super.collm_version, name,
                                           help, type, values, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void register_enum(const char *name, const char *help,
                          const mca_base_var_enum_value_t *values, int level, int *storage)
{
    mca_base_var_enum_t *e = NULL;
    char enum_name[64];
    snprintf(enum_name, sizeof enum_name, "coll_themis_%s", name);
    (void) mca_base_var_enum_create(enum_name, values, &e);
    register_var(name, help, MCA_BASE_VAR_TYPE_INT, e, level, storage);
    OBJ_RELEASE(e);
}

static int themis_register(void)
{
    mca_coll_themis_component_t *c = &mca_coll_themis_component;
    static char *dims_default = "auto";
    c->dims = dims_default;
    c->trace = NULL;
    c->calibration_file = NULL;
    c->topo_file = NULL;

    register_var("priority",
                 "Priority of coll/themis (valid: any integer; above tuned's 30 to take "
                 "allreduce, reduce_scatter(_block) and allgather; negative disables it)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->priority);
    register_var("verbose",
                 "Verbosity (valid: 0 silent, 1 per-communicator decisions, 2 also call counts "
                 "at communicator free, 5 per-call plans, 10 plan details)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_9, &c->verbose);
    register_var("dims",
                 "Network dimensions (valid: auto | SPEC; SPEC = PEERSxPEERS...[:bw=LIST][:lat=LIST]"
                 "[:alg=LIST], e.g. 2x4:bw=200Gbps,100Gbps:lat=1us,5us:alg=ring,hd; "
                 "auto[:bw=...] = ranks of a node form dimension 0 (split by package where "
                 "they span several), nodes the next ones (coll_themis_topo_file's "
                 "dimensions, else one); rates not given are measured)",
                 MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_4, &c->dims);
    register_var("topo_file",
                 "Text file giving each host's coordinates in the network's dimensions (see "
                 "README, \"Topology file\"); with dims=auto the layout becomes node level x "
                 "those dimensions (valid: empty = none, or a readable file)",
                 MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_4, &c->topo_file);
    register_var("split_packages",
                 "With dims=auto, split a node whose ranks sit on several packages (sockets) "
                 "into package-local ranks x packages, as hwloc reports the binding (valid: "
                 "true, false)",
                 MCA_BASE_VAR_TYPE_BOOL, NULL, OPAL_INFO_LVL_5, &c->split_packages);
    register_var("calibration_seconds",
                 "Time budget for measuring the bandwidth and latency of the dimensions whose "
                 "rates coll_themis_dims does not give, on a layout's first use (valid: 0 = "
                 "never measure, use the defaults; up to 60)",
                 MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_4, &c->calibration_seconds);
    register_var("calibration_file",
                 "File that keeps measured rates between jobs, keyed by the layout and its "
                 "hosts; delete it when the network changes (valid: empty = none, or a path "
                 "in a writable directory)",
                 MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_4, &c->calibration_file);
    register_var("single_dim",
                 "Run themis also when dims=auto finds a single dimension (all ranks on one "
                 "node, or one rank per node), where it has nothing to balance (valid: "
                 "true, false = hand such communicators to the previous module)",
                 MCA_BASE_VAR_TYPE_BOOL, NULL, OPAL_INFO_LVL_5, &c->single_dim);
    register_enum("policy",
                  "Inter-dimension chunk scheduling (valid: baseline = fixed hierarchical "
                  "order, themis = load-balancing order); MPI_Info key themis_policy overrides "
                  "it per communicator",
                  policy_values, OPAL_INFO_LVL_4, &c->policy);
    register_enum("intra_policy",
                  "Order of ready stages within a dimension (valid: fifo, scf = smallest "
                  "chunk first)",
                  intra_values, OPAL_INFO_LVL_5, &c->intra_policy);
    register_enum("load_model",
                  "What the load tracker charges per stage (valid: reference = bandwidth time "
                  "only, latency = bandwidth time plus steps x step latency)",
                  load_values, OPAL_INFO_LVL_5, &c->load_model);
    register_enum("transport",
                  "How the per-dimension stages move data (valid: auto = UCX when it starts, "
                  "else the PML; pml = Open MPI's point-to-point layer; ucx = UCX UCP directly)",
                  transport_values, OPAL_INFO_LVL_4, &c->transport);
    register_enum("node_transport",
                  "How dimensions whose peers share a node move data (valid: auto = per "
                  "dimension the faster of cma and transport, measured at set-up; cma = single "
                  "copy: ranks read their peers' buffers with process_vm_readv, where every rank "
                  "can; transport = coll_themis_transport's, as on the network); MPI_Info key "
                  "themis_node_transport overrides it per communicator",
                  node_transport_values, OPAL_INFO_LVL_4, &c->node_transport);
    register_var("pml_message_bytes",
                 "Largest message the pml transport sends; larger ones go as several parts "
                 "(valid: 0 = auto: just under the eager limit on dimensions whose peers ob1 "
                 "reaches through btl tcp, so that no message waits for a rendezvous round "
                 "trip, whole messages elsewhere; N >= 1024: parts of at most N bytes on every "
                 "dimension, 1073741824 = never split; the same on every rank)",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, &c->pml_message_bytes);
    register_var("chunks",
                 "Chunks a collective is split into (valid: 0 = auto: the count predicted "
                 "fastest, up to 128; 1 to 4096: that many, fewer where min_chunk_bytes asks)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->chunks);
    register_var("min_chunk_bytes",
                 "Smallest chunk in bytes: fewer chunks are used for smaller messages "
                 "(valid: 0 = no floor, or a byte count)",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, &c->min_chunk_bytes);
    register_var("max_active",
                 "Stages running at once per dimension, K (valid: 1 to 64)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->max_active);
    register_var("max_active_bytes",
                 "Stage bytes running at once per dimension: a stage starts beside others only "
                 "if all fit under this bound, since a link carries their data first come "
                 "first served (valid: 0 = no bound but max_active, or a byte count; a stage "
                 "starts on an idle dimension whatever its size)",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, &c->max_active_bytes);
    register_var("min_bytes",
                 "Messages smaller than this many bytes go to the previous module "
                 "(valid: >= 0)",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_4, &c->min_bytes);
    register_var("threshold",
                 "Themis falls back to the baseline order when the dimension loads differ by "
                 "less than this fraction of a chunk (valid: 0 to 1; paper: 0.0625)",
                 MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_6, &c->threshold);
    register_var("trace",
                 "Record when every stage of every themis collective became ready, started "
                 "and ended, as CSV in PREFIX.cid<C>.rank<R>.csv, for themis-sim --measured "
                 "(valid: empty = off, or a path prefix in a writable directory)",
                 MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_9, &c->trace);
    register_var("plan_cache_size",
                 "Compiled plans kept per communicator (valid: 1 to 4096)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->plan_cache_size);
#if THEMIS_HAVE_CUDA
    register_enum("cuda",
                  "CUDA device buffers, detected per call through the CUDA driver (valid: auto = "
                  "handed to the transport when it moves device memory (UCX with CUDA), else "
                  "staged through host memory; staged = always staged; off = never looked for: "
                  "device buffers then fail as in an Open MPI without CUDA support)",
                  cuda_values, OPAL_INFO_LVL_4, &c->cuda);
    register_var("staging_bytes",
                 "Pinned host memory, in bytes, that staging device buffers may hold at once per "
                 "process; raised where a plan needs more to make progress (its largest "
                 "(max_active+1) x dimensions chunks) (valid: >= 0)",
                 MCA_BASE_VAR_TYPE_SIZE_T, NULL, OPAL_INFO_LVL_5, &c->staging_bytes);
    static char *cuda_driver_default = "libcuda.so.1";
    c->cuda_driver = cuda_driver_default;
    register_var("cuda_driver",
                 "The CUDA driver library themis opens at run time (valid: a soname the loader "
                 "finds, default libcuda.so.1, or an absolute path, which loads exactly that "
                 "file)",
                 MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_6, &c->cuda_driver);
    register_enum("cuda_ipc",
                  "Device-direct node dimensions: ranks of one node exchange device memory "
                  "through CUDA IPC, network dimensions bounce it through pinned host memory; "
                  "agreed per communicator at set-up, also runs a dims=auto communicator on one "
                  "node (valid: auto = where every rank has a CUDA context and IPC works, with "
                  "coll_themis_cuda=auto; off = never, device data staged as before)",
                  cuda_ipc_values, OPAL_INFO_LVL_4, &c->cuda_ipc);
    register_var("cuda_ipc_cache",
                 "Peers' device allocations kept open (CUDA IPC mappings) per process, least "
                 "recently used closed first (valid: 1 to 65536)",
                 MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->cuda_ipc_cache);
#endif
    return OMPI_SUCCESS;
}

static int themis_open(void)
{
    mca_coll_themis_component_t *c = &mca_coll_themis_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    /* Our help file is installed beside the component, not in Open MPI's data dir. */
    opal_show_help_add_dir(THEMIS_HELP_DIR);
    return OMPI_SUCCESS;
}

static int themis_close(void)
{
    mca_coll_themis_request_finalize();
    mca_coll_themis_ucx_finalize();
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
void mca_coll_themis_show_help(const char *topic, ...)
{
    va_list ap;
    va_start(ap, topic);
    char *text = opal_show_help_vstring("help-coll-themis.txt", topic, true, ap);
    va_end(ap);
    if (NULL != text) {
        opal_output(0, "%s", text);
        free(text);
    }
}

bool mca_coll_themis_first_process(void)
{
    return 0 == opal_proc_local_get()->proc_name.vpid;
}
