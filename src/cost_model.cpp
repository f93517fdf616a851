// cost_model: alpha-beta stage times (see cost_model.h).
#include "cost_model.h"

#include <algorithm>

namespace themis {

const PhaseInfo &phase_info(Phase p) {
    // One row per phase, in enum order: id, name, narrows, reduces, rooted.
    static const PhaseInfo table[] = {
        {Phase::ReduceScatter, "RS", true, true, false},
        {Phase::AllGather, "AG", false, false, false},
        {Phase::Cast, "CA", false, false, true},
        {Phase::Collect, "CO", false, true, true},
    };
    return table[static_cast<int>(p)];
}

const char *phase_name(Phase p) { return phase_info(p).name; }

// A rooted phase's chunk moves whole: its input is its output, and its source sends (or
// receives) all of it.
double stage_larger_side(const Dimension &dim, Phase phase, double input_bytes) {
    if (phase_info(phase).rooted || phase_info(phase).narrows) return input_bytes;
    return input_bytes * dim.peers;
}

double stage_output_bytes(const Dimension &dim, Phase phase, double input_bytes) {
    if (phase_info(phase).rooted) return input_bytes;
    return phase_info(phase).narrows ? input_bytes / dim.peers : input_bytes * dim.peers;
}

double stage_bytes_sent(const Dimension &dim, Phase phase, double input_bytes) {
    if (phase_info(phase).rooted) return input_bytes;
    const double n = dim.peers;
    return stage_larger_side(dim, phase, input_bytes) * (n - 1) / n;
}

int stage_steps(const Dimension &dim, Phase phase) {
    if (dim.peers <= 1) return 0;
    if (phase_info(phase).rooted) return 2;
    return algorithm_info(dim.algorithm).steps(dim.peers);
}

double stage_latency(const Dimension &dim, Phase phase) {
    return stage_steps(dim, phase) * dim.latency;
}

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
    return stage_latency(dim, phase) +
           stage_bytes_sent(dim, phase, input_bytes) / filled_bandwidth(dim, 1);
}

} // namespace themis
