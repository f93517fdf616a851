// coll_themis_fiber.h: a body run on a stack of its own (ucontext), so that a set-up can
// step aside at every poll of the progress loop and resume later (coll_themis_setup_task.h).
// resume() runs the body until it steps aside (yield(), from inside) or ends. Never resumed
// from inside another one. AddressSanitizer builds tell it every switch of stacks.
#pragma once

#include <ucontext.h>

#include <cstddef>
#include <functional>

namespace themis {

class Fiber {
  public:
    explicit Fiber(std::function<void()> body);
    ~Fiber();
    Fiber(const Fiber &) = delete;
    Fiber &operator=(const Fiber &) = delete;

    bool done() const { return done_; }
    void resume();
    // Inside a fiber: the one running on this thread; yield() hands the thread back to the
    // one that resumed it.
    static Fiber *running() { return running_; }
    void yield();

  private:
    static void entry(unsigned lo, unsigned hi);
    void switch_to(ucontext_t *from, ucontext_t *to, const void *to_bottom, size_t to_size,
                   bool inside);
    void arrived();
    void leave_for_good();

    std::function<void()> body_;
    void *stack_ = nullptr;
    ucontext_t self_{}, caller_{};
    const void *caller_bottom_ = nullptr;
    size_t caller_size_ = 0;
    bool done_ = false;
    static thread_local Fiber *running_;
};

} // namespace themis
