// cma_transport: node-local messages read straight from the sender (see cma_transport.h).
#include "transports/cma_transport.h"

#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace themis {

namespace {

enum : uint32_t { kMagic = 0x746d6361u, kInline = 1, kReady = 2, kDone = 3 };

struct Header {
    ControlHeader control;
    int32_t pid = 0;
    int32_t status = 0; // kDone: 0, or the receiver could not read (the sender fails too)
    uint64_t bytes = 0; // the message's bytes
    uint64_t count = 0; // kReady: segments that follow
};

struct WireSegment {
    uint64_t address;
    uint64_t bytes;
};

constexpr size_t kMaxSegments = (kControlBytes - sizeof(Header)) / sizeof(WireSegment);
constexpr size_t kInlineBytes = kControlBytes - sizeof(Header);
// A reduction reads this much of the peer's data at a time: small enough to stay in the
// core's cache until it is reduced, large enough that the system call costs little.
constexpr size_t kPieceBytes = 64 << 10;

Header header(uint32_t kind, uint64_t bytes) {
    Header h;
    h.control.magic = kMagic;
    h.control.kind = kind;
    h.pid = int32_t(getpid());
    h.bytes = bytes;
    return h;
}

size_t total(const Segment *segments, size_t count) {
    size_t n = 0;
    for (size_t i = 0; i < count; ++i) n += segments[i].bytes;
    return n;
}

// A position in a list of segments (kept elsewhere), read or written as one stream of bytes.
class Cursor {
  public:
    Cursor(const iovec *segments, size_t count) : segments_(segments), count_(count) {}
    // The iovecs of the next `bytes` from here (they must exist), without moving.
    void next(size_t bytes, std::vector<iovec> &out) const {
        out.clear();
        size_t off = offset_;
        for (size_t i = index_; bytes > 0 && i < count_; ++i, off = 0) {
            const size_t n = std::min(bytes, segments_[i].iov_len - off);
            out.push_back(iovec{static_cast<char *>(segments_[i].iov_base) + off, n});
            bytes -= n;
        }
        if (bytes > 0) throw std::logic_error("cma: a stream shorter than its message");
    }
    void advance(size_t bytes) {
        while (bytes > 0) {
            const size_t n = std::min(bytes, segments_[index_].iov_len - offset_);
            offset_ += n;
            bytes -= n;
            if (offset_ == segments_[index_].iov_len) {
                ++index_;
                offset_ = 0;
            }
        }
    }

  private:
    const iovec *segments_;
    size_t count_;
    size_t index_ = 0, offset_ = 0;
};

// Reads the next `bytes` of process `pid`'s stream `remote` into the local stream `local`;
// the kernel may move less than asked per call. `lv` and `rv`: room for the iovecs of one
// call.
void read_stream(int pid, Cursor &local, Cursor &remote, size_t bytes, std::vector<iovec> &lv,
                 std::vector<iovec> &rv) {
    while (bytes > 0) {
        local.next(bytes, lv);
        remote.next(bytes, rv);
        const ssize_t got = process_vm_readv(pid, lv.data(), lv.size(), rv.data(), rv.size(), 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == ESRCH)
            throw std::runtime_error("cma: the node peer (pid " + std::to_string(pid) +
                                     ") is gone");
        if (got < 0) throw std::system_error(errno, std::generic_category(), "process_vm_readv");
        if (got == 0) throw std::runtime_error("process_vm_readv read nothing");
        local.advance(size_t(got));
        remote.advance(size_t(got));
        bytes -= size_t(got);
    }
}

} // namespace

struct CmaTransport::Req {
    enum Kind { Send, Receive } kind = Send;
    int dim = 0, peer = 0, tag = 0;
    std::vector<Segment> segments; // a receive's; keeps its room while the Req is kept
    size_t bytes = 0;
    Reducer *reducer = nullptr;
    Request inner = nullptr; // not a node dimension: the wrapped transport's request
    bool complete = false;   // a send that went inline: nothing to wait for
};

CmaTransport::CmaTransport(Transport &base, std::vector<bool> node_dims)
    : base_(base), node_dims_(std::move(node_dims)), channels_(base, kMagic),
      scratch_(kPieceBytes) {}

CmaTransport::Req *CmaTransport::new_req(int kind, int dim, int peer, int tag, size_t bytes) {
    std::unique_ptr<Req> r;
    if (spare_.empty()) {
        r = std::make_unique<Req>();
    } else {
        r = std::move(spare_.back());
        spare_.pop_back();
    }
    r->kind = static_cast<Req::Kind>(kind);
    r->dim = dim;
    r->peer = peer;
    r->tag = tag;
    r->segments.clear();
    r->bytes = bytes;
    r->reducer = nullptr;
    r->inner = nullptr;
    r->complete = false;
    return r.release();
}

void CmaTransport::recycle(Req *r) { spare_.emplace_back(r); }

CmaTransport::~CmaTransport() = default;

size_t CmaTransport::inline_bytes() { return kInlineBytes; }

size_t CmaTransport::max_segments(int dim) const {
    return node_dims_[size_t(dim)] ? kMaxSegments : base_.max_segments(dim);
}

Transport::Request CmaTransport::isend(int dim, int peer, const void *buf, size_t bytes, int tag) {
    if (!node_dims_[size_t(dim)]) {
        Request inner = base_.isend(dim, peer, buf, bytes, tag);
        Req *r = new_req(Req::Send, dim, peer, tag, bytes);
        r->inner = inner;
        return r;
    }
    const Segment one{static_cast<char *>(const_cast<void *>(buf)), bytes};
    return isendv(dim, peer, &one, 1, tag);
}

Transport::Request CmaTransport::irecv(int dim, int peer, void *buf, size_t bytes, int tag) {
    if (!node_dims_[size_t(dim)]) {
        Request inner = base_.irecv(dim, peer, buf, bytes, tag);
        Req *r = new_req(Req::Receive, dim, peer, tag, bytes);
        r->inner = inner;
        return r;
    }
    const Segment one{static_cast<char *>(buf), bytes};
    return irecvv(dim, peer, &one, 1, tag, nullptr);
}

Transport::Request CmaTransport::isendv(int dim, int peer, const Segment *segments, size_t count,
                                        int tag) {
    if (!node_dims_[size_t(dim)]) return base_.isendv(dim, peer, segments, count, tag);
    if (count > kMaxSegments) throw std::logic_error("cma: more segments than a message takes");
    const size_t bytes = total(segments, count);
    std::vector<char> &message = out_;
    message.resize(sizeof(Header));
    if (bytes <= kInlineBytes) { // the data itself, in the control message
        const Header h = header(kInline, bytes);
        std::memcpy(message.data(), &h, sizeof h);
        for (size_t i = 0; i < count; ++i)
            message.insert(message.end(), segments[i].data, segments[i].data + segments[i].bytes);
    } else { // where the data is; "done" comes back once the receiver has read it
        Header h = header(kReady, bytes);
        h.count = count;
        std::memcpy(message.data(), &h, sizeof h);
        for (size_t i = 0; i < count; ++i) {
            const WireSegment w{uint64_t(reinterpret_cast<uintptr_t>(segments[i].data)),
                                segments[i].bytes};
            const char *p = reinterpret_cast<const char *>(&w);
            message.insert(message.end(), p, p + sizeof w);
        }
        channels_.expect(dim, peer, tag);
    }
    channels_.post(dim, peer, tag, message.data(), message.size());
    Req *r = new_req(Req::Send, dim, peer, tag, bytes);
    r->complete = bytes <= kInlineBytes;
    return r;
}

Transport::Request CmaTransport::irecvv(int dim, int peer, const Segment *segments, size_t count,
                                        int tag, Reducer *reducer) {
    if (!node_dims_[size_t(dim)]) return base_.irecvv(dim, peer, segments, count, tag, reducer);
    channels_.expect(dim, peer, tag);
    Req *r = new_req(Req::Receive, dim, peer, tag, total(segments, count));
    r->segments.assign(segments, segments + count);
    r->reducer = reducer;
    return r;
}

bool CmaTransport::test(Request req) {
    Req *r = static_cast<Req *>(req);
    channels_.progress();
    bool done = false;
    try {
        done = advance(*r);
    } catch (...) { // failed: released like a completed one, as the other transports do
        recycle(r);
        throw;
    }
    if (done) recycle(r);
    return done;
}

void CmaTransport::progress() {
    base_.progress();
    channels_.progress();
}

bool CmaTransport::advance(Req &r) {
    if (r.inner) return base_.test(r.inner);
    if (r.complete) return true;
    if (r.kind == Req::Receive) return receive(r);
    std::vector<char> &done = in_;
    if (!channels_.take(r.dim, r.peer, r.tag, kDone, done)) return false;
    Header h;
    std::memcpy(&h, done.data(), sizeof h);
    if (h.status != 0)
        throw std::runtime_error("cma: a node peer could not read this rank's memory");
    return true;
}

// The sender's message has arrived: its bytes inline, or where to read them.
bool CmaTransport::receive(Req &r) {
    const bool inline_data = r.bytes <= kInlineBytes;
    std::vector<char> &message = in_;
    if (!channels_.take(r.dim, r.peer, r.tag, inline_data ? kInline : kReady, message))
        return false;
    Header h;
    std::memcpy(&h, message.data(), sizeof h);
    if (!inline_data) {
        read_peer(r, message);
        return true;
    }
    if (h.bytes != r.bytes) throw std::runtime_error("cma: message size differs from the peer's");
    const char *data = message.data() + sizeof(Header);
    for (const Segment &s : r.segments) {
        if (r.reducer)
            r.reducer->reduce(s.data, data, s.bytes);
        else
            std::memcpy(s.data, data, s.bytes);
        data += s.bytes;
    }
    return true;
}

// Reads (or reads and reduces) the sender's segments, then tells it they are free again;
// a failure is told too, so the sender fails instead of waiting.
void CmaTransport::read_peer(const Req &r, const std::vector<char> &ready) {
    Header h;
    std::memcpy(&h, ready.data(), sizeof h);
    Header done = header(kDone, r.bytes);
    try {
        if (h.bytes != r.bytes || h.count > kMaxSegments)
            throw std::runtime_error("cma: message size differs from the peer's");
        theirs_.resize(h.count);
        for (size_t i = 0; i < h.count; ++i) {
            WireSegment w;
            std::memcpy(&w, ready.data() + sizeof(Header) + i * sizeof w, sizeof w);
            theirs_[i] = iovec{reinterpret_cast<void *>(uintptr_t(w.address)), size_t(w.bytes)};
        }
        Cursor remote(theirs_.data(), theirs_.size());
        if (!r.reducer) {
            mine_.clear();
            for (const Segment &s : r.segments) mine_.push_back(iovec{s.data, s.bytes});
            Cursor local(mine_.data(), mine_.size());
            read_stream(h.pid, local, remote, r.bytes, lv_, rv_);
        } else {
            const size_t element = r.reducer->element_bytes();
            const size_t piece = std::max(element, kPieceBytes / element * element);
            if (scratch_.size() < piece) scratch_.resize(piece);
            for (const Segment &s : r.segments)
                for (size_t off = 0; off < s.bytes; off += piece) {
                    const size_t n = std::min(piece, s.bytes - off);
                    const iovec into{scratch_.data(), n};
                    Cursor local(&into, 1);
                    read_stream(h.pid, local, remote, n, lv_, rv_);
                    r.reducer->reduce(s.data + off, scratch_.data(), n);
                }
        }
    } catch (...) {
        done.status = 1;
        channels_.post(r.dim, r.peer, r.tag, &done, sizeof done);
        throw;
    }
    channels_.post(r.dim, r.peer, r.tag, &done, sizeof done);
}

void allow_peer_reads() {
#ifdef PR_SET_PTRACER
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

bool cma_read(int pid, const void *address, void *out, size_t bytes, std::string &why) {
    iovec local{out, bytes}, remote{const_cast<void *>(address), bytes};
    const ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got == ssize_t(bytes)) return true;
    why = got < 0 ? std::string("process_vm_readv: ") + std::strerror(errno)
                  : "process_vm_readv read " + std::to_string(got) + " of " +
                        std::to_string(bytes) + " bytes";
    return false;
}

} // namespace themis
