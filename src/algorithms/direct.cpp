// direct: one stage on a fully connected dimension, a single step with every peer.
//
// Reduce-Scatter: send block j to peer j, receive every peer's copy of our block and
// reduce them in a fixed order (me+1, me+2, ...), so results do not depend on arrival
// order. All-Gather: send our block to every peer, receive block j from peer j.
#include "../stage.h"

namespace themis {

namespace {

class Direct : public StageAlgorithm {
  public:
    using StageAlgorithm::StageAlgorithm;

    bool progress() override {
        if (!started_) start();
        // Reductions happen in peer order: stop at the first receive not yet done.
        while (next_ < receives_.size() && receives_[next_].done()) ++next_;
        return next_ == receives_.size() && all_done(sends_);
    }

  private:
    void reset() override {
        started_ = false;
        next_ = 0;
    }

    void start() {
        started_ = true;
        const bool rs = narrows();
        for (int i = 1; i < n(); ++i) {
            const int peer = wrap(me() + i);
            if (rs)
                receive(peer, me(), me() + 1, 0);
            else
                receive(peer, peer, peer + 1, 0);
            if (rs)
                send(peer, peer, peer + 1, 0);
            else
                send(peer, me(), me() + 1, 0);
        }
    }

    bool started_ = false;
    size_t next_ = 0;
};

} // namespace

std::unique_ptr<StageAlgorithm> make_direct(const StageContext &ctx) {
    return std::make_unique<Direct>(ctx);
}

} // namespace themis
