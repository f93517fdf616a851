// crossover: from which message size a communicator's collective runs faster on themis
// than on the module below it, measured on the communicator's own calls.
//
// Below some size the module below (tuned, han) wins: themis's chunks and dimensions cost
// latency a small message cannot hide. Where that happens depends on the collective, the
// network and the transport, so one fixed size (coll_themis_min_bytes) is wrong somewhere.
// Instead, each collective's calls of kFloorBytes to kCeilingBytes fall into bins of
// powers of two (B bytes: bin floor(log2 B)), and a bin's first calls decide it, cheaply:
//
//   call 0           themis, not timed: it may set the communicator up, plan, warm buffers
//   call 1           themis, timed (S = kSamples calls: 1); then the ranks start agreeing on
//                    its time (share: nonblocking)
//   call 1+S         the module below, not timed (it pays for the ranks themis's last call
//                    left apart, and for its own first-call costs), the agreement in flight
//   call 2+S         the agreement is due (settle): every rank has themis's time, the largest
//                    over the ranks (a collective ends when its slowest rank does), and the
//                    bin is decided for themis if that time is kClear under the least the
//                    module below could take on this network (below_lower_bound(), from the
//                    rates themis plans with; only where those were measured or given) and no
//                    shorter than the network can give (kBelievable, decide()). A trial then
//                    would only cost calls on the slower module (docs/usage.md, "Where themis
//                    takes over"). Else the module below, timed
//   calls 2+S..1+2S  the module below, timed
//   call 2+2S        the likelier winner, timed, a sample more for it: themis where its
//                    agreed time is kMargin under the module below's least, else below; then
//                    the ranks start agreeing on both runners' times
//   call 3+2S        the likelier winner again, not timed, the agreement in flight
//   call 4+2S        the agreement is due: the bin is decided for good, themis where its
//                    agreed time is at least kMargin below the module below's, the module
//                    below otherwise; where themis's time is under its least on this network
//                    (a shaper's burst that a run of calls meets no more), each time counted
//                    as at least its runner's least (decide()).
//
// A runner's time is the least of its timed calls: what else runs on the hosts only slows a
// call (8 ranks on 2 cores timed a lone 64 KiB themis call at 3.8 ms, its run at 2.3-2.6).
//
// The agreements run beside the calls, on the communicator's private duplicate, and are due
// two calls after they start: a blocking agreement right after a call waits for the ranks
// that call left behind, which a program's run of calls never does (on the emulated 2x4,
// 1-5 ms each, after 64 KiB calls of 3-5 ms).
//
// One timed call a module: a short run of calls (OSU's 5 a size after 2 warm-ups) counts the
// trial's calls after its warm-ups, so each call the losing module runs costs that run; the
// timed call comes back to back after an untimed one of the same module, which took the
// skew the other module left, as a long run of calls meets it.
//
// The margin: a trial of a few calls can meet the network in another state than a program's
// long run of them does (a shaper's burst can flatter a few calls; docs/design.md, "Why the
// defaults"): where the trial says the two are that close, themis gains little and risks much.
//
// Every rank makes the same calls in the same order, so every rank is at the same step of
// the same bin at every call and decides from the same agreed numbers: which module runs a
// call never depends on one rank's own clock. Calls below kFloorBytes go below, calls of
// kCeilingBytes and more run on themis, untried (there its bandwidth wins on any network
// with more than one dimension, and a trial would cost seconds of the slower module).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "scheduler.h"
#include "topology.h"

namespace themis {

// The least time an algorithm that keeps one dimension busy at a time could take for `bytes`
// of `coll` (every rank's block together) on `topo`, latencies left out: the lesser of a
// ring over every rank in rank order, at the slowest dimension's rate (tuned's ring), and the
// dimensions one after the other, pipelined perfectly, in the order that suits them best
// (han's levels, at best): its busiest dimension's bytes at its rate. A rooted collective's
// (Bcast, Reduce): the ideal, as its trees may keep off the slow links.
double below_lower_bound(const Topology &topo, Collective coll, double bytes);

class Crossover {
  public:
    static constexpr size_t kFloorBytes = size_t(16) << 10;
    static constexpr size_t kCeilingBytes = size_t(4) << 20;
    static constexpr int kSamples = 1;      // timed calls a module
    static constexpr double kMargin = 0.10; // themis must be this much faster to win a trial
    // Themis takes a bin untried where its time is at most the module below's least over this.
    static constexpr double kClear = 1.1;
    // ... and at least this share of its own least time (see decide()).
    static constexpr double kBelievable = 0.95;
    // Bins for `collectives` collectives, numbered 0..collectives-1 (the component's
    // THEMIS_COLLECTIVES list).
    explicit Crossover(int collectives) : bins_(size_t(std::max(collectives, 0))) {}
    int collectives() const { return static_cast<int>(bins_.size()); }

    enum class Runner : uint8_t { kThemis, kBelow };

    // What a blocking call does.
    struct Step {
        Runner runner;
        bool timed;  // time the run and record() it
        bool settle; // before running: the agreement shared last is due: decide() from the
                     // agreed times, and run the step it gives instead
        bool share;  // after running (and recording): start the ranks' agreement on
                     // trial_times(), due at the bin's next step that settles
    };

    // Each runner's time in a bin's trial, in seconds: the least of its timed calls;
    // infinity without one.
    struct Times {
        double themis, below;
    };

    // A blocking call of `bytes` of collective `collective` (0..collectives()-1): where it
    // runs, and the trial's next step if its bin is on trial.
    Step step(int collective, size_t bytes);
    // The time of a run step() asked to time.
    void record(int collective, size_t bytes, Runner runner, double seconds);
    // This rank's times of the bin's trial, to agree on.
    Times trial_times(int collective, size_t bytes) const;
    // Bounds known for this network, from measured or given rates (0: unknown; Bounds{}:
    // none known).
    struct Bounds {
        double below;  // the least time the module below could take: below_lower_bound()
        double themis; // the least time themis could take: every dimension busy at once
    };
    // At a step that settles: the step to run, from the agreed times. At the first, the bin
    // is decided only for a themis clearly under bounds.below, in a time the network can
    // give (at least kBelievable x bounds.themis: a shaper's burst after an idle moment can
    // carry a lone call faster than the links' rate, and that one call is no evidence); at the
    // second, for good, from the trial's times, each at least its bound where themis's was
    // under its own (a burst).
    Step decide(int collective, size_t bytes, Times agreed, Bounds bounds = Bounds{});

    // Where a call that takes no part in trials (nonblocking, persistent) runs: outside the
    // measured range as step() says, in a decided bin as decided, else nothing.
    std::optional<Runner> decided(int collective, size_t bytes) const;

    // A decided bin, as another communicator of the same processes may start with it.
    struct Decision {
        int collective;
        int bin;
        Runner runner;
        bool operator==(const Decision &o) const {
            return collective == o.collective && bin == o.bin && runner == o.runner;
        }
    };
    // Every decided bin, collective by collective, bin by bin.
    std::vector<Decision> decisions() const;
    // Takes `decided` for the bins with no call yet (a bin on trial runs its trial out).
    void adopt(const std::vector<Decision> &decided);

    // The bin of `bytes` within the measured range, its smallest size, for messages.
    static int bin_of(size_t bytes);
    static size_t bin_bytes(int bin) { return size_t(1) << bin; }

  private:
    static constexpr int kBins = 22; // log2 of kCeilingBytes
    static constexpr double kNone = std::numeric_limits<double>::infinity();
    struct Samples {
        double least = kNone;
        int count = 0;
    };
    struct Bin {
        int calls = 0;
        std::optional<Runner> winner;
        Runner likelier = Runner::kBelow; // the runner between the agreements
        Samples themis, below;
    };
    // The trial's step at its `call`-th call.
    static Step trial_step(const Bin &b, int call);
    Bin &bin(int collective, size_t bytes);
    const Bin &bin(int collective, size_t bytes) const;

    std::vector<std::array<Bin, kBins>> bins_; // per collective
};

} // namespace themis
