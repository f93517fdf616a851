// cuda/ipc_handles.cpp: exported and opened CUDA IPC allocations (see ipc_handles.h).
#include "cuda/ipc_handles.h"

#include <algorithm>

#include "coll_themis.h"
#include "cuda/driver.h"

namespace themis {
namespace cuda {

namespace {

size_t limit() { return size_t(std::max(1, mca_coll_themis_component.cuda_ipc_cache)); }

void close(Mapping &m) { (void)drv().cuIpcCloseMemHandle(m.base); }

IpcCache *cache = nullptr;

} // namespace

Export IpcCache::exported(const void *p, uint64_t &offset) {
    std::lock_guard<std::mutex> hold(lock_);
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

Mapping *IpcCache::open(int pid, const Export &e) {
    std::lock_guard<std::mutex> hold(lock_);
    const PeerKey key{pid, e.base, e.id};
    if (Mapping *m = reuse(key)) return m;
    close_unused(pid, e.base);
    trim(limit() - 1);
    Mapping m;
    m.key = key;
    auto open_handle = [&] {
        return drv().cuIpcOpenMemHandle(&m.base, e.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    };
    CUresult r = open_handle();
    if (r == CUDA_ERROR_ALREADY_MAPPED) {
        // The driver maps a piece of memory once per process: the peer freed an
        // allocation we still hold open and its memory now backs this new one (at another
        // address). Our mappings of that peer that no copy reads are either such dead
        // allocations or cheap to open again.
        close_unused(pid, kAnyBase);
        r = open_handle();
    }
    check(r, "cuIpcOpenMemHandle");
    m.users = 1;
    lru_.push_front(m);
    return &lru_.front();
}

// The mapping of `key` if open, moved to the front and counted as read.
Mapping *IpcCache::reuse(const PeerKey &key) {
    for (auto it = lru_.begin(); it != lru_.end(); ++it)
        if (it->key == key) {
            lru_.splice(lru_.begin(), lru_, it);
            ++lru_.front().users;
            return &lru_.front();
        }
    return nullptr;
}

// Closes the mappings of `pid`'s allocations at `base` (kAnyBase: at any address) that no
// copy reads. At one base: the exporter freed the allocation there and made a new one, so
// the old mapping would only keep dead memory alive.
void IpcCache::close_unused(int pid, uint64_t base) {
    for (auto it = lru_.begin(); it != lru_.end();) {
        const bool match =
            std::get<0>(it->key) == pid && (base == kAnyBase || std::get<1>(it->key) == base);
        if (match && it->users == 0) {
            close(*it);
            it = lru_.erase(it);
        } else {
            ++it;
        }
    }
}

void IpcCache::release(Mapping *m) {
    std::lock_guard<std::mutex> hold(lock_);
    --m->users;
    trim(limit());
}

void IpcCache::clear() {
    std::lock_guard<std::mutex> hold(lock_);
    for (Mapping &m : lru_) close(m);
    lru_.clear();
    exports_.clear();
}

// Closes the least recently used mappings no copy reads until at most `n` remain.
void IpcCache::trim(size_t n) {
    for (auto it = lru_.end(); lru_.size() > n && it != lru_.begin();) {
        --it;
        if (it->users == 0) {
            close(*it);
            it = lru_.erase(it);
        }
    }
}

IpcCache &ipc_cache() {
    static std::mutex creating; // the first use may come from two threads at once
    std::lock_guard<std::mutex> hold(creating);
    if (!cache) cache = new IpcCache;
    return *cache;
}

void close_ipc_cache() {
    if (!cache) return;
    try {
        cache->clear();
    } catch (...) {}
    delete cache;
    cache = nullptr;
}

} // namespace cuda
} // namespace themis
