// coll_themis_setup.cpp: setting a communicator up, from its first eligible call on:
// where its ranks run, its layout, transports, calibration, device-direct and single-copy
// node dimensions; all ranks agree or all decline (see coll_themis_context.h). It runs
// inside a set-up task (coll_themis_setup_task.h): every collective step here is one of
// the task's exchanges on the private duplicate, and every wait steps aside.
#include "coll_themis_context.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "ompi/mca/coll/base/base.h"
#include "ompi/op/op.h"
#include "ompi/proc/proc.h"
#include "opal/util/show_help.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_node_transport.h"
#include "coll_themis_refine.h"
#include "coll_themis_setup_task.h"
#include "coll_themis_test_hooks.h"
#include "coll_themis_transports.h"
#include "coll_themis_cuda.h"
#include "coll_themis_cuda_ipc.h"
#include "coll_themis_grid_probe.h"
#include "node_packages.h"
#include "ordering.h"
#include "slurm_topology.h"
#include "topo_file.h"
#include "trace.h"

#include <unistd.h>

namespace themis {

namespace {

bool is_auto(const std::string &dims) { return dims.compare(0, 4, "auto") == 0; }

// Where every rank of `comm` runs: its node (an id shared by exactly the ranks of a
// node: the lowest of them), its hostname and its package, gathered in one exchange.
RankPlacement placement_of(mca_coll_themis_module_t *m, ompi_communicator_t *comm) {
    struct Where {
        int node, package;
        char host[64];
    };
    const int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    Where mine{me, params().split_packages ? current_package() : -1, {0}};
    for (int r = 0; r < size; ++r)
        if (r == me || OPAL_PROC_ON_LOCAL_NODE(ompi_comm_peer_lookup(comm, r)->super.proc_flags)) {
            mine.node = r;
            break;
        }
    gethostname(mine.host, sizeof mine.host - 1);
    std::vector<Where> all(size);
    setup_allgather(m, &mine, all.data(), int(sizeof mine));
    RankPlacement placement;
    for (const Where &w : all) {
        placement.node_of.push_back(w.node);
        placement.package_of.push_back(w.package);
        placement.host_of.emplace_back(w.host, strnlen(w.host, sizeof w.host));
    }
    return placement;
}

// The hosts' grid of coll_themis_topo_file; nullopt when none is given or it cannot be
// used (said once: every process reads the same parameter).
std::optional<HostGrid> host_grid() {
    if (params().topo_file == nullptr || params().topo_file[0] == '\0') return std::nullopt;
    try {
        return read_topo_file(params().topo_file);
    } catch (const std::exception &e) {
        static bool shown = false;
        if (!shown && mca_coll_themis_first_process())
            mca_coll_themis_show_help("topo-file", params().topo_file, e.what());
        shown = true;
        return std::nullopt;
    }
}

// Where dims=auto's grid of hosts comes from, first that applies (README, "Where the grid
// comes from"): coll_themis_dims given (no grid needed), coll_themis_topo_file, Slurm's
// switch tree; else none (node level x nodes). The same on every rank: the parameters are
// the same everywhere, and Slurm's variables are gathered and judged alike by all.
struct GridChoice {
    std::string source = "none"; // given | topo_file | slurm | none
    std::optional<HostGrid> grid;
    std::string why;    // none: why there is no grid
    bool slurm = false; // some rank has Slurm's variables (then no probing)
    long probes = -1;   // probe: probes measured (0: remembered)
    std::string kept;   // probe, remembered: "process" or "file" (coll_themis_calibration_file)
    double seconds = 0;
};

// Node x nodes, with the reason, said once per process to the user where it is a problem
// of the input (a malformed variable), and always in the grid event.
void slurm_problem(GridChoice &choice, const std::string &why) {
    choice.why = why;
    static bool shown = false;
    if (!shown && mca_coll_themis_first_process())
        mca_coll_themis_show_help("slurm-topology", why.c_str());
    shown = true;
}

// The hosts' grid from every rank's SLURM_TOPOLOGY_ADDR(_PATTERN): nodes are hosts (every
// rank of a host must name the same place); any rank's bad value gives no grid on every
// rank. Collective: two exchanges when any rank has the variables, one otherwise.
void grid_from_slurm_env(mca_coll_themis_module_t *m, const RankPlacement &placement,
                         GridChoice &choice) {
    const SlurmEnv &env = slurm_env();
    const std::string mine = env.set ? env.addr + '\n' + env.pattern : std::string();
    int in[2] = {env.set ? 1 : 0, int(mine.size()) + 1}, most[2] = {0, 0};
    setup_allreduce(m, in, most, 2, &ompi_mpi_int.dt, &ompi_mpi_op_max.op);
    if (most[0] == 0) return; // no rank runs under Slurm's topology plugin
    choice.slurm = true;
    const int size = int(placement.host_of.size()), width = most[1] + 1; // set flag, text
    std::vector<char> block(width, '\0'), all(size_t(width) * size);
    block[0] = env.set ? 1 : 0;
    std::copy(mine.begin(), mine.end(), block.begin() + 1);
    setup_allgather(m, block.data(), all.data(), width);
    choice.source = "none";
    std::map<std::string, std::pair<int, SlurmAddress>> by_host; // host -> first rank, place
    for (int r = 0; r < size; ++r) {
        const char *b = &all[size_t(r) * width];
        if (b[0] == 0) {
            slurm_problem(choice, "SLURM_TOPOLOGY_ADDR is set on some ranks only (not on rank " +
                                      std::to_string(r) + ")");
            return;
        }
        const std::string text(b + 1, strnlen(b + 1, width - 1));
        const size_t cut = text.find('\n');
        SlurmAddress address;
        try {
            address = parse_slurm_topology(text.substr(0, cut), text.substr(cut + 1));
        } catch (const SpecError &e) {
            slurm_problem(choice, "rank " + std::to_string(r) + ": " + e.what());
            return;
        }
        const std::string &host = placement.host_of[r];
        const auto known = by_host.emplace(host, std::make_pair(r, address));
        if (!known.second && (known.first->second.second.switches != address.switches ||
                              known.first->second.second.node != address.node)) {
            slurm_problem(choice, "ranks " + std::to_string(known.first->second.first) + " and " +
                                      std::to_string(r) + " on host " + host +
                                      " give different SLURM_TOPOLOGY_ADDR");
            return;
        }
    }
    if (by_host.size() < 2) {
        choice.why = "Slurm's switch tree places hosts, and this communicator has one host";
        return;
    }
    std::vector<std::string> hosts;
    std::vector<SlurmAddress> addresses;
    for (const auto &[host, place] : by_host) {
        hosts.push_back(host);
        addresses.push_back(place.second);
    }
    const GridResult found = grid_from_slurm(addresses);
    if (!found.found) {
        choice.why = "Slurm's switch tree: " + found.reason;
        return;
    }
    choice.source = "slurm";
    choice.grid = host_grid_of(found, hosts);
}

// The hosts' grid by probing (coll_themis_grid_probe.h), with at least 4 hosts and a budget.
void grid_by_probing(mca_coll_themis_module_t *m, const RankPlacement &placement,
                     GridChoice &choice) {
    const std::set<std::string> hosts(placement.host_of.begin(), placement.host_of.end());
    if (hosts.size() < 4) {
        choice.why += ", " + std::to_string(hosts.size()) +
                      (hosts.size() == 1 ? " host" : " hosts") + ": fewer than 4 to probe";
        return;
    }
    if (params().grid_probe_seconds <= 0) {
        choice.why += ", probing off (coll_themis_grid_probe_seconds=0)";
        return;
    }
    const ProbeOutcome probed =
        probe_grid(m, m->context->dup, placement.host_of, params().grid_probe_seconds);
    choice.probes = probed.kept == ProbeOutcome::Kept::No ? probed.grid.probes : 0;
    if (probed.kept != ProbeOutcome::Kept::No)
        choice.kept = probed.kept == ProbeOutcome::Kept::File ? "file" : "process";
    if (!probed.grid.found) {
        choice.why = "probing found no grid: " + probed.grid.reason;
        return;
    }
    std::vector<std::string> names(hosts.begin(), hosts.end());
    choice.source = "probe";
    choice.grid = host_grid_of(probed.grid, names);
}

GridChoice grid_choice(mca_coll_themis_module_t *m, const RankPlacement &placement) {
    const auto start = std::chrono::steady_clock::now();
    GridChoice choice;
    if (!is_auto(params().dims)) {
        choice.source = "given";
    } else if (params().topo_file != nullptr && params().topo_file[0] != '\0') {
        choice.grid = host_grid();
        if (choice.grid)
            choice.source = "topo_file";
        else
            choice.why = "the topology file cannot be used";
    } else {
        choice.why = "no topology file, no Slurm topology";
        grid_from_slurm_env(m, placement, choice);
        if (!choice.slurm) grid_by_probing(m, placement, choice);
    }
    choice.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return choice;
}

// The communicator's layout: from the grid's hosts where it fits the nodes, else node
// level x nodes (then `choice` says none, and why).
RankLayout layout_of(const RankPlacement &placement, GridChoice &choice, std::string &note) {
    if (choice.grid) {
        try {
            return make_rank_layout(params().dims, placement, &*choice.grid,
                                    params().split_packages);
        } catch (const LayoutError &e) {
            const std::string what = choice.source == "topo_file" ? "the topology file"
                                     : choice.source == "slurm"   ? "Slurm's switch tree"
                                                                  : "the probed grid";
            note = what + " does not fit this communicator (" + e.what() + "): node level x nodes";
            choice.why = what + " does not fit this communicator: " + e.what();
            choice.source = "none";
            choice.grid.reset();
        }
    }
    return make_rank_layout(params().dims, placement, nullptr, params().split_packages);
}

// The grid event (coll_themis_log.h) and its human line.
void report_grid(ompi_communicator_t *comm, const GridChoice &choice) {
    LogEvent event("grid");
    event.add("source", choice.source);
    std::string dims = choice.source == "given" ? std::string(params().dims) : "none", coords;
    if (choice.grid) {
        dims.clear();
        for (int n : choice.grid->sizes) dims += (dims.empty() ? "" : "x") + std::to_string(n);
        for (const auto &[host, c] : choice.grid->coords) {
            coords += (coords.empty() ? "" : ",") + host + ":";
            for (size_t d = 0; d < c.size(); ++d) coords += (d ? "." : "") + std::to_string(c[d]);
        }
    }
    event.add("dims", dims).add("seconds", choice.seconds, "%.3f");
    if (choice.probes >= 0) event.add("probes", (long long)choice.probes);
    if (!choice.kept.empty()) event.add("kept", choice.kept);
    if (choice.grid) event.add("coords", coords);
    if (!choice.grid && !choice.why.empty()) event.add("why", choice.why);
    event.emit(1, comm);
    if (choice.source == "given") return;
    static const std::map<std::string, std::string> from = {{"topo_file", "coll_themis_topo_file"},
                                                            {"slurm", "Slurm's switch tree"},
                                                            {"probe", "probing"}};
    say(1, comm,
        choice.grid ? "grid from " + from.at(choice.source) + ": " + dims + " hosts"
                    : "grid from nothing (" + choice.why + "): node level x nodes");
}

int active_dimensions(const Topology &topo) {
    int n = 0;
    for (const Dimension &d : topo.dims()) n += d.peers > 1;
    return n;
}

} // namespace

bool all_agree(mca_coll_themis_module_t *m, ompi_communicator_t *, bool ok) {
    int mine = ok ? 1 : 0, all = 0;
    setup_allreduce(m, &mine, &all, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op);
    return all == 1;
}

void Context::connect(mca_coll_themis_module_t *m) {
    // The info key themis_transport overrides coll_themis_transport per communicator.
    const int choice = info_choice("themis_transport", params().transport);
    const char *source = info("themis_transport").empty() ? "coll_themis_transport" : "info";
    transport_ = connect_transport({m, comm_, layout_, position_}, choice, source);
    // Tests make one rank fail here (test/mpi/odd_ranks_env.sh), as a UCX endpoint or an
    // allocation might: the ranks must still decline together.
    if (test_hooks().fail_connect)
        throw std::runtime_error("connect failed (THEMIS_TEST_FAIL_CONNECT is set)");
}

void Context::calibrate(mca_coll_themis_module_t *m, const std::vector<std::string> &host_of,
                        LogEvent &selected) {
    std::vector<std::string> host_at_position;
    for (int rank : layout_.rank_at) host_at_position.push_back(host_of[rank]);
    // The rates are measured on what the engine runs on: in device-direct mode with device
    // buffers, so the scheduler sees the IPC dimension's rate; else the single-copy node
    // dimensions where they run so.
    Transport &engine_transport = this->engine_transport();
    Memory *buffers = nullptr;
    std::string over = transport_name();
    if (node_transport_) { // the rates depend on which dimensions run single-copy
        std::string dims;
        for (int d = 0; d < layout_.topology.num_dims(); ++d)
            if (node_transport_->max_segments(d) > 0)
                dims += (dims.empty() ? "" : ",") + std::to_string(d);
        over = "cma" + dims + "+" + over;
    }
#if THEMIS_HAVE_CUDA
    if (device_transport_) {
        buffers = &cuda::device_memory();
        over = "cuda-ipc+" + over;
    }
#endif
    const CalibratedTopology rates = calibrated_topology(
        m, comm_, layout_, position_, engine_transport, buffers, over, host_at_position);
    layout_.topology = rates.topology;
    if (rates.seconds > 0)
        LogEvent("calibration")
            .add("seconds", rates.seconds, "%.3f")
            .add("connect_seconds", rates.connect_seconds, "%.3f")
            .add("mb_sent", double(rates.bytes_sent) / 1e6, "%.3g")
            .add("joint_slowdown", rates.joint_slowdown, "%.3f")
            .add("shared", rates.shared ? "yes" : "no")
            .add("joint_phases", rates.joint_phases)
            .emit(1, comm_);
    if (!rates.note.empty()) say(1, comm_, rates.note);
    engine_ = std::make_unique<Engine>(layout_.topology, engine_transport, memory_,
                                       params().max_active, params().max_active_bytes);
    refiner_ = make_refiner(m, comm_, rates);
    rates_kept_ = rates.kept;
    start_agreement_ = [m](const double *in, double *out, int n) {
        return start_refine_agreement(m, in, out, n);
    };
    busy_before_.assign(size_t(layout_.topology.num_dims()), 0.0);
    busy_measured_ = busy_before_;
    std::string levels;
    for (const std::string &name : layout_.level_names)
        levels += (levels.empty() ? "" : ",") + name;
    describe_rates(rates, selected);
    selected.add("levels", levels);
}

void Context::open_trace() {
    if (params().trace == nullptr || params().trace[0] == '\0') return;
    const std::string path = std::string(params().trace) + ".cid" +
                             std::to_string(themis_comm_id(comm_)) + ".rank" +
                             std::to_string(ompi_comm_rank(comm_)) + ".csv";
    trace_.open(path, std::ios::trunc);
    if (!trace_) {
        // Tracing is a diagnostic: the collectives run on without it. Every process has the
        // same prefix: the first one says it, once; the others at verbose level 1.
        const std::string why = std::strerror(errno);
        static bool shown = false;
        if (!shown && mca_coll_themis_first_process())
            mca_coll_themis_show_help("trace-unwritable", path.c_str(), why.c_str());
        shown = true;
        say(1, comm_, "cannot write the trace " + path + ": " + why);
        return;
    }
    write_stage_csv_header(trace_, true);
    say(1, comm_, "stage timings traced to " + path);
}

std::unique_ptr<Context> Context::create(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                         bool device_buffers) {
    RankLayout layout;
    RankPlacement placement;
    std::string why, note;
    std::string reason = "other_rank"; // why the communicator is declined, if it is
    bool ok = true;
    std::optional<GridChoice> grid;
    try {
        placement = placement_of(m, comm);
        grid = grid_choice(m, placement);
        layout = layout_of(placement, *grid, note);
    } catch (const SpecError &e) {
        ok = false;
        reason = "bad_dims";
        why = e.what();
        static bool shown = false; // every process has the same parameter: say it once
        if (!shown && mca_coll_themis_first_process())
            mca_coll_themis_show_help("bad-dims", params().dims, e.what());
        shown = true;
    } catch (const std::exception &e) {
        ok = false;
        reason = "layout";
        why = e.what();
    }
    // Whether every rank could run device-direct node dimensions (a CUDA application whose
    // set-up call carries device buffers: see SetUp in coll_themis_entry.h), agreed in the
    // same reduction as `ok`.
    bool cuda_here = false;
#if THEMIS_HAVE_CUDA
    cuda_here = device_buffers && cuda::ipc_candidate();
#else
    (void)device_buffers;
#endif
    int mine[2] = {ok ? 1 : 0, cuda_here ? 1 : 0}, all[2] = {0, 0};
    setup_allreduce(m, mine, all, 2, &ompi_mpi_int.dt, &ompi_mpi_op_min.op);
    const bool all_cuda = all[1] == 1;
    if (grid && all[0] == 1) report_grid(comm, *grid);
    if (all[0] == 1 && !params().single_dim && is_auto(params().dims) &&
        active_dimensions(layout.topology) < 2 && !all_cuda) {
        // Every rank holds the same layout: all decline together. With device buffers
        // (every rank a CUDA context) themis runs the node dimension itself, device-direct:
        // the previous module could only copy them to the host and back.
        all[0] = 0;
        reason = "one_dimension";
        why = "nothing for Themis to balance (coll_themis_single_dim=1 runs it anyway)";
    }
    if (all[0] != 1) {
        LogEvent declined("declined");
        declined.add("reason", reason);
        if (reason == "bad_dims") declined.add("dims", params().dims);
        if (reason == "one_dimension") declined.add("topology", layout.topology.to_spec());
        if (reason != "other_rank") declined.add("why", why);
        declined.emit(1, comm);
        return nullptr;
    }
    if (!note.empty()) say(1, comm, note);
    std::unique_ptr<Context> ctx(new Context(comm, std::move(layout)));
    // connect() runs its collectives first; what fails after them fails on some ranks only.
    std::string failure;
    try {
        ctx->connect(m);
    } catch (const std::exception &e) {
        failure = e.what();
    }
    if (!all_agree(m, comm, failure.empty())) {
        LogEvent declined("declined");
        declined.add("reason", "setup_failed")
            .add("where", failure.empty() ? "other_rank" : "here");
        if (!failure.empty()) declined.add("why", failure);
        declined.emit(1, comm);
        return nullptr;
    }
    ctx->setup_device_direct(m, placement.node_of, all_cuda);
    ctx->resolve_settings(); // the chunk count depends on device-direct mode
    if (!ctx->device_direct()) ctx->setup_node_transport(m, placement.node_of);
    // Every rank has a transport now: the rates are measured over it.
    LogEvent selected("selected");
    ctx->calibrate(m, placement.host_of, selected);
    selected.emit(1, comm);
    ctx->open_trace();
    return ctx;
}

void Context::setup_device_direct(mca_coll_themis_module_t *m, const std::vector<int> &node_of,
                                  bool all_cuda) {
#if THEMIS_HAVE_CUDA
    if (!all_cuda) return; // not a CUDA application everywhere: staged as before
    std::vector<bool> node_dims = node_local_dimensions(layout_, node_of);
    if (std::find(node_dims.begin(), node_dims.end(), true) == node_dims.end()) return;
    std::string why;
    // Every rank reaches this point (all_cuda and the layout are agreed): collective.
    if (!cuda::ipc_probe(m, comm_, layout_, position_, node_dims, cuda::ipc_candidate(), why)) {
        LogEvent("device_direct").add("ipc", "none").add("why", why).emit(1, comm_);
        static bool shown = false;
        if (!shown && mca_coll_themis_first_process() && params().cuda_ipc != THEMIS_CUDA_IPC_OFF)
            mca_coll_themis_show_help("cuda-ipc-unavailable", why.c_str());
        shown = true;
        return;
    }
    const bool moves_device = transport_moves_device();
    std::string failure;
    try {
        device_transport_ = cuda::make_ipc_transport(*transport_, node_dims, moves_device);
    } catch (const std::exception &e) {
        failure = e.what();
    }
    if (!all_agree(m, comm_, failure.empty())) { // all ranks in the same mode, or none
        device_transport_.reset();
        LogEvent("device_direct")
            .add("ipc", "none")
            .add("why", failure.empty() ? std::string("other_rank") : failure)
            .emit(1, comm_);
        return;
    }
    std::string dims;
    for (size_t d = 0; d < node_dims.size(); ++d)
        if (node_dims[d]) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    LogEvent("device_direct")
        .add("ipc", dims)
        .add("others", moves_device ? "transport" : "pinned")
        .emit(1, comm_);
#else
    (void)m;
    (void)node_of;
    (void)all_cuda;
#endif
}

void Context::setup_node_transport(mca_coll_themis_module_t *m, const std::vector<int> &node_of) {
    std::string failure;
    std::optional<LogEvent> said;
    try {
        const NodeTransportSetup setup{
            info_choice("themis_node_transport", params().node_transport),
            layout_,
            position_,
            node_of,
            *transport_,
            transport_name(),
            transport_moves_device(),
            request(Collective::AllReduce, sizeof(float), {(4u << 20) / sizeof(float)})};
        node_transport_ = node_transport(m, comm_, setup, said);
    } catch (const std::exception &e) {
        failure = e.what();
    }
    if (!all_agree(m, comm_, failure.empty())) { // every rank in the same mode
        node_transport_.reset();
        said = LogEvent("node_transport");
        said->add("cma", "none")
            .add("source", "failed")
            .add("where", failure.empty() ? "other_rank" : "here");
        if (!failure.empty()) said->add("why", failure);
    }
    if (said) said->emit(1, comm_);
}

Context *context_of(const mca_coll_themis_module_t *m) {
    return m->setup_state == THEMIS_SETUP_READY ? m->context->context.get() : nullptr;
}

} // namespace themis
