// rank_layout: which rank of a communicator sits where in the topology.
//
// The topology numbers its positions with dimension 0 fastest. A communicator's ranks
// are placed on those positions either as the user's spec says (position = rank) or,
// with "auto", from where the ranks run. "auto" builds these levels, fastest first:
//
//   inside a node, split by packages   package   the ranks of a package, in rank order
//                                      node      the packages of the node, by package index
//   inside a node, not split           node      the ranks of the node, in rank order
//   between nodes, no topology file    network   the nodes, in the order of their lowest rank
//   between nodes, topology file       network0, network1, ...  the file's dimensions; a
//                                                node sits at its host's coordinates
//
// so position = (index in the node) + (ranks per node) * (node's slot), the slot being the
// node's place in that order, or c0 + n0 * (c1 + n1 * ...) on the file's grid. Any
// placement of ranks on nodes works as long as every node holds as many ranks. Levels with
// one peer are dropped with their attribute values (a single rank keeps one level).
//
// The node level is split when asked to, every rank's package is known, every node's
// ranks sit on two or more packages and every package of every node holds as many ranks:
// ranks of one package share its memory and caches, so that level is the cheaper one.
//
// Attribute lists with auto, "auto[:bw=LIST][:lat=LIST][:alg=LIST][:fill=LIST]", hold
//   1 value          for every level;
//   2 values         the first for the levels inside a node, the second for the levels
//                    between nodes (so one setting fits with or without the package split
//                    and the topology file);
//   1 per level      in the order above, counting the levels before any is dropped, e.g.
//                    package,node,network0,network1.
// Defaults: bw 100Gbps inside a node, 25Gbps between; lat 1us, 5us; alg direct inside a
// node up to 8 peers, elsewhere ring, which the planner may run as hd for a power of two
// peers (Dimension::alternatives; alg= pins the algorithms); fill 1 (full).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "topo_file.h"
#include "topology.h"

namespace themis {

// The spec is well formed but does not fit the communicator; what() says why.
class LayoutError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct RankLayout {
    Topology topology;
    std::vector<int> rank_at;     // position -> communicator rank
    std::vector<int> position_of; // communicator rank -> position
    // One per topology dimension, for log lines: "package", "node", "network",
    // "network<k>" (the topology file's dimension k) with auto, "dim<d>" with a spec.
    std::vector<std::string> level_names;
};

// Where each rank of a communicator runs, indexed by communicator rank.
struct RankPlacement {
    std::vector<int> node_of;         // an id shared by exactly the ranks on the same node
    std::vector<std::string> host_of; // hostname; empty when unknown
    std::vector<int> package_of;      // package (socket) within the node, -1 unknown; may be empty
};

// `dims`: "auto[:bw=..][:lat=..][:alg=..]" or a full spec (see topology.h). `grid`: the
// network between hosts from the topology file (nullptr: none); `split_packages`: allow
// the package split; both matter to auto only. Throws SpecError for a malformed spec,
// LayoutError when it does not fit (wrong number of ranks, nodes that cut across a
// dimension, uneven nodes, nodes that do not fill the grid exactly), std::invalid_argument
// when host_of or package_of is neither empty nor one per rank.
RankLayout make_rank_layout(const std::string &dims, const RankPlacement &placement,
                            const HostGrid *grid = nullptr, bool split_packages = true);

// The communicator ranks of the peers of the rank at `position` on the dimensions marked
// in `dims` (every coordinate but its own), dimension after dimension.
std::vector<int> peer_ranks(const RankLayout &layout, int position, const std::vector<bool> &dims);

// Per dimension of `layout`, whether it has peers and each of its groups sits on one node
// (node_of: per communicator rank, as in RankPlacement).
std::vector<bool> node_local_dimensions(const RankLayout &layout, const std::vector<int> &node_of);

} // namespace themis
