// paper_topologies: the six topologies of the Themis paper's Table 2, for the simulator's
// reproduction of the paper (tools/sim_paper.h) and the tests that check it. Not part of the
// component: nothing it runs is one of these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topology.h"

namespace themis {

// A topology of Table 2 by name (e.g. "3D-SW_SW_SW_homo"), with the table's algorithms; a
// switch dimension may also run direct or ring.
std::optional<Topology> paper_topology(const std::string &name);
std::vector<std::string> paper_topology_names();

} // namespace themis
