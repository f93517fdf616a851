// cost_model: alpha-beta stage times (see cost_model.h).
#include "cost_model.h"

#include <algorithm>

namespace themis {

const char *phase_name(Phase p) { return p == Phase::ReduceScatter ? "RS" : "AG"; }

double stage_larger_side(const Dimension &dim, Phase phase, double input_bytes) {
    return phase == Phase::ReduceScatter ? input_bytes : input_bytes * dim.peers;
}

double stage_output_bytes(const Dimension &dim, Phase phase, double input_bytes) {
    return phase == Phase::ReduceScatter ? input_bytes / dim.peers : input_bytes * dim.peers;
}

double stage_bytes_sent(const Dimension &dim, Phase phase, double input_bytes) {
    const double n = dim.peers;
    return stage_larger_side(dim, phase, input_bytes) * (n - 1) / n;
}

int stage_steps(const Dimension &dim) {
    if (dim.peers <= 1) return 0;
    return algorithm_info(dim.algorithm).steps(dim.peers);
}

double stage_latency(const Dimension &dim) { return stage_steps(dim) * dim.latency; }

double stage_bandwidth_time(const Dimension &dim, Phase phase, double input_bytes) {
    return stage_bytes_sent(dim, phase, input_bytes) / dim.bandwidth;
}

double fill_fraction(const Dimension &dim, int stages) {
    if (dim.fill.empty() || stages < 1) return 1;
    return dim.fill[std::min(dim.fill.size(), size_t(stages)) - 1];
}

double filled_bandwidth(const Dimension &dim, int stages) {
    // Without a curve exactly the bandwidth: plans stay bit for bit what they were.
    return dim.fill.empty() ? dim.bandwidth : dim.bandwidth * fill_fraction(dim, stages);
}

double sustained_bandwidth(const Dimension &dim) {
    if (dim.fill.empty()) return dim.bandwidth;
    return dim.bandwidth * *std::max_element(dim.fill.begin(), dim.fill.end());
}

double stage_time(const Dimension &dim, Phase phase, double input_bytes) {
    return stage_latency(dim) +
           stage_bytes_sent(dim, phase, input_bytes) / filled_bandwidth(dim, 1);
}

} // namespace themis
