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

#include "coll_themis.h"
#include "crossover.h"

namespace themis {

// Whether the crossover is measured (coll_themis_min_bytes left at its default).
inline bool crossover_measured() { return !mca_coll_themis_component.min_bytes_given; }

// Why a call of `bytes` of `collective` (a blocking slot, THEMIS_COLL_*) goes to the module
// below for its size, or nullptr: `blocking` calls of the measured range are the
// trials' (crossover_step), the others follow the decisions (see the top).
const char *size_unsupported(const mca_coll_themis_module_t *m, int collective, bool blocking,
                             size_t bytes);

// A blocking call's step in `m`'s crossover (set up, not declined): at a bin's agreement,
// the ranks agree on the trial's times and decide (verbose 1: event "crossover").
Crossover::Step crossover_step(mca_coll_themis_module_t *m, int collective, size_t bytes);

// The time of a run crossover_step() asked to time (tests add THEMIS_TEST_SLOW_THEMIS_MS or
// THEMIS_TEST_SLOW_BELOW_MS to it, so that one side looks slower: check_crossover.sh).
void crossover_record(mca_coll_themis_module_t *m, int collective, size_t bytes,
                      Crossover::Runner runner, double seconds);

} // namespace themis
