// coll_themis_trace.h: a communicator's stage-timing trace (coll_themis_trace): one CSV per
// rank, every call's stages appended as it completes (src/trace.h writes the rows).
#pragma once

#include "coll_themis_prelude.h"

#include <fstream>
#include <vector>

#include "ompi/communicator/communicator.h"
#include "ordering.h"
#include "scheduler.h"

namespace themis {

class StageTrace {
  public:
    // Opens this rank's file for `comm` when coll_themis_trace names a prefix; one that
    // cannot be written is said, and the collectives run on without it.
    void open(ompi_communicator_t *comm);
    bool is_open() const { return file_.is_open(); }
    // A complete call's stage timings: its schedule and its stages' runs.
    void write(const std::vector<ChunkSchedule> &schedule, const std::vector<StageRun> &runs);
    // The next call is numbered 0 again (a spare serving a new communicator).
    void restart() { calls_ = 0; }

  private:
    std::ofstream file_;
    long calls_ = 0;
};

} // namespace themis
