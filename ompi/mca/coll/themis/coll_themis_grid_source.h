// coll_themis_grid_source.h: where dims=auto's grid of hosts comes from (docs/usage.md, "Where the
// grid comes from"), first that applies:
//   given      coll_themis_dims is a spec: no grid needed;
//   topo_file  coll_themis_topo_file;
//   slurm      Slurm's switch tree, from every rank's SLURM_TOPOLOGY_ADDR(_PATTERN) (the
//              set-up's first round gathers them: SlurmRecord);
//   probe      a grid probing found, before (this process, coll_themis_calibration_file) or
//              now (coll_themis_grid_probe.h), with at least 4 hosts and a probing budget;
//   none       node level x nodes, and why.
// The choice itself needs no round: the set-up's second round agrees that every rank knows the
// same probed grid, or has them all probe (coll_themis_setup.cpp).
#pragma once

#include "coll_themis_prelude.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coll_themis_grid_probe.h"
#include "rank_layout.h"
#include "topo_file.h"

namespace themis {

// Slurm's topology variables as a rank gives them in the set-up's first round.
struct SlurmRecord {
    enum State : int32_t { None, Set, TooLong };
    int32_t state = None;
    char text[192] = {}; // SLURM_TOPOLOGY_ADDR '\n' SLURM_TOPOLOGY_ADDR_PATTERN
};

// This process's variables (test_hooks.h reads the environment).
SlurmRecord my_slurm_record();

struct GridChoice {
    std::string source = "none"; // given | topo_file | slurm | probe | none
    std::optional<HostGrid> grid;
    std::string why;          // none: why there is no grid
    bool probe = false;       // probing applies here (see the top)
    bool known = false;       // probe: a grid (or none) known, from before or probed now
    uint64_t known_print = 0; // of what is known (every rank must know the same)
    long probes = -1;         // probe: probes measured now (0: remembered)
    std::string kept;         // remembered: "process" or "file"
    double seconds = 0;       // the time finding it took

    // What every rank must hold alike: the known grid where probing applies, else 0.
    uint64_t fingerprint() const { return probe && known ? known_print : 0; }
};

// The choice for a communicator placed as `placement`; `slurm`: every rank's record.
GridChoice choose_grid(const RankPlacement &placement, const std::vector<SlurmRecord> &slurm);

// `choice` with what probing found (now: kept No, or remembered where `kept` says).
void set_probed(GridChoice &choice, const GridResult &found, ProbeOutcome::Kept kept,
                const RankPlacement &placement);

// The communicator's layout: from the grid's hosts where it fits the nodes, else node level x
// nodes (then `choice` says none, and why, and `note` says so for the verbose log).
RankLayout layout_of(const RankPlacement &placement, GridChoice &choice, std::string &note);

// The grid event (docs/log-events.md) and its human line.
void report_grid(ompi_communicator_t *comm, const GridChoice &choice);

} // namespace themis
