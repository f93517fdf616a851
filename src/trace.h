// trace: stage timings as CSV, one row per stage run, the same columns whether they
// come from the ordering simulation (themis-sim --csv) or from the engine at run time
// (coll_themis_trace), so a measured timeline can be laid beside the predicted one.
//
//   [call,]chunk,stage,dim,phase,input_bytes,ready_us,start_us,end_us
//
// The optional leading `call` column numbers the collectives of one trace file (the
// engine appends one call after another); rows are in start order within a call.
#pragma once

#include <istream>
#include <ostream>
#include <vector>

#include "ordering.h"
#include "scheduler.h"

namespace themis {

void write_stage_csv_header(std::ostream &out, bool with_call);
// The runs of one call (sorted by start time), `call` < 0: no call column.
void write_stage_csv(std::ostream &out, const std::vector<ChunkSchedule> &schedule,
                     std::vector<StageRun> runs, long call = -1);

// The runs of call `call` of a trace (the last call when `call` < 0; a file without a
// call column is one call). Throws std::runtime_error naming the line that is malformed.
std::vector<StageRun> read_stage_csv(std::istream &in, long call = -1);

// Per dimension: the time at least one stage of `runs` was running there.
std::vector<double> busy_per_dim(const std::vector<StageRun> &runs, int num_dims);
// The end of the last stage.
double makespan(const std::vector<StageRun> &runs);

} // namespace themis
