// slurm_topology: the nodes' coordinates from Slurm's tree of switches.
//
// With TopologyPlugin=topology/tree, Slurm sets for every task SLURM_TOPOLOGY_ADDR, the names
// of the switches above its node from the top level down, then the node's name, separated
// by '.', and SLURM_TOPOLOGY_ADDR_PATTERN, the kind of each field: "switch" per level of
// switches, then "node". For example "s0.s3.node12" with "switch.switch.node": node12 sits
// on leaf switch s3, under s0. Without the plugin both hold the node alone ("node12",
// "node"). Slurm writes every level of its tree for every node: a level where no switch
// holds the node comes out empty ("s0..node12"), and a node on several switches of a level
// as a host list ("s[1-2]").
//
// A tree as a grid: the job's nodes under one leaf switch form dimension 0, the leaf
// switches under one switch of the level above dimension 1, and so on up to the top
// level's switches (dimension 0 first: the nearest level, as the node level comes first
// with dims=auto). A node's coordinate in a dimension is its place among its siblings,
// names in natural order ("s2" before "s10"). It is a grid when every switch of a level
// holds as many of the job's nodes (or switches) below it; a level where all of the job's
// nodes share one switch gives no dimension. Rates are not known from Slurm.
#pragma once

#include <string>
#include <vector>

#include "grid_finder.h"

namespace themis {

struct SlurmAddress {
    std::vector<std::string> switches; // the switches above the node, top level first
    std::string node;                  // the node's name
};

// Parses one task's SLURM_TOPOLOGY_ADDR and SLURM_TOPOLOGY_ADDR_PATTERN. Throws SpecError
// whose what() names the variable and says what was expected: an empty value, a control
// byte, a pattern field other than "switch" or "node" or not ending in one "node", an address
// with another number of levels than the pattern, an empty switch name (no switch at that
// level), a node on several switches of one level, or an empty node name.
SlurmAddress parse_slurm_topology(const std::string &addr, const std::string &pattern);

// The grid of the job's nodes, one address per node (the nodes in any order; coordinates
// come back in that order). Not found, with the reason, when the addresses disagree (levels,
// a switch under two parents, a node twice), when the tree is not regular, or when fewer
// than two dimensions remain (no switches, or one level of them: node x nodes).
GridResult grid_from_slurm(const std::vector<SlurmAddress> &nodes);

// One rank's reading of Slurm's variables, as every rank gathers them.
struct SlurmReading {
    enum State { None, Set, TooLong };
    State state = None;
    std::string addr, pattern; // Set: SLURM_TOPOLOGY_ADDR, SLURM_TOPOLOGY_ADDR_PATTERN
    size_t limit = 0;          // TooLong: the most the two may hold together
};

// The hosts' places from every rank's reading (rank r on host host_of[r]): one address per
// host, hosts in name order. Every rank judges the same readings alike, so every rank takes
// the same places or the same problem. A problem in the input, named with its rank (and said
// to the user): the variables on some ranks only, a reading too long, a malformed value, two
// ranks of one host that name different places.
struct SlurmHosts {
    std::vector<std::string> hosts;
    std::vector<SlurmAddress> addresses;
    std::string problem; // non-empty: no places
};
SlurmHosts slurm_hosts(const std::vector<std::string> &host_of,
                       const std::vector<SlurmReading> &readings);

// "s2" < "s10": runs of digits compare as numbers, the rest byte by byte.
bool natural_less(const std::string &a, const std::string &b);

} // namespace themis
