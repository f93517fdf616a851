// halving_doubling: one stage on a dimension of n = 2^k peers in log2(n) steps.
//
// Reduce-Scatter (recursive halving): start holding all n blocks; at the step with
// distance `mask` (n/2, n/4, ..., 1) exchange with peer me^mask: send the half of the
// held blocks that the peer keeps, receive and reduce the half we keep (the half
// containing our own block). Each step halves what we hold; the last leaves our block.
// All-Gather (recursive doubling): the mirror image; start with our block and at
// distance 1, 2, ..., n/2 swap everything held with peer me^mask, doubling it.
//
//   RS, n = 4, me = 1:  mask 2: keep b0-b1, send b2-b3 to peer 3
//                       mask 1: keep b1,    send b0    to peer 0
#include <algorithm>

#include "../stage.h"

namespace themis {

namespace {

class HalvingDoubling : public StageAlgorithm {
  public:
    explicit HalvingDoubling(const StageContext &ctx) : StageAlgorithm(ctx) { reset(); }

    bool progress() override {
        while (rs_ ? mask_ >= 1 : mask_ < n()) {
            if (!started_) start_step();
            if (!step_done()) return false;
            clear();
            started_ = false;
            if (rs_) { // we now hold only the kept half
                lo_ = keep_lo_;
                hi_ = keep_lo_ + mask_;
                mask_ /= 2;
            } else { // we now hold our span and the peer's
                lo_ = std::min(lo_, peer_lo_);
                hi_ = lo_ + 2 * mask_;
                mask_ *= 2;
            }
            ++step_;
        }
        return true;
    }

  private:
    void reset() override {
        rs_ = narrows();
        mask_ = rs_ ? n() / 2 : 1;
        lo_ = rs_ ? 0 : me();
        hi_ = rs_ ? n() : me() + 1;
        keep_lo_ = peer_lo_ = step_ = 0;
        started_ = false;
    }

    void start_step() {
        started_ = true;
        const int peer = me() ^ mask_;
        if (rs_) {
            const int mid = lo_ + mask_;
            keep_lo_ = (me() & mask_) ? mid : lo_;
            const int give_lo = (me() & mask_) ? lo_ : mid;
            receive(peer, keep_lo_, keep_lo_ + mask_, step_);
            send(peer, give_lo, give_lo + mask_, step_);
        } else {
            peer_lo_ = peer & ~(mask_ - 1);
            receive(peer, peer_lo_, peer_lo_ + mask_, step_);
            send(peer, lo_, hi_, step_);
        }
    }

    bool rs_ = false;
    int mask_ = 0, lo_ = 0, hi_ = 0;
    int keep_lo_ = 0, peer_lo_ = 0, step_ = 0;
    bool started_ = false;
};

} // namespace

std::unique_ptr<StageAlgorithm> make_halving_doubling(const StageContext &ctx) {
    return std::make_unique<HalvingDoubling>(ctx);
}

} // namespace themis
