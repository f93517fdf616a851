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

// What a row's connect gives: the transport on every rank, or nullptr on every rank; and
// a note for the message: a detail of the transport, or why this rank could not use it
// (empty where another rank could not).
struct Connected {
    std::unique_ptr<Transport> transport;
    std::string note;
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
    if (!all_agree(site.m, site.comm, worker != nullptr)) return {nullptr, why};
    return {connect_ucx(site.m, site.comm, *worker, site.layout, site.position),
            worker->supports_cuda() ? "moves CUDA device memory"
                                    : "no CUDA support in this UCX: device buffers would be "
                                      "staged through host memory"};
}
#else
// A build without UCX (configure --without-ucx): the same answer on every rank.
Connected connect_ucx_everywhere(const TransportSite &, bool) {
    return {nullptr, "this build has no UCX transport (configured without UCX)"};
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
        say(1, site.comm, "coll_themis_pml_message_bytes differs between ranks: whole messages");
        return parts;
    }
    for (int d = 0; d < topo.num_dims(); ++d) parts[d] = size_t(fixed != 0 ? fixed : all[2 + d]);
    return parts;
}

// Open MPI's PML on the private duplicate of the communicator: connects everywhere.
Connected connect_pml(const TransportSite &site, bool) {
    const std::vector<size_t> parts = pml_part_bytes(site);
    std::string split;
    for (int d = 0; d < int(parts.size()); ++d)
        if (parts[d] != 0) split += " " + std::to_string(d) + ":" + std::to_string(parts[d]);
    return {std::make_unique<PmlTransport>(site.m->context->dup, site.layout, site.position, parts),
            split.empty() ? "" : "messages in parts of at most, per dimension," + split};
}

// In the order `auto` tries them; the last one always connects.
const BaseTransport kBaseTransports[] = {
    {"ucx", THEMIS_TRANSPORT_UCX, connect_ucx_everywhere},
    {"pml", THEMIS_TRANSPORT_PML, connect_pml},
};

} // namespace

std::unique_ptr<Transport> connect_transport(const TransportSite &site, int choice,
                                             const char *source) {
    std::string reasons; // why the rows this rank wanted did not connect
    for (const BaseTransport &row : kBaseTransports) {
        const bool wanted = choice == THEMIS_TRANSPORT_AUTO || choice == row.choice;
        Connected c = row.connect(site, wanted);
        if (!c.transport) {
            if (wanted)
                reasons += std::string(row.name) + " not usable: " +
                           (c.note.empty() ? "not usable on another rank" : c.note) + "; ";
            continue;
        }
        if (choice == row.choice) reasons = std::string(source) + "=" + row.name + "; ";
        std::string why = reasons + c.note;
        if (c.note.empty() && !why.empty()) why.resize(why.size() - 2); // the last "; "
        say(1, site.comm,
            std::string("transport ") + row.name + (why.empty() ? "" : " (" + why + ")"));
        return std::move(c.transport);
    }
    throw std::logic_error("no transport connected (the last row always does)");
}

} // namespace themis
