// order_mix: the best mix of dimension orders, as a bound on what any per-chunk order
// choice can reach (issue: "where an order mix beats the greedy, say so").
//
// A chunk that takes order o (its Reduce-Scatter order; an All-Reduce's All-Gather runs it
// backwards) keeps each dimension d busy for L_d(o) seconds per byte: the bytes its stages
// send on d over d's bandwidth. Sending a fraction x_o of the data along each order o, the
// collective cannot end before max_d sum_o x_o L_d(o) S. The linear program
//
//   minimise T  subject to  sum_o x_o L_d(o) S <= T for every dimension d,
//                           sum_o x_o = 1,  x_o >= 0
//
// gives the best such mix (GLPK's simplex). It counts bandwidth only, with no pipeline fill
// and no latency (a chunk pays the same steps whatever its order), so it bounds every
// schedule's completion from below, and can lie above the paper's T_ideal, which assumes
// every link busy all the time whatever the orders allow.
#pragma once

#include <vector>

#include "scheduler.h"
#include "topology.h"

namespace themis::sim {

struct OrderShare {
    std::vector<int> order; // Reduce-Scatter order (All-Gather: the gather order)
    double fraction = 0;
};

struct OrderMix {
    double time = 0;                // seconds: the bound
    std::vector<OrderShare> shares; // orders with a positive fraction, most used first
};

// The best mix for `bytes` of `coll` on `topo` (orders over its dimensions of more than
// one peer). Throws std::runtime_error if the solver fails.
OrderMix best_order_mix(const Topology &topo, Collective coll, double bytes);

} // namespace themis::sim
