// cuda/ipc_transport.cpp: the engine's transport in device-direct mode
// (make_ipc_transport, see cuda/ipc.h): node dimensions by CUDA IPC, network
// dimensions through the wrapped transport.
#include "cuda/ipc.h"

#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "cuda/buffers.h"
#include "transports/control_channels.h"
#include "cuda/driver.h"
#include "cuda/events.h"
#include "cuda/ipc_handles.h"

namespace themis {
namespace cuda {

namespace {

// ---------------------------------------------------------------------------------------
// The wire: one control message per direction and message (control_channels.h), a
// ControlHeader's magic and kind first.

enum : uint32_t { kMagic = 0x74686d69u, kReady = 1, kDone = 2 };

struct Control {
    uint32_t magic = kMagic;
    uint32_t kind = 0;
    int32_t pid = 0;
    int32_t status = 0; // kDone: 0, or the receiver failed (the sender fails too)
    uint64_t bytes = 0;
    uint64_t offset = 0; // of the message in the exported allocation
    Export where;
};

class IpcTransport : public Transport {
  public:
    IpcTransport(Transport &base, std::vector<bool> node_dims, bool base_moves_device)
        : base_(base), node_dims_(std::move(node_dims)), base_moves_device_(base_moves_device),
          channels_(base, kMagic) {
        check(drv().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate (ipc)");
    }

    ~IpcTransport() override {
        // Every request has completed (the engine drains each call); "done" messages may
        // still be on their way out (channels_ waits for them).
        try {
            (void)drv().cuStreamDestroy(stream_);
        } catch (...) {}
    }

    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override {
        auto r = std::make_unique<Req>(Req::Send, dim, peer, tag, const_cast<void *>(buf), bytes);
        if (!node_dims_[size_t(dim)]) return start_network(std::move(r));
        const void *src = buf;
        if (!on_device(buf)) { // a host buffer: its bytes go out of a device temporary
            r->temp = static_cast<char *>(device_memory().acquire(bytes));
            r->temp_device = true;
            copy(r->temp, buf, bytes);
            src = r->temp;
        }
        r->out.kind = kReady;
        r->out.pid = int32_t(getpid());
        r->out.bytes = bytes;
        r->out.where = ipc_cache().exported(src, r->out.offset);
        channels_.post(dim, peer, tag, &r->out, sizeof(Control));
        channels_.expect(dim, peer, tag);
        return r.release();
    }

    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override {
        auto r = std::make_unique<Req>(Req::Receive, dim, peer, tag, buf, bytes);
        if (!node_dims_[size_t(dim)]) return start_network(std::move(r));
        channels_.expect(dim, peer, tag);
        return r.release();
    }

    bool test(Request req) override {
        Req *r = static_cast<Req *>(req);
        channels_.progress();
        if (!advance(*r)) return false;
        delete r;
        return true;
    }

    const char *name() const override { return "cuda-ipc"; }
    // Node dimensions copy device memory by IPC; the others stage it or hand it to a base
    // transport that moves it.
    bool moves_device_memory() const override { return true; }
    void progress() override {
        base_.progress();
        channels_.progress();
    }

  private:
    struct Req {
        enum Kind { Send, Receive } kind;
        int dim, peer, tag;
        char *buf;
        size_t bytes;
        Req(Kind k, int d, int p, int t, void *b, size_t n)
            : kind(k), dim(d), peer(p), tag(t), buf(static_cast<char *>(b)), bytes(n) {}
        ~Req() {
            try {
                if (temp) (temp_device ? device_memory() : pinned_memory()).release(temp, bytes);
            } catch (...) {}
        }
        bool network = false;
        Request inner = nullptr; // network: the wrapped transport's request
        char *temp = nullptr;    // device temporary (host send) or pinned bounce
        bool temp_device = false;
        Control out;               // send: the "ready" descriptor
        bool have_control = false; // the peer's message for us has arrived
        Control in;
        Mapping *mapping = nullptr; // receive: the peer's allocation while copying
        CUevent copied = nullptr;   // receive: passes once the copy has landed
    };

    // The peer's control message of `kind` for r's (dim, peer, tag), once it is in.
    bool take(const Req &r, uint32_t kind, Control &out) {
        std::vector<char> message;
        if (!channels_.take(r.dim, r.peer, r.tag, kind, message)) return false;
        if (message.size() < sizeof(Control))
            throw std::runtime_error("CUDA IPC: malformed control message from a peer");
        std::memcpy(&out, message.data(), sizeof(Control));
        return true;
    }

    bool advance(Req &r) {
        if (r.network) return advance_network(r);
        if (r.kind == Req::Send) {
            if (!r.have_control) r.have_control = take(r, kDone, r.in);
            if (!r.have_control) return false;
            if (r.in.status != 0)
                throw std::runtime_error(
                    "CUDA IPC: the peer could not read this rank's device memory");
            return true;
        }
        if (!r.have_control) {
            if (!take(r, kReady, r.in)) return false;
            r.have_control = true;
            start_copy(r);
        }
        const CUresult q = drv().cuEventQuery(r.copied);
        if (q == CUDA_ERROR_NOT_READY) return false;
        check(q, "cuEventQuery (ipc copy)");
        events_.put(r.copied);
        r.copied = nullptr;
        ipc_cache().release(r.mapping);
        r.mapping = nullptr;
        send_done(r, 0);
        return true;
    }

    void start_copy(Req &r) {
        if (r.in.bytes != r.bytes) {
            send_done(r, 1);
            throw std::runtime_error("CUDA IPC: message size differs from the peer's");
        }
        try {
            r.mapping = ipc_cache().open(r.in.pid, r.in.where);
            const CUdeviceptr src = r.mapping->base + r.in.offset;
            check(drv().cuMemcpyAsync(dptr(r.buf), src, r.bytes, stream_), "cuMemcpyAsync (ipc)");
            r.copied = events_.take("cuEventCreate (ipc)");
            check(drv().cuEventRecord(r.copied, stream_), "cuEventRecord (ipc)");
        } catch (...) {
            if (r.mapping) ipc_cache().release(r.mapping);
            r.mapping = nullptr;
            send_done(r, 1); // the sender must not wait forever
            throw;
        }
    }

    void send_done(const Req &r, int32_t status) {
        Control done;
        done.kind = kDone;
        done.pid = int32_t(getpid());
        done.status = status;
        channels_.post(r.dim, r.peer, r.tag, &done, sizeof done);
    }

    // Network dimensions: the wrapped transport, device bytes through pinned host memory
    // unless it moves device memory itself.
    Request start_network(std::unique_ptr<Req> r) {
        r->network = true;
        char *at = r->buf;
        if (!base_moves_device_ && on_device(r->buf)) {
            r->temp = static_cast<char *>(pinned_memory().acquire(r->bytes));
            if (r->kind == Req::Send) copy(r->temp, r->buf, r->bytes);
            at = r->temp;
        }
        r->inner = r->kind == Req::Send ? base_.isend(r->dim, r->peer, at, r->bytes, r->tag)
                                        : base_.irecv(r->dim, r->peer, at, r->bytes, r->tag);
        return r.release();
    }

    bool advance_network(Req &r) {
        if (!base_.test(r.inner)) return false;
        if (r.temp && r.kind == Req::Receive) copy(r.buf, r.temp, r.bytes);
        return true;
    }

    Transport &base_;
    std::vector<bool> node_dims_;
    bool base_moves_device_;
    CUstream stream_ = nullptr;
    ControlChannels channels_;
    EventPool events_;
};

} // namespace

std::unique_ptr<Transport> make_ipc_transport(Transport &base, std::vector<bool> node_dims,
                                              bool base_moves_device) {
    return std::make_unique<IpcTransport>(base, std::move(node_dims), base_moves_device);
}

} // namespace cuda
} // namespace themis
