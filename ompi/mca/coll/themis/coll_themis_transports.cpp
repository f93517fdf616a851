// coll_themis_transports.cpp: the table of base transports and how each connects.
#include "coll_themis_transports.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>

#include "ompi/op/op.h"
#include "opal/util/info.h"
#include "coll_themis_context.h"
#include "coll_themis_setup_task.h"
#include "coll_themis_transport_pml.h"
#if THEMIS_HAVE_UCX
#include "coll_themis_ucx.h"
#endif

namespace themis {

namespace {

// What a row's connect gives: the transport on every rank, or nullptr on every rank; why
// this rank could not use it (empty where another rank could not); and a detail of the
// transport for the event transport (coll_themis_log.h): a key and its value.
struct Connected {
    std::unique_ptr<Transport> transport;
    std::string why;
    const char *detail_key;
    std::string detail;
};

// connect(site, wanted) is collective: every rank runs it, also a rank whose choice names
// another row (`wanted` false: it takes part in the agreement only), so ranks given
// different choices still agree.
struct BaseTransport {
    const char *name; // as coll_themis_transport spells it
    int choice;       // its THEMIS_TRANSPORT_* value
    Connected (*connect)(const TransportSite &site, bool wanted);
};

#if THEMIS_HAVE_UCX
// Themis's own UCX UCP endpoints, where every rank has a worker (coll_themis_ucx.h).
Connected connect_ucx_everywhere(const TransportSite &site, bool wanted) {
    std::string why;
    UcxWorker *worker = wanted ? process_ucx_worker(why) : nullptr;
    if (worker && themis_comm_id(site.comm) > kUcxMaxCommId) {
        why = "communicator id beyond the UCX tag layout";
        worker = nullptr;
    }
    if (!all_agree(site.m, site.comm, worker != nullptr)) return {nullptr, why, nullptr, ""};
    // Without CUDA support in this UCX, device buffers are staged through host memory.
    return {connect_ucx(site.m, site.comm, *worker, site.layout, site.position), "",
            "device_memory", worker->supports_cuda() ? "moved" : "staged"};
}
#else
// A build without UCX (configure --without-ucx): the same answer on every rank.
Connected connect_ucx_everywhere(const TransportSite &, bool) {
    return {nullptr, "this build has no UCX transport (configured without UCX)", nullptr, ""};
}
#endif

// Per dimension, the largest message of the PML transport (collective; the same on every
// rank); 0 = whole messages.
std::vector<size_t> pml_part_bytes(const TransportSite &site) {
    // Sender and receiver must cut a message alike, or its parts would not match: one
    // reduction gives every rank the least and the greatest coll_themis_pml_message_bytes
    // (min of v and of -v) and, per dimension, the least TCP eager size over every rank's
    // peers there (0 where any is not reached through TCP).
    const Topology &topo = site.layout.topology;
    const long long fixed = (long long)params().pml_message_bytes;
    std::vector<long long> mine = {fixed, -fixed}, all(2 + topo.num_dims(), 0);
    for (int d = 0; d < topo.num_dims(); ++d) {
        size_t least = SIZE_MAX;
        for (int c = 0; c < topo.dim(d).peers; ++c)
            if (c != topo.coord(site.position, d))
                least = std::min(
                    least,
                    tcp_eager_bytes(site.comm,
                                    site.layout.rank_at[topo.with_coord(site.position, d, c)]));
        mine.push_back(least == SIZE_MAX ? 0 : (long long)least);
    }
    setup_allreduce(site.m, mine.data(), all.data(), int(mine.size()), &ompi_mpi_long_long_int.dt,
                    &ompi_mpi_op_min.op);
    std::vector<size_t> parts(topo.num_dims(), 0);
    if (all[0] != -all[1]) {
        LogEvent("mismatch")
            .add("param", "coll_themis_pml_message_bytes")
            .add("fallback", "whole_messages")
            .emit(1, site.comm);
        return parts;
    }
    for (int d = 0; d < topo.num_dims(); ++d) parts[d] = size_t(fixed != 0 ? fixed : all[2 + d]);
    return parts;
}

// Open MPI's PML on the private duplicate of the communicator: connects everywhere.
Connected connect_pml(const TransportSite &site, bool) {
    const std::vector<size_t> parts = pml_part_bytes(site);
    std::string split; // the largest part per dimension that has parts
    for (int d = 0; d < int(parts.size()); ++d)
        if (parts[d] != 0)
            split +=
                (split.empty() ? "" : ",") + std::to_string(d) + ":" + std::to_string(parts[d]);
    return {std::make_unique<PmlTransport>(site.m->context->dup, site.layout, site.position, parts),
            "", "parts", split.empty() ? "whole" : split};
}

// In the order `auto` tries them; the last one always connects.
const BaseTransport kBaseTransports[] = {
    {"ucx", THEMIS_TRANSPORT_UCX, connect_ucx_everywhere},
    {"pml", THEMIS_TRANSPORT_PML, connect_pml},
};

} // namespace

std::unique_ptr<Transport> connect_transport(const TransportSite &site, int choice,
                                             const char *source) {
    const char *asked = "auto";
    for (const BaseTransport &row : kBaseTransports)
        if (choice == row.choice) asked = row.name;
    // Why the rows this rank wanted did not connect: keys NAME_unusable of the event.
    std::vector<std::pair<std::string, std::string>> unusable;
    for (const BaseTransport &row : kBaseTransports) {
        const bool wanted = choice == THEMIS_TRANSPORT_AUTO || choice == row.choice;
        Connected c = row.connect(site, wanted);
        if (!c.transport) {
            if (wanted)
                unusable.emplace_back(std::string(row.name) + "_unusable",
                                      c.why.empty() ? "other_rank" : c.why);
            continue;
        }
        LogEvent event("transport");
        event.add("transport", row.name).add("asked", asked).add("asked_by", source);
        for (const auto &u : unusable) event.add(u.first.c_str(), u.second);
        if (c.detail_key) event.add(c.detail_key, c.detail);
        event.emit(1, site.comm);
        return std::move(c.transport);
    }
    throw std::logic_error("no transport connected (the last row always does)");
}

} // namespace themis
