// tree_packing: a broadcast tree for every chunk of a rooted collective, chosen greedily from
// per-link loads, so that the chunks together keep every rank's links in and out busy.
//
// Why trees. Scatter then all-gather makes the root send 2 S (N-1)/N; every other rank need
// receive S only once, and no set of ranks can take in more than its links carry
// (Topology::broadcast_rate). Spanning trees packed by their loads approach that bound
// (docs/design.md, "The rooted bound").
//
// A tree is a list of group casts. A cast moves the whole chunk, on one dimension, from a
// rank that holds it (the source) to the ranks of its group there that do not (the targets):
// the source scatters the chunk over the targets, one block each, and the targets
// all-gather their blocks. The source sends the chunk once; every target receives it once
// and sends (t-1)/t of it, for t targets. A Reduce runs the casts backwards (the targets
// reduce-scatter, then send their blocks to the source, which reduces them).
//
// The choice. The casts of a tree are added one at a time from the ranks holding the chunk
// so far, each the one of least cost per rank it reaches: the cost of a cast sums, over
// the links it loads, the seconds it adds there weighted by exp(kSteepness x the link's
// load after it / the load a perfect packing would have reached by this chunk). A link
// ahead of the others costs steeply more, so each chunk goes round the busiest ones. A
// group's cast comes from its holder with the least load out (the lowest rank of those);
// ties between groups take the lower source rank, then the lower dimension. Same inputs,
// same trees, bit for bit, so every rank packs them alone.
#pragma once

#include <vector>

#include "topology.h"

namespace themis {

struct GroupCast {
    int dim = 0;
    int source = 0;           // a rank that holds the chunk before the cast
    std::vector<int> targets; // the other ranks of its group on dim that lack it, ascending
};

// Casts in order: each source holds the chunk once the casts before it are done; together
// they reach every rank but the root exactly once.
using CastTree = std::vector<GroupCast>;

// One tree per chunk of `chunk_bytes` (bytes each), broadcast from `root`.
std::vector<CastTree> pack_broadcast_trees(const Topology &topo, int root,
                                           const std::vector<double> &chunk_bytes);

// Seconds of data every link carries under `trees`: in[rank * D + d] into `rank` on dimension
// d, out[...] out of it, at the dimension's bandwidth.
struct LinkLoads {
    std::vector<double> in, out;
    double busiest() const;
};
LinkLoads cast_loads(const Topology &topo, const std::vector<CastTree> &trees,
                     const std::vector<double> &chunk_bytes);

} // namespace themis
