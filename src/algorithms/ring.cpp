// ring: one stage on a dimension of n peers as a ring, n-1 steps.
//
// Reduce-Scatter, step s: send block (me-s-1) to the right neighbour, receive block
// (me-s-2) from the left one and reduce it into ours; after n-1 steps our own block
// holds the sum over the ring. All-Gather, step s: send block (me-s) to the right,
// receive block (me-s-1) from the left; each step forwards what the last one brought.
//
//   step    0        1        2          (n = 4, me = 0; RS)
//   send    b3       b2       b1
//   recv    b2 +=    b1 +=    b0 +=  ->  b0 complete
#include "../stage.h"

namespace themis {

namespace {

class Ring : public StageAlgorithm {
  public:
    using StageAlgorithm::StageAlgorithm;

    bool progress() override {
        while (step_ < n() - 1) {
            if (!started_) start_step();
            if (!step_done()) return false;
            clear();
            started_ = false;
            ++step_;
        }
        return true;
    }

  private:
    void reset() override {
        step_ = 0;
        started_ = false;
    }

    void start_step() {
        started_ = true;
        const int out = wrap(narrows() ? me() - step_ - 1 : me() - step_);
        const int in = wrap(out - 1);
        receive(wrap(me() - 1), in, in + 1, step_);
        send(wrap(me() + 1), out, out + 1, step_);
    }

    int step_ = 0;
    bool started_ = false;
};

} // namespace

std::unique_ptr<StageAlgorithm> make_ring(const StageContext &ctx) {
    return std::make_unique<Ring>(ctx);
}

} // namespace themis
