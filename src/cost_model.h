// cost_model: alpha-beta time of one Reduce-Scatter or All-Gather stage on one dimension.
//
// A stage on dimension d with n peers moves, per rank, (n-1)/n of its larger side
// (the RS input, the AG output), whatever the algorithm; the algorithms differ in
// how many latency-bound steps they take (their rows in algorithms/registry.cpp), e.g.
// ring n-1, halving-doubling log2(n), direct 1 (every peer at once).
#pragma once

#include "topology.h"

namespace themis {

enum class Phase { ReduceScatter, AllGather };

const char *phase_name(Phase p);

// Bytes of the stage's larger side: RS input, AG output.
double stage_larger_side(const Dimension &dim, Phase phase, double input_bytes);
// Bytes of the stage's output.
double stage_output_bytes(const Dimension &dim, Phase phase, double input_bytes);
// Bytes one rank sends during the stage.
double stage_bytes_sent(const Dimension &dim, Phase phase, double input_bytes);
// Number of latency-bound steps of the dimension's algorithm.
int stage_steps(const Dimension &dim);
// Fixed delay of one stage: steps x step latency.
double stage_latency(const Dimension &dim);
// Bandwidth time of one stage: bytes sent / bandwidth.
double stage_bandwidth_time(const Dimension &dim, Phase phase, double input_bytes);
// Alpha-beta time of one stage running alone on the dimension.
double stage_time(const Dimension &dim, Phase phase, double input_bytes);

} // namespace themis
