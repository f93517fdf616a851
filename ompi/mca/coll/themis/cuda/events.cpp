// cuda/events.cpp: a pool of reusable CUDA events (see events.h).
#include "cuda/events.h"

#include "cuda/driver.h"

namespace themis {
namespace cuda {

EventPool::~EventPool() {
    for (CUevent e : spare_) (void)drv().cuEventDestroy(e);
}

CUevent EventPool::take(const char *what) {
    std::lock_guard<std::mutex> hold(lock_);
    CUevent e = nullptr;
    if (spare_.empty()) {
        check(drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), what);
        return e;
    }
    e = spare_.back();
    spare_.pop_back();
    return e;
}

void EventPool::put(CUevent e) {
    std::lock_guard<std::mutex> hold(lock_);
    spare_.push_back(e);
}

} // namespace cuda
} // namespace themis
