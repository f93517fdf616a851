// coll_themis_setup.cpp: setting a communicator up, from its first eligible call on:
// where its ranks run, its layout, transports, calibration, device-direct and single-copy
// node dimensions; all ranks agree or all decline (see coll_themis_context.h). It runs
// inside a set-up task (coll_themis_setup_task.h): every collective step here is one of
// the task's rounds on the private duplicate, and every wait steps aside.
//
// A communicator whose processes a set-up in this process has seen before, in the same order
// and with the same choices, takes what that set-up found in one round
// (coll_themis_inherit.h). Any other goes through two (coll_themis_agreement.h):
//   1. every rank's record to every rank: where it runs (node, package, host), Slurm's
//      topology variables, the pattern its node peers read to check single copy, whether it
//      could run device-direct node dimensions;
//   2. from those, every rank finds the hosts' grid and lays the communicator out, reads its
//      node peers' patterns, looks up what this process or the calibration file knows (the
//      grid probed before, the node transport chosen, the rates), and one reduction agrees on
//      all of it: that every layout is the same, the transport, the parameters that must be
//      alike, and whether what each rank knows is what every rank knows.
// Only where the ranks do not know the same does a step measure, with rounds of its own:
// probing the hosts' grid (then the second round again), choosing the node transport by
// measurement, calibrating the rates; UCX adds two (addresses, endpoints) and device-direct
// node dimensions their probe (CUDA).
#include "coll_themis_context.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "ompi/mca/coll/base/base.h"
#include "ompi/proc/proc.h"
#include "opal/util/show_help.h"
#include "coll_themis_agreement.h"
#include "coll_themis_calibrate.h"
#include "cuda/buffers.h"
#include "cuda/ipc.h"
#include "coll_themis_grid_probe.h"
#include "coll_themis_grid_source.h"
#include "coll_themis_inherit.h"
#include "coll_themis_node_transport.h"
#include "coll_themis_refine.h"
#include "coll_themis_private_dup.h"
#include "coll_themis_test_hooks.h"
#include "coll_themis_transports.h"
#include "fnv1a.h"
#include "node_packages.h"

#include <unistd.h>

namespace themis {

namespace {

bool is_auto(const std::string &dims) { return dims.compare(0, 4, "auto") == 0; }

// The most dimensions a layout may have: the second round's per-dimension values take this
// many slots on every rank, whatever layout each one found.
constexpr int kMaxDimensions = 16;

// What every rank tells the others in the set-up's first round.
struct PeerRecord {
    int32_t node = 0;     // an id shared by exactly the ranks of a node: the lowest of them
    int32_t package = -1; // its package (socket) within the node; -1 unknown
    char host[64] = {};
    CmaOffer::Record cma;
    int32_t cuda_ipc = 0; // a CUDA application that could run device-direct node dimensions
    SlurmRecord slurm;
};

PeerRecord my_record(ompi_communicator_t *comm, CmaOffer &cma, bool device_buffers) {
    PeerRecord mine;
    const int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    mine.node = me;
    for (int r = 0; r < size; ++r)
        if (r == me || OPAL_PROC_ON_LOCAL_NODE(ompi_comm_peer_lookup(comm, r)->super.proc_flags)) {
            mine.node = r;
            break;
        }
    mine.package = params().split_packages ? current_package() : -1;
    gethostname(mine.host, sizeof mine.host - 1);
    mine.cma = cma.offer(me, info_choice(comm, "themis_node_transport", params().node_transport) !=
                                 THEMIS_NODE_TRANSPORT);
    mine.cuda_ipc = device_buffers && cuda::ipc_candidate();
    mine.slurm = my_slurm_record();
    return mine;
}

RankPlacement placement_of(const std::vector<PeerRecord> &records) {
    RankPlacement placement;
    for (const PeerRecord &r : records) {
        placement.node_of.push_back(r.node);
        placement.package_of.push_back(r.package);
        placement.host_of.emplace_back(r.host, strnlen(r.host, sizeof r.host));
    }
    return placement;
}

int active_dimensions(const Topology &topo) {
    int n = 0;
    for (const Dimension &d : topo.dims()) n += d.peers > 1;
    return n;
}

uint64_t layout_fingerprint(const RankLayout &layout) {
    Fnv1a h;
    const std::string spec = layout.topology.to_spec();
    h.bytes(spec.data(), spec.size());
    for (int rank : layout.rank_at) h.value(rank);
    return h.digest();
}

// This rank's layout, or why there is none: the reason the communicator is declined for.
struct LayoutAttempt {
    RankLayout layout; // empty (no dimension) when it failed
    bool ok = false;
    std::string reason, why, note;
};

LayoutAttempt lay_out(const RankPlacement &placement, GridChoice &grid) {
    LayoutAttempt attempt;
    try {
        attempt.layout = layout_of(placement, grid, attempt.note);
        if (attempt.layout.topology.num_dims() > kMaxDimensions)
            throw LayoutError("more than " + std::to_string(kMaxDimensions) + " dimensions");
        attempt.ok = true;
    } catch (const SpecError &e) {
        attempt.reason = "bad_dims";
        attempt.why = e.what();
        // Every process has the same parameter: said once.
        if (mca_coll_themis_first_time("bad-dims") && mca_coll_themis_first_process())
            mca_coll_themis_show_help("bad-dims", params().dims, e.what());
    } catch (const std::exception &e) {
        attempt.reason = "layout";
        attempt.why = e.what();
    }
    if (!attempt.ok) attempt.layout = RankLayout();
    return attempt;
}

// The name the rates are kept under for what the engine runs on: the base transport, the
// dimensions that run single-copy, device-direct mode (rates over one say nothing of another).
std::string rates_transport_name(const char *base, const std::vector<bool> &cma, bool device) {
    std::string over = base, dims;
    for (size_t d = 0; d < cma.size(); ++d)
        if (cma[d]) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    if (!dims.empty()) over = "cma" + dims + "+" + over;
    return device ? "cuda-ipc+" + over : over;
}

void decline(ompi_communicator_t *comm, const std::string &reason, const std::string &why,
             const RankLayout &layout) {
    LogEvent declined("declined");
    declined.add("reason", reason);
    if (reason == "bad_dims") declined.add("dims", params().dims);
    if (reason == "one_dimension") declined.add("topology", layout.topology.to_spec());
    if (reason != "other_rank" && !why.empty()) declined.add("why", why);
    declined.emit(1, comm);
}

} // namespace

std::unique_ptr<Context> Context::create(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                         bool device_buffers) {
    const GroupKey key = group_key(comm, device_buffers);
    std::unique_ptr<Context> inherited;
    switch (inherit(m, comm, key, inherited)) {
    case Inheritance::Ready: return inherited;
    case Inheritance::Failed: return nullptr;
    case Inheritance::None: break;
    }
    m->context->dup = private_duplicate(comm);

    // Round 1: every rank's record. `cma` stays here, where node peers read it, until round 2.
    CmaOffer cma;
    const std::vector<PeerRecord> records = gather(m, my_record(comm, cma, device_buffers));
    const RankPlacement placement = placement_of(records);
    const auto grid_start = std::chrono::steady_clock::now();
    GridChoice grid = choose_grid(placement, [&] {
        std::vector<SlurmRecord> slurm;
        for (const PeerRecord &r : records) slurm.push_back(r.slurm);
        return slurm;
    }());
    bool probed = false;
    const int me = ompi_comm_rank(comm);
    const bool cuda_here = records[size_t(me)].cuda_ipc != 0;

    for (;;) {
        LayoutAttempt attempt = lay_out(placement, grid);
        const RankLayout &layout = attempt.layout;
        const int position = attempt.ok ? layout.position_of[size_t(me)] : 0;

        // Round 2: everything the layout leads to, asked at once.
        const TransportSite site{m, comm, layout, position};
        const char *transport_source =
            info(comm, "themis_transport").empty() ? "coll_themis_transport" : "info";
        TransportQuestion transport(site, info_choice(comm, "themis_transport", params().transport),
                                    transport_source);
        std::vector<std::string> host_at_position;
        for (int rank : layout.rank_at) host_at_position.push_back(placement.host_of[size_t(rank)]);
        const NodeTransportSetup node_setup{
            info_choice(comm, "themis_node_transport", params().node_transport),
            layout,
            position,
            placement.node_of,
            transport.expected_row_name(),
            host_at_position};
        NodeTransportQuestion node(comm, node_setup, [&] {
            std::vector<CmaOffer::Record> offers;
            for (const PeerRecord &r : records) offers.push_back(r.cma);
            return offers;
        }());
        const std::string expected_over =
            rates_transport_name(transport.expected_row_name(), node.expected(), false);
        RatesQuestion rates(comm, layout, expected_over, host_at_position);
        RefineQuestion refine;

        Agreement agreement;
        const Agreement::Slot layout_ok = agreement.all(attempt.ok);
        const Agreement::Slot same_layout =
            agreement.same(attempt.ok ? layout_fingerprint(layout) : 0);
        const Agreement::Slot all_cuda = agreement.all(cuda_here);
        const Agreement::Slot grid_known = agreement.all(!grid.probe || grid.known);
        const Agreement::Slot same_grid = agreement.same(grid.fingerprint());
        const Agreement::Slot connects = agreement.all(!test_hooks().fail_connect);
        const Agreement::Slot same_over = agreement.same(Fnv1a::of(expected_over));
        transport.ask(agreement, kMaxDimensions);
        node.ask(agreement);
        rates.ask(agreement);
        refine.ask(agreement);
        agreement.run(m);

        if (!agreement.holds(layout_ok)) {
            decline(comm, attempt.ok ? "other_rank" : attempt.reason, attempt.why, layout);
            return nullptr;
        }
        if (grid.probe && !probed &&
            (!agreement.holds(grid_known) || !agreement.holds(same_grid))) {
            // Some rank knows no grid for these hosts, or not the one the others know:
            // every rank probes, then lays out again.
            const ProbeOutcome outcome =
                probe_grid(m, m->context->dup, placement.host_of, params().grid_probe_seconds);
            set_probed(grid, outcome.grid, ProbeOutcome::Kept::No, placement);
            probed = true;
            continue;
        }
        if (!agreement.holds(same_layout)) {
            decline(comm, "layout",
                    "the ranks' layouts differ (a topology file that differs between hosts?)",
                    layout);
            return nullptr;
        }
        grid.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - grid_start).count();
        report_grid(comm, grid);
        if (!params().single_dim && is_auto(params().dims) &&
            active_dimensions(layout.topology) < 2 && !agreement.holds(all_cuda)) {
            // Every rank holds the same layout: all decline together. With device buffers
            // (every rank a CUDA context) themis runs the node dimension itself, device-direct:
            // the previous module could only copy them to the host and back.
            decline(comm, "one_dimension",
                    "nothing for Themis to balance (coll_themis_single_dim=1 runs it anyway)",
                    layout);
            return nullptr;
        }
        if (!agreement.holds(connects)) {
            LogEvent declined("declined");
            declined.add("reason", "setup_failed")
                .add("where", test_hooks().fail_connect ? "here" : "other_rank");
            if (test_hooks().fail_connect)
                declined.add("why", "connect failed (THEMIS_TEST_FAIL_CONNECT is set)");
            declined.emit(1, comm);
            return nullptr;
        }
        if (!attempt.note.empty()) say(1, comm, attempt.note);

        std::unique_ptr<Context> ctx(new Context(m, comm, layout, key));
        GroupSetup outcome;
        outcome.placement = placement;
        outcome.grid = grid;
        std::string why;
        std::unique_ptr<Transport> base =
            transport.settle(agreement, {m, comm, ctx->layout_, ctx->position_}, why);
        if (!base) {
            LogEvent("declined")
                .add("reason", "setup_failed")
                .add("where", why == "other_rank" ? "other_rank" : "here")
                .add("why", why)
                .emit(1, comm);
            return nullptr;
        }
        ctx->adopt_transport(std::move(base));
        for (const LogEvent &e : transport.said()) e.emit(1, comm);
        outcome.said = transport.said();
        outcome.transport = transport.chosen();
        ctx->device_transport_ =
            cuda::device_direct_transport(m, comm, ctx->layout_, ctx->position_, placement.node_of,
                                          agreement.holds(all_cuda), *ctx->transport_);
        // The parameters and info keys this communicator plans with.
        ctx->settings_.resolve(comm, ctx->position_);
        std::optional<LogEvent> node_said;
        if (!ctx->device_direct())
            ctx->node_transport_ = node.settle(
                m, agreement, *ctx->transport_, transport.moves_device(agreement),
                ctx->request(Collective::AllReduce, sizeof(float), {(4u << 20) / sizeof(float)}),
                node_said);
        if (node_said) {
            node_said->emit(1, comm);
            // A choice measured now is remembered by inheritors; what was asked for, or why
            // none, they say as it was said.
            if (!node.measured()) outcome.said.push_back(*node_said);
        }
        outcome.cma = node.chosen();
        // Every rank has its transports now: the rates are measured over them.
        const std::string over =
            rates_transport_name(ctx->transport_name(), node.chosen(), ctx->device_direct());
        Memory *buffers = cuda::engine_memory(ctx->device_direct());
        CalibratedTopology measured;
        if (over == expected_over && agreement.holds(same_over)) {
            measured = rates.settle(m, agreement, position, ctx->engine_transport(), buffers);
        } else {
            RatesQuestion again(comm, layout, over, host_at_position);
            measured = again.settle_alone(m, position, ctx->engine_transport(), buffers);
        }
        std::optional<LogEvent> refine_said;
        ctx->start_engine(measured, refine.settle(agreement, measured, refine_said));
        if (refine_said) {
            refine_said->emit(1, comm);
            outcome.said.push_back(*refine_said);
        }
        outcome.refine = ctx->refinement_.on() || !refine_said;
        if (measured.seconds > 0)
            LogEvent("calibration")
                .add("seconds", measured.seconds, "%.3f")
                .add("connect_seconds", measured.connect_seconds, "%.3f")
                .add("mb_sent", double(measured.bytes_sent) / 1e6, "%.3g")
                .add("joint_slowdown", measured.joint_slowdown, "%.3f")
                .add("shared", measured.shared ? "yes" : "no")
                .add("joint_phases", measured.joint_phases)
                .emit(1, comm);
        if (!measured.note.empty()) say(1, comm, measured.note);
        LogEvent selected("selected");
        describe_rates(measured, selected);
        selected.add("levels", ctx->levels()).emit(1, comm);
        ctx->open_trace();
        outcome.rates = measured;
        outcome.layout = ctx->layout_;
        outcome.note = attempt.note;
        outcome.memory = ctx->memory_;
        if (!ctx->device_direct()) remember_setup(key, std::move(outcome));
        return ctx;
    }
}

Context *context_of(const mca_coll_themis_module_t *m) {
    return m->setup_state == THEMIS_SETUP_READY ? m->context->context.get() : nullptr;
}

} // namespace themis
