// group_cast: one cast of a broadcast tree (Cast) or of a reduce tree (Collect) within one
// group of a dimension (tree_packing.h). Block j is target j's share of the chunk (empty for
// the source and for every peer that is not a target).
//
// Cast: the source sends block j to each target j (step 0); each target, once its own block
// is in, sends it to every other target (step 1), and receives theirs: every target ends
// with the whole chunk. The source sends the chunk once; a target of t sends (t-1)/t of it.
//
// Collect: each target sends block j of its partial result to each other target j and
// reduces theirs into its own block (step 0), then sends its block, now summed over the
// targets, to the source (step 1), which reduces it into its own: the source ends with the
// sum over itself and the targets, each already the sum over its own subtree.
//
// A peer that is neither source nor target (PlanOp::idle) moves nothing.
#include "../stage.h"

namespace themis {

namespace {

class CastStage : public StageAlgorithm {
  public:
    using StageAlgorithm::StageAlgorithm;

    bool progress() override {
        if (!started_) start();
        if (!handed_on_ && in_place()) hand_on();
        return handed_on_ && step_done();
    }

  private:
    void reset() override { started_ = handed_on_ = false; }
    bool collects() const { return phase_info(ctx_.op().phase).reduces; }
    const std::vector<int> &targets() const { return ctx_.op().targets; }

    void start() {
        started_ = true;
        if (ctx_.op().idle) {
            handed_on_ = true;
            return;
        }
        if (me() == root()) {
            for (int t : targets()) {
                if (collects())
                    receive(t, t, t + 1, 1);
                else
                    send(t, t, t + 1, 0);
            }
            handed_on_ = true;
            return;
        }
        if (!collects()) receive(root(), me(), me() + 1, 0);
        for (int t : targets()) {
            if (t == me()) continue;
            if (collects()) {
                send(t, t, t + 1, 0);
                receive(t, me(), me() + 1, 0);
            } else {
                receive(t, t, t + 1, 1);
            }
        }
    }

    // Whether a target may take its second step: its own block is in from the source (Cast;
    // the first receive it started), or every other target's share is reduced into it.
    bool in_place() {
        if (collects()) return all_done(receives_);
        return receives_.front().done();
    }

    // A target's second step, once what it waits for is in: its own block to the other
    // targets (Cast), or its summed block to the source (Collect).
    void hand_on() {
        handed_on_ = true;
        if (collects()) {
            send(root(), me(), me() + 1, 1);
            return;
        }
        for (int t : targets())
            if (t != me()) send(t, me(), me() + 1, 1);
    }

    bool started_ = false;
    bool handed_on_ = false;
};

} // namespace

std::unique_ptr<StageAlgorithm> make_group_cast(const StageContext &ctx) {
    return std::make_unique<CastStage>(ctx);
}

} // namespace themis
