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
#include <vector>

#include "../stage.h"

namespace themis {

namespace {

class Ring : public StageAlgorithm {
  public:
    using StageAlgorithm::StageAlgorithm;

    bool progress() override {
        while (step_ < n() - 1) {
            if (transfers_.empty()) start_step();
            if (!all_done(transfers_)) return false;
            transfers_.clear();
            ++step_;
        }
        return true;
    }

  private:
    void start_step() {
        const bool rs = ctx_.op.phase == Phase::ReduceScatter;
        const int out = wrap(rs ? me() - step_ - 1 : me() - step_);
        const int in = wrap(out - 1);
        transfers_.push_back(receive(wrap(me() - 1), in, in + 1, step_));
        transfers_.push_back(send(wrap(me() + 1), out, out + 1, step_));
    }

    int step_ = 0;
    std::vector<std::unique_ptr<Transfer>> transfers_;
};

} // namespace

std::unique_ptr<StageAlgorithm> make_ring(StageContext ctx) { return std::make_unique<Ring>(ctx); }

} // namespace themis
