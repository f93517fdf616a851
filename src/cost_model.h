// cost_model: alpha-beta time of one Reduce-Scatter or All-Gather stage on one dimension.
//
// A stage on dimension d with n peers moves, per rank, (n-1)/n of its larger side
// (the RS input, the AG output), whatever the algorithm; the algorithms differ in
// how many latency-bound steps they take (their rows in algorithms/registry.cpp), e.g.
// ring n-1, halving-doubling log2(n), direct 1 (every peer at once).
//
// A dimension's stages in flight share its bandwidth, and together reach the fraction of
// it that the dimension's fill curve (Dimension::fill) gives for their number: one stage
// alone may not fill a link (measured on the emulated network: one stage 56 %, two 78 %,
// four 94 %). Without a curve every count fills it.
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
// The fill curve's fraction for `stages` (>= 1) moving bytes at once: 1 without a curve,
// the last point past its end.
double fill_fraction(const Dimension &dim, int stages);
// Bytes/s per rank the dimension delivers with `stages` moving at once, all together:
// bandwidth x fill_fraction.
double filled_bandwidth(const Dimension &dim, int stages);
// The most the dimension delivers, with as many stages in flight as it takes: bandwidth x
// the curve's highest point (the bandwidth without a curve). What the load tracker
// charges a stage's bytes at: Themis keeps every dimension's queue busy.
double sustained_bandwidth(const Dimension &dim);
// Bandwidth time of one stage at the link's full rate: bytes sent / bandwidth.
double stage_bandwidth_time(const Dimension &dim, Phase phase, double input_bytes);
// Alpha-beta time of one stage running alone on the dimension: its fixed delay, then its
// bytes at filled_bandwidth(dim, 1).
double stage_time(const Dimension &dim, Phase phase, double input_bytes);

} // namespace themis
