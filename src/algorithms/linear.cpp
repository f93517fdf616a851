// linear: one rooted stage (Scatter or Gather) on a dimension: the root peer talks to
// every other peer at once, in a single step.
//
// Scatter: the root peer sends block j to peer j; every other peer receives its own block
// from it. Gather: every other peer sends its own block to the root peer, which receives
// block j from peer j. The root peer's link carries (n-1)/n of the stage's larger side,
// as much as any algorithm must move through it; the others move one block. A group that
// sits the stage out (PlanOp::idle) moves nothing.
#include "../stage.h"

namespace themis {

namespace {

class Linear : public StageAlgorithm {
  public:
    using StageAlgorithm::StageAlgorithm;

    bool progress() override {
        if (!started_) start();
        return step_done();
    }

  private:
    void reset() override { started_ = false; }

    void start() {
        started_ = true;
        if (ctx_.op().idle) return;
        const bool scatter = narrows();
        if (me() != root()) {
            if (scatter)
                receive(root(), me(), me() + 1, 0);
            else
                send(root(), me(), me() + 1, 0);
            return;
        }
        for (int i = 1; i < n(); ++i) {
            const int peer = wrap(me() + i);
            if (scatter)
                send(peer, peer, peer + 1, 0);
            else
                receive(peer, peer, peer + 1, 0);
        }
    }

    bool started_ = false;
};

} // namespace

std::unique_ptr<StageAlgorithm> make_linear(const StageContext &ctx) {
    return std::make_unique<Linear>(ctx);
}

} // namespace themis
