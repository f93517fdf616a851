// ucx_transport: themis::Transport on UCX UCP directly, beside Open MPI's own traffic.
//
// One UcxWorker per process (a UCP context and worker of its own, so its tags can never
// meet pml/ucx's); endpoints are created on demand, only to the peers a rank's
// dimension groups need, and kept until the worker goes. A UcxTransport serves one
// communicator: its 64-bit tags carry the communicator's id, the sender's position,
// the dimension and the engine's tag, so collectives of different communicators and
// senders never match each other:
//
//   bits 63..44  communicator id   43..24  sender position   23..20  dimension
//   bits 19..0   engine tag
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ucp/api/ucp.h>

#include "topology.h"
#include "transport.h"

namespace themis {

class UcxWorker {
  public:
    // nullptr, with the reason in `why`, when UCX cannot start here.
    static std::unique_ptr<UcxWorker> create(std::string &why);
    ~UcxWorker();
    UcxWorker(const UcxWorker &) = delete;
    UcxWorker &operator=(const UcxWorker &) = delete;

    // This worker's address, to be handed to the peers.
    const std::vector<char> &address() const { return address_; }
    // The endpoint to the worker at `remote` (created on first use).
    ucp_ep_h endpoint(const std::vector<char> &remote);
    // True when UCX can move CUDA device memory directly.
    bool supports_cuda() const { return cuda_; }
    // Number of events processed.
    unsigned progress() { return ucp_worker_progress(worker_); }
    ucp_worker_h worker() const { return worker_; }

  private:
    UcxWorker() = default;
    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    std::vector<char> address_;
    std::map<std::vector<char>, ucp_ep_h> endpoints_;
    bool cuda_ = false;
};

// Limits of the tag layout above.
constexpr uint64_t kUcxMaxCommId = (uint64_t(1) << 20) - 1;
constexpr int kUcxMaxPositions = 1 << 20;
constexpr int kUcxMaxDims = 16;

class UcxTransport : public Transport {
  public:
    // `endpoint_at[p]`: endpoint to the rank at position p (null where unused).
    // `idle` runs when the worker had nothing to do (e.g. the host's progress engine,
    // which yields the CPU when processes outnumber cores).
    UcxTransport(UcxWorker &worker, const Topology &topo, int my_position,
                 std::vector<ucp_ep_h> endpoint_at, uint64_t comm_id,
                 std::function<void()> idle = {});
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override;
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override;
    bool test(Request req) override;
    void progress() override;
    const char *name() const override { return "ucx"; }
    bool moves_device_memory() const override { return worker_.supports_cuda(); }

    static ucp_tag_t make_tag(uint64_t comm_id, int sender, int dim, int tag);

  private:
    UcxWorker &worker_;
    Topology topo_;
    int my_position_;
    std::vector<ucp_ep_h> endpoint_at_;
    uint64_t comm_id_;
    std::function<void()> idle_;
};

} // namespace themis
