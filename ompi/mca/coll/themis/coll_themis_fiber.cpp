// coll_themis_fiber.cpp: a body on a stack of its own (coll_themis_fiber.h).
#include "coll_themis_fiber.h"

#include <sys/mman.h>

#include <cstdint>
#include <stdexcept>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define THEMIS_ASAN_FIBERS 1
#endif

namespace themis {
namespace {

// Deep enough for what a set-up calls (UCX and CUDA initialisation); only the pages touched
// are ever backed by memory.
constexpr size_t kStackBytes = size_t(8) << 20;
constexpr size_t kGuardBytes = 4096;

} // namespace

thread_local Fiber *Fiber::running_ = nullptr;

Fiber::Fiber(std::function<void()> body) : body_(std::move(body)) {
    stack_ = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (stack_ == MAP_FAILED) throw std::runtime_error("no memory for a set-up stack");
    mprotect(stack_, kGuardBytes, PROT_NONE); // an overflow faults instead of corrupting
    getcontext(&self_);
    self_.uc_stack.ss_sp = stack_;
    self_.uc_stack.ss_size = kStackBytes;
    self_.uc_link = nullptr;
    const auto p = reinterpret_cast<uintptr_t>(this);
    makecontext(&self_, reinterpret_cast<void (*)()>(&Fiber::entry), 2, unsigned(p & 0xffffffffu),
                unsigned(p >> 32));
}

Fiber::~Fiber() { munmap(stack_, kStackBytes); }

void Fiber::resume() {
    running_ = this;
    switch_to(&caller_, &self_, stack_, kStackBytes, false);
    running_ = nullptr;
}

void Fiber::yield() { switch_to(&self_, &caller_, caller_bottom_, caller_size_, true); }

void Fiber::entry(unsigned lo, unsigned hi) {
    auto *f = reinterpret_cast<Fiber *>(uintptr_t(lo) | (uintptr_t(hi) << 32));
    f->arrived();
    f->body_(); // catches everything itself
    f->done_ = true;
    f->leave_for_good();
}

// `inside`: called on the fiber's stack; when it is resumed, AddressSanitizer (where built
// with it) learns the resumer's stack, the one the next yield goes back to.
void Fiber::switch_to(ucontext_t *from, ucontext_t *to, const void *to_bottom, size_t to_size,
                      bool inside) {
#if THEMIS_ASAN_FIBERS
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, to_bottom, to_size);
    swapcontext(from, to);
    __sanitizer_finish_switch_fiber(fake, inside ? &caller_bottom_ : nullptr,
                                    inside ? &caller_size_ : nullptr);
#else
    (void)to_bottom;
    (void)to_size;
    (void)inside;
    swapcontext(from, to);
#endif
}

void Fiber::arrived() {
#if THEMIS_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(nullptr, &caller_bottom_, &caller_size_);
#endif
}

void Fiber::leave_for_good() {
#if THEMIS_ASAN_FIBERS
    __sanitizer_start_switch_fiber(nullptr, caller_bottom_, caller_size_);
#endif
    setcontext(&caller_);
}

} // namespace themis
