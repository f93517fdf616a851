// rank_layout: which rank of a communicator sits where in the topology.
//
// The topology numbers its positions with dimension 0 fastest. A communicator's ranks
// are placed on those positions either as the user's spec says (position = rank) or,
// with "auto", from process locality: the ranks of a node form dimension 0 (in rank
// order) and the nodes form dimension 1 (in the order of their lowest rank), so any
// placement of ranks on nodes works as long as every node holds as many ranks.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "topology.h"

namespace themis {

// The spec is well formed but does not fit the communicator; what() says why.
class LayoutError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct RankLayout {
    Topology topology;
    std::vector<int> rank_at; // position -> communicator rank
    std::vector<int> position_of; // communicator rank -> position
};

// `dims`: "auto[:bw=..][:lat=..][:alg=..]" (lists give the node level, then the
// network level) or a full spec. `node_of[r]`: an id shared by exactly the ranks on
// rank r's node. Throws SpecError for a malformed spec, LayoutError when it does not
// fit (wrong number of ranks, nodes that cut across a dimension, uneven nodes).
RankLayout make_rank_layout(const std::string &dims, const std::vector<int> &node_of);

} // namespace themis
