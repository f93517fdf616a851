// rate_refiner: the per-dimension bandwidths a communicator plans with, revised from what its
// own calls measure, so that rates measured once at set-up (under whatever load the machine
// and the fabric had then) do not steer the whole job.
//
// Evidence: a call run alone on the engine (and, nonblocking, driven all along) gives, per
// dimension d, the time its plan predicted d busy (Plan::busy, from the rates in force) and the
// time d was measured busy (a stage of it running here); their ratio, predicted / measured, is the
// factor by which d's rate is off (1: right; 0.5: d delivers half of what the plan assumes).
// A dimension with slack, busy for less than three quarters of the call here because another
// one held the call up, can read faster than its links run: data its peer sent before its stage
// began here arrived unseen (eager messages), a shaper refilled its burst while it idled (on the
// emulated networks a 25 Mbit/s link read 1.7 times, a 12.5 Mbit/s one 2.6 times its rate). Its
// reading counts at most as the factor that would have kept it busy for those three quarters
// (1 where that is less): a step a window toward a rate that was read low, and never a slowdown
// read as a speed-up. A reading slower than planned counts whole.
//
// A window ends with the call that makes it hold at least `window` calls and at least
// `min_window_seconds` of their predicted time (the agreement costs a small allreduce: a
// floor on the window's length keeps that cost a small fraction of it). Both counts come
// from values every rank has alike (every rank runs the same calls, planned from the same
// rates), so every rank ends the same windows. Then each rank's median ratio per dimension
// is summed over the ranks with how many ranks had one (the agreement, collective;
// evidence() and revise()), and the means are the agreed factors. The rates are revised when one
// dimension's factor is off the others' by more than `threshold` (its factor over the geometric
// mean of the other measured dimensions' factors, less 1, either way; two measured dimensions at
// least): then every dimension's rate is multiplied by its factor. A change alike
// on every dimension (all links slower, or every stage waiting for a busy core) leaves the rates'
// ratios, and so the plans, as they are, and revises nothing. Every rank revises at the same call,
// to the same rates.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "calibration.h"
#include "plan.h"

namespace themis {

class RateRefiner {
  public:
    // `dims` dimensions; `fixed[d]`: d's rate is not revised (given by the user); a
    // `threshold` of 0 revises nothing.
    RateRefiner(int dims, int window, double min_window_seconds, double threshold,
                std::vector<bool> fixed);

    // A call predicted to take `seconds`, counted as it starts: its evidence where there is
    // some (per dimension predicted and measured busy seconds, a dimension measured 0 giving
    // none, and the `elapsed` seconds the call ran here), or none. True when the call ends a
    // window: the ranks then agree on evidence() and call revise().
    bool count_call(double seconds, const std::vector<double> *predicted,
                    const std::vector<double> *measured, double elapsed);
    // Evidence of a call counted earlier (a nonblocking call, known when it completes): it
    // joins the window open now. Windows end by counts alone, the same on every rank; which
    // window a rank's evidence falls in may differ, and changes only which agreement sums it.
    void add_evidence(const std::vector<double> &predicted, const std::vector<double> &measured,
                      double elapsed);

    // This rank's evidence of the window, to be summed over the ranks element by element:
    // per dimension its median ratio (0 without one), then per dimension 1 or 0 (whether it
    // has one). Its size is 2 x dims; it stays valid until the next count_call().
    const std::vector<double> &evidence();

    // The agreed sums of evidence(): the factor of every dimension when the rates are to be
    // revised (1 for a fixed dimension or one no rank had evidence of), else nothing. Starts
    // the next window.
    std::optional<std::vector<double>> revise(const std::vector<double> &agreed);

    // The agreed factors of the last window, after revise() (for messages).
    const std::vector<double> &last_factors() const { return factors_; }

  private:
    int dims_, window_;
    double min_window_seconds_, threshold_;
    std::vector<bool> fixed_;
    int calls_ = 0;
    double seconds_ = 0;                      // predicted, of this window's calls
    std::vector<std::vector<double>> ratios_; // per dimension, this window's, room kept
    std::vector<double> evidence_, factors_;
};

// The rules of evidence (why each: rate_refiner.cpp).
// Whether a call run by `plan` on `topo` tells its links' rates: an All-Reduce large enough
// for the links, not the transport's buffers, and long enough for bandwidth, not latency, to
// make its busy time.
bool gives_evidence(const Topology &topo, const Plan &plan);
// Whether a nonblocking call whose progress loop left at most `longest_gap` seconds between
// two drives was driven throughout its `predicted` seconds: a stage is seen to end when the
// loop next runs, so time the program computed between start and wait would be charged to
// whichever dimensions were busy.
bool driven_throughout(double longest_gap, double predicted);

// The refiner of a communicator planned on `topo`, its dimensions' bandwidths from
// `bandwidth_source` (given and default ones stay fixed), revising every `calls` calls past
// `threshold`; nullptr where nothing can be revised (no measured or cached rate, `calls` or
// `threshold` 0). Its windows last at least the agreement's predicted time a hundred times.
std::unique_ptr<RateRefiner> make_rate_refiner(const Topology &topo,
                                               const std::vector<RateSource> &bandwidth_source,
                                               int calls, double threshold);

} // namespace themis
