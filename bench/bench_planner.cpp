// bench_planner: what planning one collective costs (Google Benchmark). A measurement,
// not a test: it asserts nothing. Results and the command are in bench/RESULTS.md.
//
//   BM_CompilePlan      compile_plan(): the planner's choice and this rank's byte ranges;
//                       what a plan-cache miss costs
//   BM_PlanChoice       predict_plan() alone: the chunk count and algorithms the planner
//                       chooses, several schedules and ordering simulations
//   BM_ScheduleOrder    schedule_chunks() + simulate_schedule() of one 64-chunk schedule
//   BM_PlanCacheHit     PlanCache::get() of a plan already cached; what every later call
//                       with the same inputs costs
//
// Each on an All-Reduce of 1 GB of floats (Themis, SCF, K = 1, latency load model, chunk
// count chosen by the planner as the component does by default), on the paper's
// 4D-Ring_SW_SW_SW (1024 ranks, three switch dimensions whose algorithm the planner
// chooses) and on a small 2x2x2x2.
#include <benchmark/benchmark.h>

#include <string>

#include "plan.h"
#include "plan_cache.h"
#include "planner.h"
#include "testbed/paper_topologies.h"

namespace {

using namespace themis;

constexpr uint64_t kBytes = 1000000000;
constexpr uint64_t kElementSize = 4;

// A paper topology by name, or a dimension spec.
Topology topology_named(const std::string &name) {
    auto paper = paper_topology(name);
    return paper ? *paper : parse_topology(name);
}

PlanRequest allreduce_request() {
    PlanRequest req;
    req.collective = Collective::AllReduce;
    req.element_size = kElementSize;
    req.block_counts = {kBytes / kElementSize};
    req.chunks = kAutoChunks;
    return req;
}

void label(benchmark::State &state, const Topology &topo) {
    state.SetLabel(std::to_string(topo.size()) + " ranks, " + std::to_string(topo.num_dims()) +
                   " dims");
}

void BM_CompilePlan(benchmark::State &state, const std::string &topology) {
    const Topology topo = topology_named(topology);
    const PlanRequest req = allreduce_request();
    for (auto _ : state) benchmark::DoNotOptimize(compile_plan(topo, req));
    label(state, topo);
}

void BM_ScheduleOrder(benchmark::State &state, const std::string &topology) {
    const Topology topo = topology_named(topology);
    const PlanRequest req = allreduce_request();
    const std::vector<double> chunks = split_bytes(static_cast<double>(kBytes), 64);
    for (auto _ : state) {
        const auto schedule = schedule_chunks(topo, req.collective, chunks, req.scheduler);
        benchmark::DoNotOptimize(simulate_schedule(topo, schedule, req.ordering));
    }
    label(state, topo);
}

void BM_PlanChoice(benchmark::State &state, const std::string &topology) {
    const Topology topo = topology_named(topology);
    const PlanRequest req = allreduce_request();
    for (auto _ : state) benchmark::DoNotOptimize(predict_plan(topo, req));
    label(state, topo);
}

void BM_PlanCacheHit(benchmark::State &state, const std::string &topology) {
    const Topology topo = topology_named(topology);
    const PlanRequest req = allreduce_request();
    PlanCache cache;
    cache.get(topo, req); // the miss that fills it
    for (auto _ : state) benchmark::DoNotOptimize(cache.get(topo, req));
    label(state, topo);
}

const std::string kPaper4D = "4D-Ring_SW_SW_SW";
const std::string kSmall4D = "2x2x2x2";

} // namespace

BENCHMARK_CAPTURE(BM_CompilePlan, paper_4D, kPaper4D)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CompilePlan, small_4D, kSmall4D)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanChoice, paper_4D, kPaper4D)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanChoice, small_4D, kSmall4D)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleOrder, paper_4D, kPaper4D)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleOrder, small_4D, kSmall4D)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PlanCacheHit, paper_4D, kPaper4D)->Unit(benchmark::kNanosecond);
BENCHMARK_CAPTURE(BM_PlanCacheHit, small_4D, kSmall4D)->Unit(benchmark::kNanosecond);

BENCHMARK_MAIN();
