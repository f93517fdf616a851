// coll_themis_transports.cpp: the table of base transports and how each connects.
#include "coll_themis_transports.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "coll_themis_context.h"
#include "coll_themis_params.h"
#include "coll_themis_test_hooks.h"
#include "coll_themis_transport_pml.h"
#if THEMIS_HAVE_UCX
#include "coll_themis_ucx.h"
#endif

namespace themis {

namespace {

// In the order `auto` tries them; the last one always connects.
struct BaseTransport {
    const char *name; // as coll_themis_transport spells it
    int choice;       // its THEMIS_TRANSPORT_* value
};
const BaseTransport kBaseTransports[] = {
    {"ucx", THEMIS_TRANSPORT_UCX},
    {"pml", THEMIS_TRANSPORT_PML},
};

// This rank's least TCP eager size over its peers on dimension d (0 where one is not reached
// through TCP): a message's parts must be cut alike by sender and receiver.
long long least_eager(const TransportSite &site, int d) {
    const Topology &topo = site.layout.topology;
    size_t least = SIZE_MAX;
    for (int c = 0; c < topo.dim(d).peers; ++c)
        if (c != topo.coord(site.position, d))
            least = std::min(
                least, tcp_eager_bytes(site.comm,
                                       site.layout.rank_at[topo.with_coord(site.position, d, c)]));
    return least == SIZE_MAX ? 0 : (long long)least;
}

std::string parts_text(const std::vector<size_t> &parts) {
    std::string split; // the largest part per dimension that has parts
    for (int d = 0; d < int(parts.size()); ++d)
        if (parts[d] != 0)
            split +=
                (split.empty() ? "" : ",") + std::to_string(d) + ":" + std::to_string(parts[d]);
    return split.empty() ? "whole" : split;
}

} // namespace

const char *transport_row_name(int row) {
    for (const BaseTransport &t : kBaseTransports)
        if (t.choice == row) return t.name;
    return "auto";
}

TransportQuestion::TransportQuestion(const TransportSite &site, int choice, const char *source)
    : site_(site), choice_(choice), source_(source) {
    wants_ucx_ = choice == THEMIS_TRANSPORT_AUTO || choice == THEMIS_TRANSPORT_UCX;
    if (!wants_ucx_) return;
#if THEMIS_HAVE_UCX
    UcxWorker *worker = process_ucx_worker(ucx_why_);
    if (worker && themis_comm_id(site.comm) > kUcxMaxCommId) {
        ucx_why_ = "communicator id beyond the UCX tag layout";
        worker = nullptr;
    }
    if (worker) {
        ucx_address_ = worker->address();
        ucx_moves_device_ = worker->supports_cuda();
    }
#else
    ucx_why_ = "this build has no UCX transport (configured without UCX)";
#endif
}

const char *TransportQuestion::expected_row_name() const {
    return transport_row_name(wants_ucx_ && !ucx_address_.empty() ? THEMIS_TRANSPORT_UCX
                                                                  : THEMIS_TRANSPORT_PML);
}

void TransportQuestion::ask(Agreement &agreement, int dimensions) {
    const bool ucx_here = wants_ucx_ && !ucx_address_.empty();
    ucx_everywhere_ = agreement.all(ucx_here);
    ucx_no_device_ = agreement.all(!(ucx_here && ucx_moves_device_));
    ucx_address_bytes_ = agreement.max(double(ucx_address_.size()));
    same_message_bytes_ = agreement.same(uint64_t(params().pml_message_bytes));
    least_eager_.clear();
    const int dims = site_.layout.topology.num_dims();
    if (dims > dimensions) throw std::logic_error("more dimensions than the agreement's slots");
    for (int d = 0; d < dimensions; ++d)
        least_eager_.push_back(agreement.min(d < dims ? double(least_eager(site_, d)) : 0.0));
}

std::unique_ptr<Transport> TransportQuestion::connect_ucx_everywhere(const TransportSite &at,
                                                                     std::string &why) {
    // Every rank's address after its length, padded to the longest (agreed), in one round.
    const size_t longest = ucx_longest_;
    std::vector<char> mine(sizeof(uint32_t) + longest, '\0');
    const uint32_t length = uint32_t(ucx_address_.size());
    std::copy_n(reinterpret_cast<const char *>(&length), sizeof length, mine.begin());
    std::copy(ucx_address_.begin(), ucx_address_.end(), mine.begin() + sizeof length);
    const int n = ompi_comm_size(site_.comm);
    std::vector<char> all(mine.size() * size_t(n));
    gather_bytes(site_.m, mine.data(), all.data(), int(mine.size()));
    chosen_.addresses.assign(size_t(n), {});
    for (int r = 0; r < n; ++r) {
        const char *at = all.data() + mine.size() * size_t(r);
        uint32_t bytes = 0;
        std::copy_n(at, sizeof bytes, reinterpret_cast<char *>(&bytes));
        chosen_.addresses[size_t(r)].assign(at + sizeof bytes, at + sizeof bytes + bytes);
    }
    std::string failure;
    std::unique_ptr<Transport> transport;
    try {
        transport = connect_chosen(at, chosen_);
    } catch (const std::exception &e) {
        failure = e.what();
    }
    // Endpoints are made locally and may fail on some ranks: all run on UCX, or none.
    if (all_agree(site_.m, failure.empty())) return transport;
    why = failure.empty() ? "other_rank" : failure;
    return nullptr;
}

std::unique_ptr<Transport> TransportQuestion::settle(const Agreement &agreement,
                                                     const TransportSite &at, std::string &why) {
    said_.clear();
    chosen_ = BaseTransportChoice();
    std::unique_ptr<Transport> transport;
    LogEvent event("transport");
    if (agreement.holds(ucx_everywhere_)) {
        chosen_.row = THEMIS_TRANSPORT_UCX;
        ucx_longest_ = size_t(agreement.value(ucx_address_bytes_));
        transport = connect_ucx_everywhere(at, why);
        if (!transport) return nullptr;
        event.add("transport", "ucx")
            .add("asked", transport_row_name(choice_))
            .add("asked_by", source_);
        // Without CUDA support in this UCX, device buffers are staged through host memory.
        event.add("device_memory", ucx_moves_device_ ? "moved" : "staged");
    } else {
        chosen_.row = THEMIS_TRANSPORT_PML;
        const Topology &topo = site_.layout.topology;
        chosen_.parts.assign(size_t(topo.num_dims()), 0);
        if (!agreement.holds(same_message_bytes_)) {
            said_.push_back(LogEvent("mismatch")
                                .add("param", "coll_themis_pml_message_bytes")
                                .add("fallback", "whole_messages"));
        } else {
            const size_t fixed = params().pml_message_bytes;
            for (int d = 0; d < topo.num_dims(); ++d)
                chosen_.parts[size_t(d)] =
                    fixed != 0 ? fixed : size_t(agreement.value(least_eager_[size_t(d)]));
        }
        transport = connect_chosen(at, chosen_);
        event.add("transport", "pml")
            .add("asked", transport_row_name(choice_))
            .add("asked_by", source_);
        if (wants_ucx_) event.add("ucx_unusable", ucx_why_.empty() ? "other_rank" : ucx_why_);
        event.add("parts", parts_text(chosen_.parts));
    }
    said_.push_back(event);
    return transport;
}

bool TransportQuestion::moves_device(const Agreement &agreement) const {
    return chosen_.row == THEMIS_TRANSPORT_UCX && !agreement.holds(ucx_no_device_);
}

void check_connect(const TransportSite &site, const BaseTransportChoice &choice) {
    if (choice.row == THEMIS_TRANSPORT_UCX)
        connect_chosen(site, choice);
    else if (test_hooks().fail_connect)
        throw std::runtime_error("connect failed (THEMIS_TEST_FAIL_CONNECT is set)");
}

std::unique_ptr<Transport> connect_chosen(const TransportSite &site,
                                          const BaseTransportChoice &choice) {
    // Tests make one rank fail here (test/mpi/odd_ranks_env.sh), as a UCX endpoint or an
    // allocation might: the ranks must still decline together.
    if (test_hooks().fail_connect)
        throw std::runtime_error("connect failed (THEMIS_TEST_FAIL_CONNECT is set)");
    if (choice.row == THEMIS_TRANSPORT_UCX) {
#if THEMIS_HAVE_UCX
        std::string why;
        UcxWorker *worker = process_ucx_worker(why);
        if (!worker) throw std::runtime_error(why);
        return connect_ucx(site.comm, *worker, site.layout, site.position, choice.addresses);
#else
        throw std::logic_error("UCX chosen in a build without UCX");
#endif
    }
    return std::make_unique<PmlTransport>(site.m->context->dup, site.layout, site.position,
                                          choice.parts);
}

} // namespace themis
