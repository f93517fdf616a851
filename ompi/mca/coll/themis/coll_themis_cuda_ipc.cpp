// coll_themis_cuda_ipc.cpp: the device-direct node dimension (see coll_themis_cuda_ipc.h).
#include "coll_themis_cuda_ipc.h"

#include <unistd.h>

#include <cstring>
#include <list>
#include <map>
#include <stdexcept>
#include <tuple>

#include "coll_themis_cuda.h"
#include "cuda/driver.h"
#include "control_channels.h"

#include "opal/util/output.h"

namespace themis {
namespace cuda {

namespace {

const mca_coll_themis_component_t &params() { return mca_coll_themis_component; }

bool have_ipc(const Driver &d) {
    return d.cuIpcGetMemHandle && d.cuIpcOpenMemHandle && d.cuIpcCloseMemHandle &&
           d.cuMemGetAddressRange;
}

// ---------------------------------------------------------------------------------------
// Exported allocations and opened peer allocations, process-wide (communicators share
// peers and buffers).

struct Export {
    CUipcMemHandle handle;
    uint64_t base = 0;
    uint64_t id = 0; // CU_POINTER_ATTRIBUTE_BUFFER_ID: tells a reused address apart
};

// An allocation's identity: the exporting process, its base address, its buffer id.
using PeerKey = std::tuple<int, uint64_t, uint64_t>;

struct Mapping {
    PeerKey key;
    CUdeviceptr base = 0;
    int users = 0; // copies that read it now: never closed while > 0
};

class IpcCache {
  public:
    // The export of the allocation holding `p` (cached; an address reused by a new
    // allocation has a new buffer id, so it is exported again).
    Export exported(const void *p, uint64_t &offset) {
        const Driver &d = drv();
        CUdeviceptr base = 0;
        size_t size = 0;
        check(d.cuMemGetAddressRange(&base, &size, dptr(p)), "cuMemGetAddressRange");
        unsigned long long id = 0;
        CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_BUFFER_ID;
        void *data = &id;
        check(d.cuPointerGetAttributes(1, &attr, &data, base), "cuPointerGetAttributes (buffer id)");
        offset = uint64_t(dptr(p) - base);
        auto it = exports_.find(uint64_t(base));
        if (it != exports_.end() && it->second.id == id) return it->second;
        Export e;
        check(d.cuIpcGetMemHandle(&e.handle, base), "cuIpcGetMemHandle");
        e.base = uint64_t(base);
        e.id = id;
        if (exports_.size() >= limit()) exports_.clear(); // handles are cheap to ask again
        exports_[e.base] = e;
        return e;
    }

    // The local address of a peer's allocation, opened once and kept; release() when the
    // copy that reads it is done.
    Mapping *open(int pid, const Export &e) {
        const PeerKey key{pid, e.base, e.id};
        for (auto it = lru_.begin(); it != lru_.end(); ++it)
            if (it->key == key) {
                lru_.splice(lru_.begin(), lru_, it); // most recently used first
                ++lru_.front().users;
                return &lru_.front();
            }
        // The exporter freed an allocation at that address and made a new one: the old
        // mapping would only keep dead memory alive.
        for (auto it = lru_.begin(); it != lru_.end();) {
            if (std::get<0>(it->key) == pid && std::get<1>(it->key) == e.base && it->users == 0) {
                close(*it);
                it = lru_.erase(it);
            } else {
                ++it;
            }
        }
        trim(limit() > 0 ? limit() - 1 : 0);
        Mapping m;
        m.key = key;
        check(drv().cuIpcOpenMemHandle(&m.base, e.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
              "cuIpcOpenMemHandle");
        m.users = 1;
        lru_.push_front(m);
        ++opened_;
        return &lru_.front();
    }

    void release(Mapping *m) {
        --m->users;
        trim(limit());
    }

    void clear() {
        for (Mapping &m : lru_) close(m);
        lru_.clear();
        exports_.clear();
    }

    uint64_t opened() const { return opened_; }

  private:
    static size_t limit() { return size_t(std::max(1, params().cuda_ipc_cache)); }
    // Closes the least recently used mappings no copy reads until at most `n` remain.
    void trim(size_t n) {
        for (auto it = lru_.end(); lru_.size() > n && it != lru_.begin();) {
            --it;
            if (it->users == 0) {
                close(*it);
                it = lru_.erase(it);
            }
        }
    }
    static void close(Mapping &m) { (void) drv().cuIpcCloseMemHandle(m.base); }

    std::list<Mapping> lru_;
    std::map<uint64_t, Export> exports_;
    uint64_t opened_ = 0;
};

IpcCache *cache_ = nullptr;
IpcCache &cache() {
    if (!cache_) cache_ = new IpcCache;
    return *cache_;
}

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
            for (CUevent e : spare_) (void) drv().cuEventDestroy(e);
            (void) drv().cuStreamDestroy(stream_);
        } catch (...) {
        }
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
        r->out.where = cache().exported(src, r->out.offset);
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
            } catch (...) {
            }
        }
        bool network = false;
        Request inner = nullptr;     // network: the wrapped transport's request
        char *temp = nullptr;        // device temporary (host send) or pinned bounce
        bool temp_device = false;
        Control out;                 // send: the "ready" descriptor
        bool have_control = false;   // the peer's message for us has arrived
        Control in;
        Mapping *mapping = nullptr;  // receive: the peer's allocation while copying
        CUevent copied = nullptr;    // receive: passes once the copy has landed
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
                throw std::runtime_error("CUDA IPC: the peer could not read this rank's device memory");
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
        spare_.push_back(r.copied);
        r.copied = nullptr;
        cache().release(r.mapping);
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
            r.mapping = cache().open(r.in.pid, r.in.where);
            const CUdeviceptr src = r.mapping->base + r.in.offset;
            check(drv().cuMemcpyAsync(dptr(r.buf), src, r.bytes, stream_), "cuMemcpyAsync (ipc)");
            if (spare_.empty()) {
                check(drv().cuEventCreate(&r.copied, CU_EVENT_DISABLE_TIMING), "cuEventCreate (ipc)");
            } else {
                r.copied = spare_.back();
                spare_.pop_back();
            }
            check(drv().cuEventRecord(r.copied, stream_), "cuEventRecord (ipc)");
            copies_++;
        } catch (...) {
            if (r.mapping) cache().release(r.mapping);
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
    std::vector<CUevent> spare_;
    uint64_t copies_ = 0;
};

} // namespace

bool ipc_candidate() {
    if (params().cuda != THEMIS_CUDA_AUTO || params().cuda_ipc == THEMIS_CUDA_IPC_OFF) return false;
    const Driver *d = driver();
    if (!d || !have_ipc(*d)) return false;
    CUcontext ctx = nullptr;
    return d->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr;
}

bool ipc_probe(mca_coll_themis_module_t *m, ompi_communicator_t *comm, const RankLayout &layout,
               int position, const std::vector<bool> &node_dims, bool candidate, std::string &why) {
    struct Probe {
        int32_t ok;
        int32_t pid;
        uint64_t offset;
        Export where;
    };
    constexpr size_t kBytes = 64;
    const int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    Probe mine{};
    mine.pid = int32_t(getpid());
    char *buf = nullptr;
    std::string failure;
    try {
        if (candidate) {
            buf = static_cast<char *>(device_memory().acquire(kBytes));
            uint64_t pattern[kBytes / 8];
            for (auto &v : pattern) v = 0x7468656d6973ull ^ uint64_t(me);
            copy(buf, pattern, kBytes);
            mine.where = cache().exported(buf, mine.offset);
            mine.ok = 1;
        }
    } catch (const std::exception &e) {
        failure = e.what();
    }
    std::vector<Probe> all(static_cast<size_t>(size));
    int rc = m->previous_allgather(&mine, sizeof mine, &ompi_mpi_byte.dt, all.data(), sizeof mine,
                                   &ompi_mpi_byte.dt, comm, m->previous_allgather_module);
    bool ok = rc == OMPI_SUCCESS && mine.ok;
    for (const Probe &p : all) ok = ok && p.ok;
    // Read every node-dimension peer's buffer through its handle and check the pattern.
    for (int rank : peer_ranks(layout, position, node_dims)) {
        if (!ok) break;
        try {
            Mapping *map = cache().open(all[size_t(rank)].pid, all[size_t(rank)].where);
            uint64_t got[kBytes / 8];
            try {
                copy(got, reinterpret_cast<const void *>(map->base + all[size_t(rank)].offset), kBytes);
            } catch (...) {
                cache().release(map);
                throw;
            }
            cache().release(map);
            for (uint64_t v : got)
                if (v != (0x7468656d6973ull ^ uint64_t(rank)))
                    throw std::runtime_error("a peer's device memory read back wrong");
        } catch (const std::exception &e) {
            ok = false;
            failure = e.what();
        }
    }
    int flag = ok ? 1 : 0, every = 0;
    rc = m->previous_allreduce(&flag, &every, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op, comm,
                               m->previous_allreduce_module);
    if (buf) device_memory().release(buf, kBytes); // every peer is done reading it
    if (rc == OMPI_SUCCESS && every == 1) return true;
    if (!candidate)
        why = "this rank cannot (coll_themis_cuda_ipc=off, coll_themis_cuda not auto, no CUDA "
              "context, or a driver without IPC)";
    else
        why = failure.empty() ? "another rank cannot" : failure;
    return false;
}

std::unique_ptr<Transport> make_ipc_transport(Transport &base, std::vector<bool> node_dims,
                                              bool base_moves_device) {
    return std::make_unique<IpcTransport>(base, std::move(node_dims), base_moves_device);
}

} // namespace cuda
} // namespace themis

extern "C" void mca_coll_themis_cuda_ipc_finalize(void) {
    using namespace themis::cuda;
    if (!cache_) return;
    try {
        cache_->clear();
    } catch (...) {
    }
    delete cache_;
    cache_ = nullptr;
}
