// transport_choice: per dimension, the faster of two transports (see transport_choice.h).
#include "transports/transport_choice.h"

#include <algorithm>
#include <chrono>

#include "engine.h"
#include "host_memory.h"

namespace themis {

namespace {

// The topology with only `dim` left: every other dimension one peer.
Topology confined(const Topology &topo, int dim) {
    std::vector<Dimension> dims = topo.dims();
    for (int d = 0; d < int(dims.size()); ++d)
        if (d != dim) dims[size_t(d)].peers = 1;
    return Topology(dims);
}

} // namespace

double time_dimension_allreduce(const Topology &topo, int position, int dim, Transport &transport,
                                Reducer &float_sum, const TransportChoiceSettings &settings,
                                std::vector<float> &work) {
    // On the confined topology this rank's position is its coordinate in `dim`; the
    // transport still finds the peers through the real layout, which agrees there.
    const Topology group = confined(topo, dim);
    PlanRequest req = settings.request;
    req.rank = topo.coord(position, dim);
    auto plan = std::make_shared<const Plan>(compile_plan(group, req));
    work.assign(plan->work_bytes / sizeof(float), 1.0f);
    HostMemory memory;
    Engine engine(group, transport, memory, settings.max_active, settings.max_active_bytes);
    const auto t0 = std::chrono::steady_clock::now();
    engine.run(plan, reinterpret_cast<char *>(work.data()), float_sum);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<DimensionChoice> choose_transports(const Topology &topo, int position, Transport &base,
                                               Transport &single_copy,
                                               const std::vector<bool> &candidates,
                                               Reducer &float_sum, const AgreeMax &agree,
                                               const TransportChoiceSettings &settings) {
    std::vector<DimensionChoice> out(size_t(topo.num_dims()));
    std::vector<float> work;
    for (int d = 0; d < topo.num_dims(); ++d) {
        if (!candidates[size_t(d)] || topo.dim(d).peers < 2) continue;
        Transport *both[2] = {&base, &single_copy};
        for (Transport *t : both) // untimed: connections, first touches
            time_dimension_allreduce(topo, position, d, *t, float_sum, settings, work);
        // Alternated, so that a slow moment of the machine does not favour one of them.
        std::vector<double> seconds;
        for (int r = 0; r < settings.repetitions; ++r)
            for (Transport *t : both)
                seconds.push_back(
                    time_dimension_allreduce(topo, position, d, *t, float_sum, settings, work));
        agree(seconds); // a run lasts until its slowest rank is done
        DimensionChoice &c = out[size_t(d)];
        c.seconds_base = c.seconds_single_copy = 1e300;
        for (size_t i = 0; i < seconds.size(); i += 2) {
            c.seconds_base = std::min(c.seconds_base, seconds[i]);
            c.seconds_single_copy = std::min(c.seconds_single_copy, seconds[i + 1]);
        }
        c.single_copy = c.seconds_single_copy <= c.seconds_base * settings.margin;
    }
    return out;
}

} // namespace themis
