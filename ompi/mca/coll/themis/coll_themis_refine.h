// coll_themis_refine.h: the rate refinement's glue (src/rate_refiner.h): its settings agreed
// at set-up, the ranks' agreement at the end of every window.
//
// Rates measured at set-up (coll_themis_calibration_seconds) hold what the machine and the
// fabric did during that half second; a job's own calls then show what they do. Every
// coll_themis_refine_calls calls on themis, blocking or not (and at least 100 times the
// agreement's predicted time: rate_refiner.h), at the same call on every rank, the ranks sum
// their evidence (2 x dimensions doubles) and revise the measured rates alike where one
// dimension is off against the others by more than coll_themis_refine_threshold; the calls
// after it plan from the revised rates. A blocking call that ends a window sums through the
// module below's allreduce on the communicator; a nonblocking one, which must not wait for the
// other ranks, starts the private duplicate's nonblocking allreduce, and the communicator's
// calls that start before it completes wait for it (blocking ones in their entry point,
// nonblocking ones held in the progress loop), so that every rank plans them alike. Rates the user
// gave, and the defaults kept where nothing is measured (coll_themis_calibration_seconds 0), are
// the user's word: never revised.
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <optional>

#include "coll_themis.h"
#include "coll_themis_agreement.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_log.h"
#include "plan.h"
#include "rate_refiner.h"
#include "scheduler.h"

namespace themis {

class Context;

// The refinement's settings, asked in the set-up's second round (coll_themis_agreement.h):
// every rank must count the same windows and decide alike, so ranks given different values
// all go without (the event mismatch).
class RefineQuestion {
  public:
    void ask(Agreement &agreement);
    // After the agreement: the refiner of a communicator planned from `rates`, or nullptr:
    // refinement off (either parameter 0), no measured or cached rate to revise, or the ranks
    // given different settings (then `said` gets the event mismatch).
    std::unique_ptr<RateRefiner> settle(const Agreement &agreement, const CalibratedTopology &rates,
                                        std::optional<LogEvent> &said) const;

  private:
    Agreement::Slot same_calls_ = 0, same_threshold_ = 0;
};

// The refiner of a communicator whose settings were agreed before (an inheriting one).
std::unique_ptr<RateRefiner> make_refiner(const CalibratedTopology &rates);

// Whether a call run by `plan` (its collective, bytes and predicted time) on `topo` tells its
// links' rates: an All-Reduce large enough for the links, not the transport's buffers, and
// long enough for bandwidth, not latency, to make its busy time.
// Only All-Reduces: on the emulated 2x2x2 50/100/200 network a Reduce-Scatter's busy times read
// the node level 4.5 times faster than its measured rate and an All-Gather's the fastest
// dimension 1.3 times, with rates right (bench/RESULTS.md, "Rates revised at run time"), where
// an All-Reduce's agreed within 18 %; revising from them slowed the All-Gathers after to 37 %.
bool gives_evidence(const Topology &topo, const Plan &plan);

// A nonblocking call tells them only when the progress loop drove it almost all along: no
// two of its drives further apart than this share of its predicted time. A stage is seen to
// end when the loop next runs, so a program that computes between start and wait would have
// its computing charged to whichever dimensions were busy; a gap of a quarter changes one
// dimension's factor by at most 1 / 1.25, inside the default threshold. Shorter gaps are the
// scheduler's on a busy machine (0.3-5 ms here, 4 ranks on 2 cores), as in blocking calls.
constexpr double kLongestDriveGap = 0.25;

// Collective, after a blocking call whose Context::run() ended a window: the ranks sum their
// evidence and revise the rates alike.
void refine_rates(mca_coll_themis_module_t *m, Context &ctx);

// The same sums for a window that a nonblocking call ended, without waiting (a nonblocking
// call is local): the private duplicate's nonblocking allreduce of `n` doubles, `in` and
// `out` kept until its request completes (Context::start holds the calls after it until
// then). nullptr if it did not start.
ompi_request_t *start_refine_agreement(mca_coll_themis_module_t *m, const double *in, double *out,
                                       int n);

} // namespace themis
