// coll_themis_grid_probe.h: the hosts' grid found by probing the network (src/grid_finder.h),
// inside a communicator's set-up, for dims=auto when no topology file and no Slurm topology
// gave one (coll_themis_setup.cpp; docs/usage.md, "Where the grid comes from").
//
// One rank per host (its lowest) measures; every rank runs the same GridSearch on the same
// agreed answers, so every rank finds the same grid or the same "none":
//   a measurement  the flows a probe names (a Rate: one; an Out or In probe: its two flows
//                  alone, then together), each a stream of transfers from the sending host's
//                  leader to the receiving host's, back to back, each acknowledged by one byte
//                  and timed by its sender: the first untimed (it connects, opens TCP's window
//                  and spends a shaper's burst), then 3 timed, the median kept; a flow keeps
//                  streaming, untimed, until every flow of the measurement had its timed ones,
//                  so that they are timed against each other's traffic. A transfer moves what
//                  its flow moves alone in kTargetSeconds as measured so far (128 KiB to 16 MiB;
//                  the flows of a measurement as long as the slowest needs), on the set-up's
//                  private duplicate;
//   agreed         after every measurement its rates, a failure flag and the time spent are
//                  reduced (maximum) over all ranks: every rank holds the same medians, decides
//                  `shared` alike (judge_sharing()) and stops alike when the budget
//                  (coll_themis_grid_probe_seconds) runs out or a rank failed;
//   remembered     in this process by the hosts (communicators over the same hosts probe
//                  once) and, when a search finished (a grid or none, not a failure or a
//                  budget run out), in coll_themis_calibration_file for later jobs on the
//                  same hosts (calibration_file.h): known_grid(), which the set-up uses only
//                  when every rank knows the same grid (its second round agrees on it).
#pragma once

#include "coll_themis_prelude.h"

#include <optional>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "grid_finder.h"

namespace themis {

struct ProbeOutcome {
    enum class Kept { No, Process, File }; // probed now, or where it was remembered
    GridResult grid;                       // found, or why not (grid.reason)
    double seconds = 0;                    // this rank's time probing (0 when remembered)
    Kept kept = Kept::No;
};

// What this process knows of these hosts' grid without probing: its memory, else the file
// (`kept` says which); nullopt when neither. `host_of`: every rank's host name (rank order).
std::optional<GridResult> known_grid(const std::vector<std::string> &host_of,
                                     ProbeOutcome::Kept &kept);

// Collective over m's communicator: probes (all ranks: none knew the grid alike); `comm`: the
// set-up's private duplicate, whose point-to-point traffic the probes use. The outcome is
// remembered as known_grid() reads it.
ProbeOutcome probe_grid(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                        const std::vector<std::string> &host_of, double budget_seconds);

} // namespace themis
