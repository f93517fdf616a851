// transport_choice: which of two transports a dimension runs on, from measurements.
//
// A node's dimensions can run on the communicator's transport (ob1/vader, UCX) or on the
// node-local single-copy one (cma_transport.h). Which is faster depends on the machine
// (memory bandwidth, cores per rank, the kernel's cross-memory attach) and the message
// sizes, so it is measured, not assumed: per candidate dimension, an All-Reduce confined to
// that dimension's groups (every group of the dimension at once, as in the collectives)
// runs on each transport in turn, the same request as the component's own, through the
// engine and the dimension's algorithm. Each run's time is the maximum over the ranks;
// per transport the minimum over the repetitions (noise only adds). A dimension takes the
// single-copy transport unless that is slower by more than `margin`: it is the one that
// also removes the packing copies of spans the measurement does not show.
#pragma once

#include <cstddef>
#include <vector>

#include "calibration.h"
#include "plan.h"
#include "topology.h"
#include "transport.h"

namespace themis {

struct TransportChoiceSettings {
    // The All-Reduce measured: the component's request for it (its chunks, policy and
    // algorithms), float elements; `rank` is set per dimension.
    PlanRequest request;
    int max_active = 4; // the engine's, as in the component
    uint64_t max_active_bytes = 0;
    int repetitions = 3;  // per transport, after one untimed run of each
    double margin = 1.05; // the single-copy transport's time may be this much larger
};

struct DimensionChoice {
    bool single_copy = false;
    double seconds_base = 0, seconds_single_copy = 0; // the agreed times
};

// Collective over every rank of `topo`: per dimension (candidates[d] true), the choice
// and the times; not-candidates come back unchanged (single_copy false, no times).
// `single_copy` must take the candidate dimensions through its single-copy path.
std::vector<DimensionChoice> choose_transports(const Topology &topo, int position, Transport &base,
                                               Transport &single_copy,
                                               const std::vector<bool> &candidates,
                                               Reducer &float_sum, const AgreeMax &agree,
                                               const TransportChoiceSettings &settings);

// The seconds of one run of settings.request on dimension `dim`'s group of this rank alone
// (other dimensions take no part) over `transport`, in `work` (float elements).
double time_dimension_allreduce(const Topology &topo, int position, int dim, Transport &transport,
                                Reducer &float_sum, const TransportChoiceSettings &settings,
                                std::vector<float> &work);

} // namespace themis
