// coll_themis_refine.h: the rate refinement's glue (src/rate_refiner.h): its settings agreed
// at set-up, the ranks' agreement at the end of every window.
//
// Rates measured at set-up (coll_themis_calibration_seconds) hold what the machine and the
// fabric did during that half second; a job's own calls then show what they do. Every
// coll_themis_refine_calls blocking calls on themis (and at least 100 times the agreement's
// predicted time: rate_refiner.h), at the same call on every rank, the
// ranks sum their evidence through the module below's allreduce on the communicator (2 x
// dimensions doubles) and revise the measured rates alike where one dimension is off
// against the others by more than coll_themis_refine_threshold; the next calls plan from
// the revised rates. Rates the user gave, and the defaults kept where nothing is measured
// (coll_themis_calibration_seconds 0), are the user's word: never revised.
#pragma once

#include "coll_themis_prelude.h"

#include <memory>

#include "coll_themis.h"
#include "coll_themis_calibrate.h"
#include "rate_refiner.h"

namespace themis {

class Context;

// Collective, at set-up: the refiner of a communicator planned from `rates`, or nullptr:
// refinement off (either parameter 0), no measured or cached rate to revise, or the ranks
// given different settings (event "mismatch", the fallback: off on every rank).
std::unique_ptr<RateRefiner> make_refiner(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                          const CalibratedTopology &rates);

// Whether a blocking call predicted to take `predicted_seconds` on `topo` tells its links'
// rates: one long enough for bandwidth, not latency, to make its busy time.
bool gives_evidence(const Topology &topo, double predicted_seconds);

// Collective, after a blocking call whose Context::run() ended a window: the ranks sum their
// evidence and revise the rates alike.
void refine_rates(mca_coll_themis_module_t *m, Context &ctx);

} // namespace themis
