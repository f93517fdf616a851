// topo_file: the network between hosts, as the user's topology file
// (coll_themis_topo_file) describes it.
//
// The file gives each host's coordinates in the network's dimensions and nothing else:
// rates are measured at run time. With it, dims=auto lays the nodes of a communicator
// out over those dimensions instead of one flat network level (see rank_layout.h).
//
// Format: one statement per line; '#' starts a comment that runs to the end of the
// line; blank lines and extra spaces or tabs are ignored.
//
//   # 4 hosts on a 2 x 2 network
//   dims 2x2            # sizes of the network's dimensions, dimension 0 fastest
//   host tmh0 0 0       # host NAME, then one coordinate per dimension, 0-based
//   host tmh1 1 0
//   host tmh2 0 1
//   host tmh3 1 1
//
// `dims` comes once, before the first `host`. A host name is the hostname its ranks
// report, compared exactly. Each host and each cell appears at most once; cells may
// stay empty and hosts may be absent from a job: the layout checks that a
// communicator's nodes fill the grid.
#pragma once

#include <istream>
#include <map>
#include <string>
#include <vector>

namespace themis {

struct HostGrid {
    std::vector<int> sizes;                         // per dimension, dimension 0 fastest
    std::map<std::string, std::vector<int>> coords; // host name -> one coordinate per dim
};

// Parses a topology file read from `in`; `name` (usually its path) prefixes every error.
// Throws SpecError whose what() reads "NAME:LINE: FIELD: expected ..., got ...".
HostGrid parse_topo_file(std::istream &in, const std::string &name);

// Reads and parses the file at `path`; throws SpecError when it cannot be read.
HostGrid read_topo_file(const std::string &path);

} // namespace themis
