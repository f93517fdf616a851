// cuda/host_fallback.h: device buffers handed to the module below, which cannot take device
// memory: it runs on host copies, the results copied back to the device when it is done
// (coll_themis_entry.h uses these for every call themis does not run itself).
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <stdexcept>

#include "coll_themis_cuda.h"
#include "coll_themis_request.h"

namespace themis {
namespace cuda {

// Host copies of a call's device buffers for the module below, which cannot take device
// memory: the send and receive views, and how many receive elements go back after it.
struct HostCopies {
    std::unique_ptr<HostView> send, recv;
    size_t back = 0;
};

// A call the module below runs on host copies: complete once the module's request is (its
// own progress moves it), then the results go back to the device. A nonblocking call's
// request is freed then; a persistent one's is left inactive for its next start.
class ThroughHostCall : public PendingCall {
  public:
    ThroughHostCall(ompi_request_t *inner, std::shared_ptr<HostCopies> copies, bool persistent)
        : inner_(inner), copies_(std::move(copies)), persistent_(persistent) {}
    bool progress() override {
        if (!REQUEST_COMPLETE(inner_)) return false;
        const int rc = inner_->req_status.MPI_ERROR;
        if (persistent_) {
            int completed = 0; // complete: made inactive, as MPI_Test does
            ompi_request_test(&inner_, &completed, MPI_STATUS_IGNORE);
        } else {
            ompi_request_free(&inner_);
        }
        if (rc != OMPI_SUCCESS) throw std::runtime_error("the previous module's call failed");
        copies_->recv->copy_back(copies_->back);
        return true;
    }

  private:
    ompi_request_t *inner_;
    std::shared_ptr<HostCopies> copies_;
    bool persistent_;
};

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
    std::unique_ptr<PendingCall> start() {
        copies_->send->refresh();
        copies_->recv->refresh(); // in place it holds the input
        // An empty call may get a request that is complete from the start and cannot be
        // started (Open MPI's ompi_request_empty); MPI_Start leaves it as it is.
        if (inner_->req_start == nullptr) return std::make_unique<FinishedCall>(OMPI_SUCCESS);
        ompi_request_t *started = inner_;
        const int rc = inner_->req_start(1, &started); // what MPI_Start does
        if (rc != OMPI_SUCCESS) return std::make_unique<FinishedCall>(rc, "MPI_Start failed");
        return std::make_unique<ThroughHostCall>(inner_, copies_, true);
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
int through_host(const Copies &copies, const Below &below, std::unique_ptr<PendingCall> *out) {
    HostCopies host = copies();
    ompi_request_t *inner = nullptr;
    const int rc = below(host.send->get(), host.recv->get(), out ? &inner : nullptr);
    if (rc != OMPI_SUCCESS) return rc;
    if (out)
        *out = std::make_unique<ThroughHostCall>(
            inner, std::make_shared<HostCopies>(std::move(host)), false);
    else
        host.recv->copy_back(host.back);
    return OMPI_SUCCESS;
}

} // namespace cuda
} // namespace themis
