// coll_themis_node_transport.cpp: set-up of the single-copy node dimensions
// (see coll_themis_node_transport.h).
#include "coll_themis_node_transport.h"
#include "coll_themis_params.h"

#include <unistd.h>

#include <cstdio>

#include "transports/cma_transport.h"
#include "calibration_file.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_op.h"
#include "fnv1a.h"
#include "transports/transport_choice.h"

namespace themis {

namespace {

std::string dimension_list(const std::vector<bool> &dims) {
    std::string out;
    for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d]) out += (out.empty() ? "" : ",") + std::to_string(d);
    return out;
}

// The event node_transport: which dimensions run by single copy ("none": none), and why.
LogEvent node_event(const std::vector<bool> &cma, const char *source) {
    const std::string dims = dimension_list(cma);
    LogEvent event("node_transport");
    event.add("cma", dims.empty() ? "none" : dims).add("source", source);
    return event;
}

uint64_t pattern_word(int rank) { return 0x746d6361ull ^ uint64_t(rank); }

// Choices measured in this process, by process_key.
ProcessMemo<std::vector<bool>> measured_choices;

uint64_t fingerprint(const std::vector<bool> &dims) {
    Fnv1a h;
    h.value(dims.size());
    for (bool d : dims) h.value(d);
    return h.digest();
}

// Collective: per node dimension, single copy or not, measured (transport_choice.h);
// `said` gets the event with the times.
std::vector<bool> measured_choice(mca_coll_themis_module_t *m, const NodeTransportSetup &setup,
                                  Transport &base, const std::vector<bool> &node_dims,
                                  const PlanRequest &allreduce, std::optional<LogEvent> &said) {
    CmaTransport cma(base, node_dims);
    TransportChoiceSettings settings;
    settings.request = allreduce;
    settings.max_active = params().max_active;
    settings.max_active_bytes = params().max_active_bytes;
    OpReducer float_sum(&ompi_mpi_op_sum.op, &ompi_mpi_float.dt, sizeof(float));
    const std::vector<DimensionChoice> measured = choose_transports(
        setup.layout.topology, setup.position, base, cma, node_dims, float_sum,
        [&](std::vector<double> &v) { agree_max(m, v); }, settings);
    const double mib = double(allreduce.block_counts[0] * allreduce.element_size) / (1 << 20);
    std::vector<bool> chosen(node_dims.size(), false);
    for (size_t d = 0; d < node_dims.size(); ++d)
        if (node_dims[d]) chosen[d] = measured[d].single_copy;
    said = node_event(chosen, "measured");
    said->add("allreduce_mib", mib, "%.3g");
    for (size_t d = 0; d < node_dims.size(); ++d) {
        if (!node_dims[d]) continue;
        const std::string dim = "dim" + std::to_string(d);
        said->add(dim.c_str(), chosen[d] ? "cma" : "transport")
            .add((dim + "_cma_ms").c_str(), measured[d].seconds_single_copy * 1e3, "%.3f")
            .add((dim + "_transport_ms").c_str(), measured[d].seconds_base * 1e3, "%.3f");
    }
    return chosen;
}

} // namespace

CmaOffer::Record CmaOffer::offer(int rank, bool wanted) {
    for (uint64_t &v : pattern) v = pattern_word(rank);
    Record record;
    record.address = uint64_t(reinterpret_cast<uintptr_t>(pattern));
    record.pid = int32_t(getpid());
    record.offered = wanted ? 1 : 0;
    if (wanted) allow_peer_reads(); // before any peer tries: they read after the first round
    return record;
}

NodeTransportQuestion::NodeTransportQuestion(ompi_communicator_t *comm,
                                             const NodeTransportSetup &setup,
                                             const std::vector<CmaOffer::Record> &records)
    : comm_(comm), setup_(setup) {
    if (setup.choice == THEMIS_NODE_TRANSPORT) return;
    node_dims_ = node_local_dimensions(setup.layout, setup.node_of);
    have_node_dims_ = !dimension_list(node_dims_).empty();
    if (!have_node_dims_) return;
    readable_ = true;
    for (int rank : peer_ranks(setup.layout, setup.position, node_dims_)) {
        const CmaOffer::Record &peer = records[size_t(rank)];
        uint64_t got[4] = {};
        if (!peer.offered) {
            why_ = "another rank's coll_themis_node_transport is transport";
            readable_ = false;
            break;
        }
        readable_ = cma_read(peer.pid, reinterpret_cast<const void *>(uintptr_t(peer.address)), got,
                             sizeof got, why_);
        for (uint64_t v : got)
            if (readable_ && v != pattern_word(rank)) {
                readable_ = false;
                why_ = "a peer's memory read back wrong";
            }
        if (!readable_) break;
    }
    if (setup.choice != THEMIS_NODE_AUTO) return;
    known_ = measured_choices.find(process_key(comm, setup.layout, "node:" + setup.base_name));
    if (known_.empty() && !calibration_file().empty())
        known_ =
            cached_node_choice(read_kept_entries(), file_key(), setup.layout.topology.num_dims())
                .value_or(std::vector<bool>());
    have_known_ = !known_.empty();
}

std::string NodeTransportQuestion::file_key() const {
    return node_choice_key(calibration_key(setup_.layout.topology, setup_.host_at_position),
                           setup_.base_name);
}

std::vector<bool> NodeTransportQuestion::expected() const {
    if (!readable_) return {};
    if (setup_.choice == THEMIS_NODE_CMA) return node_dims_;
    return have_known_ ? known_ : std::vector<bool>();
}

void NodeTransportQuestion::ask(Agreement &agreement) {
    same_choice_ = agreement.same(uint64_t(setup_.choice));
    readable_everywhere_ = agreement.all(readable_ || !have_node_dims_);
    same_known_ = agreement.same(have_known_ ? fingerprint(known_) : 0);
    all_known_ = agreement.all(have_known_);
}

std::unique_ptr<Transport> NodeTransportQuestion::settle(mca_coll_themis_module_t *m,
                                                         const Agreement &agreement,
                                                         Transport &base, bool base_moves_device,
                                                         const PlanRequest &allreduce,
                                                         std::optional<LogEvent> &said) {
    chosen_.clear();
    // Every rank decides alike, or the ranks would run different set-up collectives.
    if (!agreement.holds(same_choice_)) {
        said = LogEvent("mismatch");
        said->add("param", "coll_themis_node_transport").add("fallback", "transport");
        return nullptr;
    }
    if (setup_.choice == THEMIS_NODE_TRANSPORT || !have_node_dims_) return nullptr;
    if (base_moves_device || !agreement.holds(readable_everywhere_)) {
        const std::string why = base_moves_device ? "the transport is handed device memory"
                                : readable_ ? "another rank cannot read its node peers' memory"
                                            : why_;
        said = node_event({}, "unusable");
        said->add("node_dims", dimension_list(node_dims_)).add("why", why);
        // Asked for explicitly: said once per job.
        if (mca_coll_themis_first_time("cma-unavailable") && setup_.choice == THEMIS_NODE_CMA &&
            mca_coll_themis_first_process())
            mca_coll_themis_show_help("cma-unavailable", why.c_str());
        return nullptr;
    }
    if (setup_.choice == THEMIS_NODE_CMA) {
        said = node_event(node_dims_, "asked");
        chosen_ = node_dims_;
    } else if (agreement.holds(all_known_) && agreement.holds(same_known_)) {
        said = node_event(known_, "remembered");
        chosen_ = known_;
        measured_ = true;
    } else {
        measured_ = true;
        chosen_ = measured_choice(m, setup_, base, node_dims_, allreduce, said);
        measured_choices.store(process_key(comm_, setup_.layout, "node:" + setup_.base_name),
                               chosen_);
        if (!calibration_file().empty() && writes_for_node(comm_)) {
            try {
                write_node_choice(calibration_file(), file_key(), chosen_);
            } catch (const CalibrationFileError &e) {
                report_calibration_file_problem(e.what());
            }
        }
    }
    if (dimension_list(chosen_).empty()) return nullptr;
    return std::make_unique<CmaTransport>(base, chosen_);
}

LogEvent remembered_node_event(const std::vector<bool> &cma) {
    return node_event(cma, "remembered");
}

} // namespace themis
