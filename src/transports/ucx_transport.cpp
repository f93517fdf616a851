// ucx_transport: UCP context, worker, endpoints and tagged messages (see ucx_transport.h).
#include "transports/ucx_transport.h"

#include <chrono>
#include <stdexcept>

namespace themis {

namespace {

// Stands for a send that UCP completed at once (ucp_tag_send_nbx returned NULL).
char completed_at_once;

void check(ucs_status_t status, const char *what) {
    if (status != UCS_OK)
        throw std::runtime_error(std::string("UCX ") + what + ": " + ucs_status_string(status));
}

Transport::Request request_of(ucs_status_ptr_t p, const char *what) {
    if (p == nullptr) return &completed_at_once;
    if (UCS_PTR_IS_ERR(p)) check(UCS_PTR_STATUS(p), what);
    return p;
}

// Closes an endpoint without flushing it, waiting at most a few seconds. Workers go
// away at MPI_Finalize, after Open MPI's fence: every collective has completed on every
// rank by then (a rank completes one only once its data has arrived), so nothing in
// flight is still needed, while peers may already have exited: a flush to them could
// only time out (UCX then prints "Endpoint timeout" errors).
void close_endpoint(ucp_worker_h worker, ucp_ep_h ep) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
    if (req == nullptr || UCS_PTR_IS_ERR(req)) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (ucp_request_check_status(req) == UCS_INPROGRESS &&
           std::chrono::steady_clock::now() < deadline)
        ucp_worker_progress(worker);
    ucp_request_free(req);
}

} // namespace

std::unique_ptr<UcxWorker> UcxWorker::create(std::string &why) {
    std::unique_ptr<UcxWorker> w(new UcxWorker);
    try {
        ucp_config_t *config = nullptr;
        check(ucp_config_read(nullptr, nullptr, &config), "reading the configuration");
        ucp_params_t params{};
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features = UCP_FEATURE_TAG;
        ucs_status_t status = ucp_init(&params, config, &w->context_);
        ucp_config_release(config);
        check(status, "ucp_init");

        ucp_worker_params_t wparams{};
        wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        check(ucp_worker_create(w->context_, &wparams, &w->worker_), "ucp_worker_create");

        ucp_address_t *addr = nullptr;
        size_t len = 0;
        check(ucp_worker_get_address(w->worker_, &addr, &len), "ucp_worker_get_address");
        w->address_.assign(reinterpret_cast<char *>(addr), reinterpret_cast<char *>(addr) + len);
        ucp_worker_release_address(w->worker_, addr);

        ucp_context_attr_t attr{};
        attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
        check(ucp_context_query(w->context_, &attr), "ucp_context_query");
        w->cuda_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    } catch (const std::exception &e) {
        why = e.what();
        return nullptr;
    }
    return w;
}

UcxWorker::~UcxWorker() {
    for (auto &kv : endpoints_) close_endpoint(worker_, kv.second);
    if (worker_) ucp_worker_destroy(worker_);
    if (context_) ucp_cleanup(context_);
}

ucp_ep_h UcxWorker::endpoint(const std::vector<char> &remote) {
    auto it = endpoints_.find(remote);
    if (it != endpoints_.end()) return it->second;
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t *>(remote.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucp_ep_h ep = nullptr;
    check(ucp_ep_create(worker_, &params, &ep), "ucp_ep_create");
    endpoints_.emplace(remote, ep);
    return ep;
}

UcxTransport::UcxTransport(UcxWorker &worker, const Topology &topo, int my_position,
                           std::vector<ucp_ep_h> endpoint_at, uint64_t comm_id,
                           std::function<void()> idle)
    : worker_(worker), topo_(topo), my_position_(my_position), endpoint_at_(std::move(endpoint_at)),
      comm_id_(comm_id), idle_(std::move(idle)) {
    if (comm_id > kUcxMaxCommId || topo.size() > kUcxMaxPositions || topo.num_dims() > kUcxMaxDims)
        throw std::invalid_argument("communicator outside the UCX tag layout");
}

ucp_tag_t UcxTransport::make_tag(uint64_t comm_id, int sender, int dim, int tag) {
    return (comm_id << 44) | (uint64_t(sender) << 24) | (uint64_t(dim) << kTagBits) | uint64_t(tag);
}

Transport::Request UcxTransport::isend(int dim, int peer, const void *buf, size_t bytes, int tag) {
    const int dst = topo_.with_coord(my_position_, dim, peer);
    ucp_request_param_t param{};
    return request_of(ucp_tag_send_nbx(endpoint_at_.at(dst), buf, bytes,
                                       make_tag(comm_id_, my_position_, dim, tag), &param),
                      "tag send");
}

Transport::Request UcxTransport::irecv(int dim, int peer, void *buf, size_t bytes, int tag) {
    const int src = topo_.with_coord(my_position_, dim, peer);
    ucp_request_param_t param{};
    return request_of(ucp_tag_recv_nbx(worker_.worker(), buf, bytes,
                                       make_tag(comm_id_, src, dim, tag), ~ucp_tag_t(0), &param),
                      "tag receive");
}

void UcxTransport::progress() {
    if (worker_.progress() == 0 && idle_) idle_();
}

bool UcxTransport::test(Request req) {
    if (req == &completed_at_once) return true;
    ucs_status_t status = ucp_request_check_status(req);
    if (status == UCS_INPROGRESS) return false;
    ucp_request_free(req);
    check(status, "transfer");
    return true;
}

} // namespace themis
