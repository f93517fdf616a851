// cuda/host_fallback.h: device buffers handed to the module below, which cannot take device
// memory: it runs on host copies, the results copied back to the device when it is done
// (coll_themis_entry.h uses these for every call themis does not run itself).
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <stdexcept>

#include "cuda/buffers.h"
#include "coll_themis_call.h"

namespace themis {
namespace cuda {

// Host copies of a call's device buffers for the module below, which cannot take device
// memory: the send and receive views, and how many receive elements go back after it.
struct HostCopies {
    std::unique_ptr<HostView> send, recv;
    size_t back = 0;
};

// A call the module below runs on host copies: complete once the module's request is (its
// own progress moves it), then the results go back to the device (Call::then). A
// nonblocking call's request is freed then; a persistent one's is left inactive for its
// next start.
inline void below_through_host(Call &call, ompi_request_t *inner,
                               std::shared_ptr<HostCopies> copies, bool persistent) {
    call.below(inner, persistent);
    call.then([copies] { copies->recv->copy_back(copies->back); });
}

// The module below's persistent request on host copies of a call's device buffers, made
// once at init; every start copies the device data in again and starts it.
class ThroughHostPersistent {
  public:
    // `init(send, recv, &request)` makes the module below's persistent request on `copies`;
    // throws if it fails.
    template <typename Init>
    static std::shared_ptr<ThroughHostPersistent> make(HostCopies copies, const Init &init) {
        auto held = std::make_shared<HostCopies>(std::move(copies));
        ompi_request_t *inner = nullptr;
        if (init(held->send->get(), held->recv->get(), &inner) != OMPI_SUCCESS)
            throw std::runtime_error("the previous module's persistent form failed");
        return std::make_shared<ThroughHostPersistent>(inner, std::move(held));
    }
    ThroughHostPersistent(ompi_request_t *inner, std::shared_ptr<HostCopies> copies)
        : inner_(inner), copies_(std::move(copies)) {}
    ~ThroughHostPersistent() { ompi_request_free(&inner_); }
    ThroughHostPersistent(const ThroughHostPersistent &) = delete;
    ThroughHostPersistent &operator=(const ThroughHostPersistent &) = delete;
    std::unique_ptr<Call> start() {
        copies_->send->refresh();
        copies_->recv->refresh(); // in place it holds the input
        auto call = std::make_unique<Call>();
        // An empty call may get a request that is complete from the start and cannot be
        // started (Open MPI's ompi_request_empty); MPI_Start leaves it as it is.
        if (inner_->req_start == nullptr) {
            call->finished(OMPI_SUCCESS);
            return call;
        }
        ompi_request_t *started = inner_;
        const int rc = inner_->req_start(1, &started); // what MPI_Start does
        if (rc != OMPI_SUCCESS)
            call->finished(rc, "MPI_Start failed");
        else
            below_through_host(*call, inner_, copies_, true);
        return call;
    }

  private:
    ompi_request_t *inner_;
    std::shared_ptr<HostCopies> copies_;
};
// The module below on host copies of a call's device buffers: `copies()` makes them,
// `below(send, recv, request)` runs its form there (blocking when request is null). `out`
// null: blocking, the results copied back before it returns; else *out becomes the call in
// flight. Throws where a copy fails.
template <typename Copies, typename Below>
int through_host(const Copies &copies, const Below &below, Call *out) {
    HostCopies host = copies();
    ompi_request_t *inner = nullptr;
    const int rc = below(host.send->get(), host.recv->get(), out ? &inner : nullptr);
    if (rc != OMPI_SUCCESS) return rc;
    if (out)
        below_through_host(*out, inner, std::make_shared<HostCopies>(std::move(host)), false);
    else
        host.recv->copy_back(host.back);
    return OMPI_SUCCESS;
}

} // namespace cuda
} // namespace themis
