// coll_themis_crossover.h: which module runs a call for its size, the glue of crossover.h.
//
// With coll_themis_min_bytes set by the user, that size decides for every call: smaller
// ones go to the module below. Left at its default, a communicator measures where themis
// gets faster than the module below, per collective (src/crossover.h): its blocking calls
// in the measured range take part in the trials and then follow the decision; its
// nonblocking and persistent calls, which cannot be timed alone, follow what the blocking
// ones decided for their size, and min_bytes's default until they have. Every input of
// these choices is the same on every rank at every call (the call's size, the user's
// setting, the decisions of earlier blocking calls, taken from agreed times).
#pragma once

#include "coll_themis_prelude.h"

#include <cstddef>
#include <list>

#include "coll_themis.h"
#include "crossover.h"

namespace themis {

// The trials' agreements in flight on a communicator: each the private duplicate's
// nonblocking allreduce of one bin's times (the largest over the ranks), started after the
// call that shares them and waited for at the bin's next step that settles (src/crossover.h).
class TrialAgreements {
  public:
    TrialAgreements() = default;
    TrialAgreements(const TrialAgreements &) = delete;
    TrialAgreements &operator=(const TrialAgreements &) = delete;
    ~TrialAgreements() { finish_all(); }
    // Starts the agreement of `collective`'s bin `bin` on `mine` over `dup`.
    void start(ompi_communicator_t *dup, int collective, int bin, Crossover::Times mine);
    // Waits for that bin's agreement: the agreed times. One that failed, or never started,
    // counts themis as never measured (below, as Open MPI's error then ends the job anyway).
    Crossover::Times finish(int collective, int bin);
    // Waits for every agreement in flight (every rank started them): before the private
    // duplicate is freed or handed on.
    void finish_all();

  private:
    struct InFlight {
        int collective, bin;
        double in[2], out[2];
        ompi_request_t *request; // nullptr: it did not start
    };
    std::list<InFlight> in_flight_; // stays where the requests write
};

// Whether the crossover is measured (coll_themis_min_bytes left at its default).
inline bool crossover_measured() { return !mca_coll_themis_component.min_bytes_given; }

// Why a call of `bytes` of `collective` (a blocking slot, THEMIS_COLL_*) goes to the module
// below for its size, or nullptr: `blocking` calls of the measured range are the
// trials' (crossover_step), the others follow the decisions (see the top).
const char *size_unsupported(const mca_coll_themis_module_t *m, int collective, bool blocking,
                             size_t bytes);

// A blocking call's step in `m`'s crossover (set up, not declined): where it settles, the
// ranks' agreed times decide (verbose 1: event "crossover").
Crossover::Step crossover_step(mca_coll_themis_module_t *m, int collective, size_t bytes);

// After a step that shares: the ranks start agreeing on the bin's trial times.
void crossover_share(mca_coll_themis_module_t *m, int collective, size_t bytes);

// The time of a run crossover_step() asked to time (tests add THEMIS_TEST_SLOW_THEMIS_MS or
// THEMIS_TEST_SLOW_BELOW_MS to it, so that one side looks slower: check_crossover.sh).
void crossover_record(mca_coll_themis_module_t *m, int collective, size_t bytes,
                      Crossover::Runner runner, double seconds);

} // namespace themis
