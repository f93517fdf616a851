// cuda/copier.cpp: staging copies on CUDA streams, fenced by events (see copier.h).
#include "cuda/copier.h"

#include "cuda/driver.h"

namespace themis {
namespace cuda {

StreamCopier::~StreamCopier() {
    for (auto &q : pending_)
        for (auto &p : q) events_.put(p.event);
}

void StreamCopier::copy(Direction dir, void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    std::lock_guard<std::recursive_mutex> hold(lock_);
    check(drv().cuMemcpyAsync(dptr(dst), dptr(src), bytes, stream_[dir]),
          "cuMemcpyAsync (staging)");
    dirty_[dir] = true;
}

AsyncCopier::Fence StreamCopier::fence(Direction dir) {
    std::lock_guard<std::recursive_mutex> hold(lock_);
    if (!dirty_[dir]) return last_[dir];
    CUevent e = events_.take("cuEventCreate");
    check(drv().cuEventRecord(e, stream_[dir]), "cuEventRecord");
    pending_[dir].push_back({++last_[dir], e});
    dirty_[dir] = false;
    return last_[dir];
}

bool StreamCopier::passed(Direction dir, Fence fence) {
    std::lock_guard<std::recursive_mutex> hold(lock_);
    auto &q = pending_[dir];
    while (!q.empty()) {
        const CUresult r = drv().cuEventQuery(q.front().event);
        if (r == CUDA_ERROR_NOT_READY) break;
        check(r, "cuEventQuery (staging copy)");
        done_[dir] = q.front().seq;
        events_.put(q.front().event);
        q.pop_front();
    }
    return done_[dir] >= fence;
}

void StreamCopier::wait_all() {
    std::lock_guard<std::recursive_mutex> hold(lock_);
    for (int dir = 0; dir < 2; ++dir) {
        check(drv().cuStreamSynchronize(stream_[dir]), "cuStreamSynchronize (staging)");
        passed(static_cast<Direction>(dir), last_[dir]);
    }
}

} // namespace cuda
} // namespace themis
