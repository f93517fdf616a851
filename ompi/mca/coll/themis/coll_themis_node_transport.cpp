// coll_themis_node_transport.cpp: set-up of the single-copy node dimensions
// (see coll_themis_node_transport.h).
#include "coll_themis_node_transport.h"
#include "coll_themis_params.h"
#include "coll_themis_setup_task.h"

#include <unistd.h>

#include <cstdio>

#include "transports/cma_transport.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_op.h"
#include "transports/transport_choice.h"

namespace themis {

namespace {

std::string dimension_list(const std::vector<bool> &dims) {
    std::string out;
    for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d]) out += (out.empty() ? "" : ",") + std::to_string(d);
    return out;
}

// Collective: every rank reads a small buffer of each of its node peers through CMA and
// checks what it read; true on every rank when all could (else `why`).
bool peers_readable(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                    const RankLayout &layout, int position, const std::vector<bool> &node_dims,
                    bool candidate, std::string &why) {
    struct Probe {
        uint64_t pattern[4];
        uint64_t address;
        int32_t pid;
        int32_t ok;
    };
    const int me = ompi_comm_rank(comm);
    Probe mine{};
    for (uint64_t &v : mine.pattern) v = 0x746d6361ull ^ uint64_t(me);
    mine.address = uint64_t(reinterpret_cast<uintptr_t>(mine.pattern));
    mine.pid = int32_t(getpid());
    mine.ok = candidate ? 1 : 0;
    if (candidate) allow_peer_reads(); // before any peer tries
    std::vector<Probe> all(size_t(ompi_comm_size(comm)));
    setup_allgather(m, &mine, all.data(), int(sizeof mine));
    bool ok = candidate;
    if (!candidate) why = "this rank's transport is handed device memory";
    for (int rank : peer_ranks(layout, position, node_dims)) {
        if (!ok) break;
        const Probe &peer = all[size_t(rank)];
        uint64_t got[4] = {};
        ok = peer.ok && cma_read(peer.pid, reinterpret_cast<const void *>(uintptr_t(peer.address)),
                                 got, sizeof got, why);
        for (uint64_t v : got)
            if (ok && v != (0x746d6361ull ^ uint64_t(rank))) {
                ok = false;
                why = "a peer's memory read back wrong";
            }
        if (!peer.ok && why.empty()) why = "another rank's transport is handed device memory";
    }
    // Every peer is done reading `mine` once this returns on every rank.
    std::vector<double> failed = {ok ? 0.0 : 1.0};
    agree_max(m, comm, failed);
    if (failed[0] == 0) return true;
    if (ok) why = "another rank cannot read its node peers' memory";
    return false;
}

// Choices measured in this process, by process_key.
ProcessMemo<std::vector<bool>> measured_choices;

// Collective: per node dimension, single copy or not, measured (transport_choice.h);
// `note` gets the times.
std::vector<bool> measured_choice(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                  const NodeTransportSetup &setup,
                                  const std::vector<bool> &node_dims, std::string &note) {
    CmaTransport cma(setup.base, node_dims);
    TransportChoiceSettings settings;
    settings.request = setup.allreduce;
    settings.max_active = params().max_active;
    settings.max_active_bytes = params().max_active_bytes;
    OpReducer float_sum(&ompi_mpi_op_sum.op, &ompi_mpi_float.dt, sizeof(float));
    const std::vector<DimensionChoice> measured = choose_transports(
        setup.layout.topology, setup.position, setup.base, cma, node_dims, float_sum,
        [&](std::vector<double> &v) { agree_max(m, comm, v); }, settings);
    const double mib =
        double(setup.allreduce.block_counts[0] * setup.allreduce.element_size) / (1 << 20);
    std::vector<bool> chosen(node_dims.size(), false);
    note = "node transport measured:";
    for (size_t d = 0; d < node_dims.size(); ++d) {
        if (!node_dims[d]) continue;
        chosen[d] = measured[d].single_copy;
        char line[160];
        snprintf(line, sizeof line,
                 " dim %zu %s (%.3g MiB All-Reduce: cma %.3f ms, transport %.3f ms)", d,
                 chosen[d] ? "cma" : "transport", mib, measured[d].seconds_single_copy * 1e3,
                 measured[d].seconds_base * 1e3);
        note += line;
    }
    return chosen;
}

} // namespace

std::unique_ptr<Transport> node_transport(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                          const NodeTransportSetup &setup, std::string &note) {
    // Every rank decides alike, or the ranks would run different set-up collectives.
    std::vector<double> choice = {double(setup.choice), -double(setup.choice)};
    agree_max(m, comm, choice);
    if (choice[0] != -choice[1]) {
        note = "coll_themis_node_transport differs between ranks: node dimensions on the transport";
        return nullptr;
    }
    if (setup.choice == THEMIS_NODE_TRANSPORT) return nullptr;
    const RankLayout &layout = setup.layout;
    const std::vector<bool> node_dims = node_local_dimensions(layout, setup.node_of);
    if (dimension_list(node_dims).empty()) return nullptr;
    std::string why;
    if (!peers_readable(m, comm, layout, setup.position, node_dims, !setup.base_moves_device,
                        why)) {
        note = "node dimension(s) " + dimension_list(node_dims) + " on the transport: " + why;
        static bool shown = false; // asked for explicitly: say it once per job
        if (!shown && setup.choice == THEMIS_NODE_CMA && mca_coll_themis_first_process())
            mca_coll_themis_show_help("cma-unavailable", why.c_str());
        shown = true;
        return nullptr;
    }
    if (setup.choice == THEMIS_NODE_CMA) {
        note = "node dimension(s) " + dimension_list(node_dims) + " by cma (asked for)";
        return std::make_unique<CmaTransport>(setup.base, node_dims);
    }
    const std::string key = process_key(comm, layout, "node:" + setup.base_name);
    std::vector<bool> chosen = measured_choices.find(key);
    std::vector<double> missing = {chosen.empty() ? 1.0 : 0.0};
    agree_max(m, comm, missing);
    if (missing[0] == 0) {
        note = "node transport as measured before for these processes: dimension(s) " +
               (dimension_list(chosen).empty() ? "none" : dimension_list(chosen)) + " by cma";
    } else {
        chosen = measured_choice(m, comm, setup, node_dims, note);
        measured_choices.store(key, chosen);
    }
    if (dimension_list(chosen).empty()) return nullptr;
    return std::make_unique<CmaTransport>(setup.base, chosen);
}

} // namespace themis
