// cost_model: the phases a stage can run, and the alpha-beta time of one stage on one
// dimension.
//
// A stage on dimension d with n peers moves, per rank, (n-1)/n of its larger side (the
// input of a narrowing phase, the output of a widening one), whatever the algorithm; the
// algorithms differ in how many latency-bound steps they take (their rows in
// algorithms/registry.cpp), e.g. ring n-1, halving-doubling log2(n), direct 1 (every peer
// at once). A rooted phase (a group cast of a broadcast or reduce tree, tree_packing.h)
// moves the whole chunk out of (or into) its source, in two steps.
//
// A dimension's stages in flight share its bandwidth, and together reach the fraction of
// it that the dimension's fill curve (Dimension::fill) gives for their number: one stage
// alone may not fill a link (docs/design.md, "Why the defaults"). Without a curve every count
// fills it.
#pragma once

#include "topology.h"

namespace themis {

// How a stage moves a chunk's blocks among a dimension's n peers (plan.h lays the blocks
// out; one row each in cost_model.cpp):
//   ReduceScatter  every peer sends block j to peer j and reduces what it receives into its
//                  own block: it keeps one block of n, summed over the group
//   AllGather      every peer sends its own block to every other: it ends with all n
//   Cast           one group cast of a broadcast tree (tree_packing.h): the source peer
//                  scatters the chunk over the targets, one block each, and they all-gather
//                  it; the group's other peers sit it out
//   Collect        the same cast of a reduce tree, backwards: the targets reduce-scatter
//                  the chunk, then send their blocks to the source, which reduces them in
enum class Phase { ReduceScatter, AllGather, Cast, Collect };

// What a phase is made of: everything the core asks of a phase follows from these.
//   narrows   a rank keeps one block of its input (output = input / n); otherwise it
//             collects every block (output = input x n)
//   reduces   received blocks are reduced into this rank's, not copied
//   rooted    a tree's group cast: the chunk moves whole, from or to one source peer
//             chosen per cast (PlanOp::root_block), to or from some of the others
//             (PlanOp::targets); the group's other peers, and every other group, sit it out.
//             Its stages follow the chunk's packed tree (ChunkSchedule::tree), not an order
//             of dimensions.
struct PhaseInfo {
    Phase id;
    const char *name; // short, for plans and traces: "RS", "AG", "CA", "CO"
    bool narrows, reduces, rooted;
};
const PhaseInfo &phase_info(Phase p);
const char *phase_name(Phase p);

// Bytes of the stage's larger side: a narrowing phase's input, a widening one's output.
double stage_larger_side(const Dimension &dim, Phase phase, double input_bytes);
// Bytes of the stage's output.
double stage_output_bytes(const Dimension &dim, Phase phase, double input_bytes);
// Bytes one rank sends during the stage.
double stage_bytes_sent(const Dimension &dim, Phase phase, double input_bytes);
// Number of latency-bound steps of a stage of `phase`: the dimension's algorithm's, two
// for a rooted phase (algorithms/group_cast.cpp).
int stage_steps(const Dimension &dim, Phase phase);
// Fixed delay of one stage: steps x step latency.
double stage_latency(const Dimension &dim, Phase phase);
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
