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

// The rules of evidence (which calls tell the links' rates) are the core's: rate_refiner.h.

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
