// timeline_svg: one simulated collective drawn as per-dimension activity over time, in the
// manner of the Themis paper's Fig. 5 and Fig. 10.
//
//   one lane per dimension (sub-lanes when K > 1 lets stages overlap), one rectangle per
//   stage run from its start to its end, coloured by chunk; Reduce-Scatter solid,
//   All-Gather hatched; a time axis, the ideal time marked, a legend, and a title with
//   topology, collective, size, policy and utilization. Hovering a rectangle names it.
#pragma once

#include <string>

#include "sim_paper.h"

namespace themis::sim {

// The SVG document. `topology_label` is how the title names the network (the user's
// paper name or spec; the canonical spec is long); `timing` says where the stage times
// come from ("predicted" by the simulation, "measured" from a trace).
std::string timeline_svg(const SimCase &c, const SimResult &r, const std::string &topology_label,
                         const char *timing = "predicted");

} // namespace themis::sim
