// coll_themis_inherit.cpp: set-ups kept per group of processes (coll_themis_inherit.h).
#include "coll_themis_inherit.h"

#include <algorithm>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "coll_themis_agreement.h"
#include "coll_themis_context.h"
#include "coll_themis_node_transport.h"
#include "coll_themis_params.h"
#include "coll_themis_refine.h"
#include "coll_themis_private_dup.h"
#include "fnv1a.h"
#include "ompi/proc/proc.h"

namespace themis {

namespace {

struct Kept {
    GroupSetup setup;
    std::vector<Crossover::Decision> decisions;
};

// Threads may set communicators up at once.
std::mutex kept_lock;
std::map<GroupKey, Kept> &kept() {
    static std::map<GroupKey, Kept> all;
    return all;
}

std::optional<Kept> find(const GroupKey &key) {
    std::lock_guard<std::mutex> hold(kept_lock);
    const auto it = kept().find(key);
    if (it == kept().end()) return std::nullopt;
    return it->second;
}

// Every decision of `kept` that every rank must hold alike.
uint64_t fingerprint(const Kept &k) {
    const GroupSetup &s = k.setup;
    Fnv1a h;
    auto text = [&h](const std::string &t) {
        h.value(t.size());
        h.bytes(t.data(), t.size());
    };
    text(s.layout.topology.to_spec());
    for (int rank : s.layout.rank_at) h.value(rank);
    h.value(s.transport.row);
    for (size_t p : s.transport.parts) h.value(p);
    for (const std::vector<char> &a : s.transport.addresses) text(std::string(a.begin(), a.end()));
    for (bool d : s.cma) h.value(d);
    h.value(s.refine);
    for (RateSource r : s.rates.bandwidth_source) h.value(r);
    for (const Crossover::Decision &d : k.decisions) {
        h.value(d.collective);
        h.value(d.bin);
        h.value(d.runner);
    }
    return h.digest();
}

// Spares (see coll_themis_inherit.h), oldest first; under kept_lock.
struct Spare {
    GroupKey key;
    std::unique_ptr<Context> ctx;
    ompi_communicator_t *dup;
};
std::list<Spare> &spares() {
    static std::list<Spare> all;
    return all;
}
bool finalizing = false; // MPI_Finalize has begun: no spare is kept any more

void release(Spare &spare) {
    spare.ctx.reset(); // its transports use the duplicate
    if (spare.dup) ompi_comm_free(&spare.dup);
}

// MPI_COMM_SELF's attribute's deletion, the first thing MPI_Finalize does: every spare goes.
int drop_spares(MPI_Comm, int, void *, void *) {
    std::list<Spare> dropped;
    {
        std::lock_guard<std::mutex> hold(kept_lock);
        finalizing = true;
        dropped.swap(spares());
    }
    for (Spare &spare : dropped) release(spare);
    return MPI_SUCCESS;
}

// Once per process, inside a set-up (MPI is up): spares are dropped when MPI_Finalize begins.
void drop_spares_at_finalize() {
    static std::once_flag once;
    std::call_once(once, [] {
        int key = MPI_KEYVAL_INVALID;
        if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, drop_spares, &key, nullptr) ==
            MPI_SUCCESS)
            PMPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    });
}

// Takes `key`'s spare of the lowest private duplicate's id out of the spares, for one set-up's
// round to propose: a spare is never proposed by two set-ups at once (communicators of one
// group set up in different orders on different ranks), so where every rank proposes the same
// one, every rank takes it.
std::optional<Spare> reserve_spare(const GroupKey &key) {
    std::lock_guard<std::mutex> hold(kept_lock);
    auto lowest = spares().end();
    for (auto it = spares().begin(); it != spares().end(); ++it)
        if (it->key == key &&
            (lowest == spares().end() || themis_comm_id(it->dup) < themis_comm_id(lowest->dup)))
            lowest = it;
    if (lowest == spares().end()) return std::nullopt;
    Spare spare = std::move(*lowest);
    spares().erase(lowest);
    return spare;
}

void say_again(ompi_communicator_t *comm, const GroupSetup &s, const Context &ctx, bool spare) {
    GridChoice grid = s.grid; // found before: nothing measured now
    grid.seconds = 0;
    if (grid.probe) {
        grid.probes = 0;
        grid.kept = "process";
    }
    report_grid(comm, grid);
    if (!s.note.empty()) say(1, comm, s.note);
    if (spare)
        say(1, comm,
            "set up as an earlier communicator of these processes, whose context it took over");
    bool node_said = false;
    for (const LogEvent &e : s.said) {
        e.emit(1, comm);
        node_said = node_said || e.name() == "node_transport";
    }
    // A choice measured before is said as remembered.
    if (!node_said && std::find(s.cma.begin(), s.cma.end(), true) != s.cma.end())
        remembered_node_event(s.cma).emit(1, comm);
    LogEvent selected("selected");
    CalibratedTopology rates = s.rates;
    rates.topology = s.layout.topology;
    for (auto *sources : {&rates.bandwidth_source, &rates.latency_source, &rates.fill_source})
        for (RateSource &r : *sources)
            if (r == RateSource::Measured) r = RateSource::Cached; // measured before, kept
    describe_rates(rates, selected);
    selected.add("levels", ctx.levels()).emit(1, comm);
}

} // namespace

GroupKey group_key(ompi_communicator_t *comm, bool device_buffers) {
    std::ostringstream key;
    key << "t" << info_choice(comm, "themis_transport", params().transport) << " n"
        << info_choice(comm, "themis_node_transport", params().node_transport) << " d"
        << device_buffers;
    for (int r = 0; r < ompi_comm_size(comm); ++r) {
        const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        key << ' ' << proc->super.proc_name.jobid << ':' << proc->super.proc_name.vpid;
    }
    return key.str();
}

void remember_setup(const GroupKey &key, GroupSetup setup) {
    std::lock_guard<std::mutex> hold(kept_lock);
    Kept &k = kept()[key];
    k.setup = std::move(setup);
}

void keep_group_rates(const GroupKey &key, const Topology &revised) {
    std::lock_guard<std::mutex> hold(kept_lock);
    const auto it = kept().find(key);
    if (it != kept().end()) it->second.setup.layout.topology = revised;
}

void keep_group_decision(const GroupKey &key, int collective, size_t bytes,
                         Crossover::Runner runner) {
    std::lock_guard<std::mutex> hold(kept_lock);
    const auto it = kept().find(key);
    if (it == kept().end()) return;
    Crossover::Decision decision{collective, Crossover::bin_of(bytes), runner};
    for (Crossover::Decision &d : it->second.decisions)
        if (d.collective == decision.collective && d.bin == decision.bin) {
            d = decision;
            return;
        }
    it->second.decisions.push_back(decision);
}

Inheritance inherit(mca_coll_themis_module_t *m, ompi_communicator_t *comm, const GroupKey &key,
                    std::unique_ptr<Context> &ctx) {
    drop_spares_at_finalize();
    const std::optional<Kept> known = find(key);
    std::optional<Spare> spare;
    if (known) spare = reserve_spare(key);
    // 0 is the world communicator's id, never a private duplicate's.
    const uint32_t spare_id = spare ? themis_comm_id(spare->dup) : 0;
    // Whether this rank could connect: a transport that must make endpoints (UCX) makes them
    // now, where a failure can still be agreed on; the PML needs the private duplicate only.
    std::string failure;
    if (known) {
        try {
            const RankLayout &layout = known->setup.layout;
            check_connect({m, comm, layout, layout.position_of[size_t(ompi_comm_rank(comm))]},
                          known->setup.transport);
        } catch (const std::exception &e) {
            failure = e.what();
        }
    }
    Agreement agreement;
    const Agreement::Slot all_know = agreement.all(known.has_value());
    const Agreement::Slot same = agreement.same(known ? fingerprint(*known) : 0);
    const Agreement::Slot connects = agreement.all(failure.empty());
    const Agreement::Slot same_spare = agreement.same(spare_id);
    agreement.run_among(comm);
    const bool take = spare && agreement.holds(same_spare) && agreement.holds(all_know) &&
                      agreement.holds(same) && agreement.holds(connects);
    if (spare && !take) { // not every rank proposed it: it serves a later one
        ompi_communicator_t *dup = spare->dup;
        if (!keep_spare(spare->ctx, dup)) release(*spare);
        spare.reset();
    }
    if (!agreement.holds(all_know) || !agreement.holds(same)) return Inheritance::None;
    if (!agreement.holds(connects)) {
        // Held calls go below on the private duplicate (coll_themis_setup_task.h).
        m->context->dup = private_duplicate(comm);
        LogEvent declined("declined");
        declined.add("reason", "setup_failed")
            .add("where", failure.empty() ? "other_rank" : "here");
        if (!failure.empty()) declined.add("why", failure);
        declined.emit(1, comm);
        return Inheritance::Failed;
    }
    if (take) { // every rank takes the same spare
        m->context->dup = spare->dup;
        ctx = std::move(spare->ctx);
        ctx->rebind(m, comm, known->setup);
    } else {
        m->context->dup = private_duplicate(comm);
        ctx = Context::from_setup(m, comm, key, known->setup);
    }
    m->context->crossover.adopt(known->decisions);
    say_again(comm, known->setup, *ctx, take);
    ctx->open_trace();
    return Inheritance::Ready;
}

bool keep_spare(std::unique_ptr<Context> &ctx, ompi_communicator_t *&dup) {
    if (!dup || !ctx->idle()) return false;
    std::list<Spare> dropped;
    {
        std::lock_guard<std::mutex> hold(kept_lock);
        if (finalizing || kept().find(ctx->key()) == kept().end()) return false;
        std::list<Spare> &all = spares();
        all.push_back({ctx->key(), std::move(ctx), dup});
        dup = nullptr;
        // The oldest go beyond the bounds: of this group first, then of any.
        size_t of_group = 0;
        for (auto it = all.rbegin(); it != all.rend(); ++it) {
            if (it->key != all.back().key || ++of_group <= kSparesPerGroup) continue;
            dropped.push_back(std::move(*it));
            all.erase(std::next(it).base());
            break;
        }
        while (all.size() > kSpares) {
            dropped.push_back(std::move(all.front()));
            all.pop_front();
        }
    }
    for (Spare &spare : dropped) release(spare);
    return true;
}

} // namespace themis
