// coll_themis_trace.cpp: a communicator's stage-timing trace (coll_themis_trace.h).
#include "coll_themis_trace.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "coll_themis.h"
#include "coll_themis_log.h"
#include "coll_themis_params.h"
#include "trace.h"

namespace themis {

void StageTrace::open(ompi_communicator_t *comm) {
    if (params().trace == nullptr || params().trace[0] == '\0') return;
    const std::string path = std::string(params().trace) + ".cid" +
                             std::to_string(themis_comm_id(comm)) + ".rank" +
                             std::to_string(ompi_comm_rank(comm)) + ".csv";
    file_.open(path, std::ios::trunc);
    if (!file_) {
        // Tracing is a diagnostic: the collectives run on without it. Every process has the
        // same prefix: the first one says it, once; the others at verbose level 1.
        const std::string why = std::strerror(errno);
        if (mca_coll_themis_first_time("trace-unwritable") && mca_coll_themis_first_process())
            mca_coll_themis_show_help("trace-unwritable", path.c_str(), why.c_str());
        say(1, comm, "cannot write the trace " + path + ": " + why);
        return;
    }
    write_stage_csv_header(file_, true);
    say(1, comm, "stage timings traced to " + path);
}

void StageTrace::write(const std::vector<ChunkSchedule> &schedule,
                       const std::vector<StageRun> &runs) {
    write_stage_csv(file_, schedule, runs, calls_++);
    file_.flush();
}

} // namespace themis
