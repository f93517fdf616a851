// sim_paper: what themis-sim computes, apart from its command line.
//
//   simulate()          one collective: the scheduler's chunk orders, the ordering
//                       simulation's stage timings, and the paper's ideal time
//   run_paper()         the Themis paper's microbenchmark (Sec. 5.3, Table 2): six
//                       topologies x four All-Reduce sizes x the paper's three policies
//                       and the planner's choice, under three latency models
//   print_paper(), write_paper_csv()   its table and its CSV
//   format_si()         the units every report of the tool prints
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "ordering.h"
#include "testbed/paper_topologies.h"
#include "planner.h"
#include "scheduler.h"
#include "topology.h"

namespace themis::sim {

struct SimCase {
    Topology topology;
    Collective collective = Collective::AllReduce;
    double bytes = 0;
    // As the component's coll_themis_chunks and coll_themis_min_chunk_bytes (defaults
    // included): kAutoChunks = the planner chooses.
    int chunks = kDefaultChunks;
    uint64_t min_chunk_bytes = THEMIS_MIN_CHUNK_BYTES_DEFAULT;
    SchedulerParams scheduler;
    OrderingParams ordering;
    // Calls of this collective started back to back, as nonblocking calls in flight
    // together: each planned from the load the one before left (as the component with
    // coll_themis_carry_load, unless carry_load is false), run as the engine shares the
    // dimensions between them (ordering.h, CrossCall::FillIdle).
    int calls = 1;
    bool carry_load = THEMIS_CARRY_LOAD_DEFAULT;
};

// The plan request the component would make for the case (one byte elements; RS and AG
// blocks as even as the bytes allow).
PlanRequest plan_request(const SimCase &c);

struct SimResult {
    Topology topology; // the case's network, with the algorithms the planner chose
    std::vector<ChunkSchedule> schedule;
    Ordering ordering;
    double ideal = 0; // seconds: the paper's T_ideal of every call, every link busy all the time

    double utilization() const { return ordering.makespan > 0 ? ideal / ordering.makespan : 0; }
};

SimResult simulate(const SimCase &c);

// The policy label of a run: "baseline" for the paper's baseline (baseline order, FIFO),
// otherwise "<policy>_<intra>", with "_k<K>" when more than one stage runs per dimension.
std::string policy_label(Policy policy, IntraPolicy intra, int max_active);

// One run of the paper's microbenchmark: one row of its CSV.
struct PaperRun {
    std::string topology; // a name from paper_topology_names()
    double bytes = 0;
    std::string latency_model; // bandwidth_only, table2_reference or table2_latency
    std::string policy;        // baseline, themis_fifo or themis_scf
    double time = 0;           // seconds, predicted
    double ideal = 0;          // seconds

    double utilization() const { return time > 0 ? ideal / time : 0; }
};

std::vector<PaperRun> run_paper();
// The runs as tables, one per latency model: utilization per topology and size, the
// Themis+SCF speedup over the baseline, per-topology and overall averages, and, for
// the bandwidth-only model, the paper's own averages beside ours.
void print_paper(std::ostream &out, const std::vector<PaperRun> &runs);
// Header topology,size_bytes,latency_model,policy,time_us,ideal_us,utilization; one row
// per run and nothing else, so that every column stays numeric or a plain label.
void write_paper_csv(std::ostream &out, const std::vector<PaperRun> &runs);

// "1.5 ms", "100 MB", "150 GB/s": value with an SI prefix (n to T), 4 significant digits.
std::string format_si(double value, const char *unit);

} // namespace themis::sim
