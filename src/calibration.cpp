// calibration: measure each dimension's bandwidth and latency (see calibration.h).
#include "calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>

namespace themis {

namespace {

// Calibration messages use the top tag of every dimension: the engine's tags count up
// from zero, and calibration ends on every rank before its first collective.
constexpr int kCalibrationTag = kTagLimit - 1;

double now() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

double round_significant(double x, int digits) {
    if (!(x > 0)) return x;
    // Powers of ten are exact doubles; dividing by 1e-5 instead of multiplying by 1e5
    // would not be.
    const int shift = digits - 1 - int(std::floor(std::log10(x)));
    const double scale = std::pow(10.0, std::abs(shift));
    return shift >= 0 ? std::round(x * scale) / scale : std::round(x / scale) * scale;
}

struct PendingDimension {
    int dim;
    std::vector<Transport::Request> requests;
    double started = 0, finished = 0;
};

} // namespace

ExchangePeers exchange_peers(const Dimension &dim, int me) {
    return algorithm_info(dim.algorithm).step_peers(me, dim.peers);
}

CalibrationExchange::CalibrationExchange(const Topology &topo, int position, Transport &transport,
                                         Memory *buffers)
    : topo_(topo), position_(position), transport_(transport), memory_(buffers),
      send_(topo.num_dims()), recv_(topo.num_dims()) {}

CalibrationExchange::~CalibrationExchange() {
    for (Buffer &b : send_) release(b);
    for (Buffer &b : recv_) release(b);
}

char *CalibrationExchange::grown(Buffer &b, size_t bytes) {
    if (bytes <= b.bytes) return b.data;
    release(b);
    b.data = static_cast<char *>(memory_ ? memory_->acquire(bytes) : ::operator new(bytes));
    b.bytes = bytes;
    return b.data;
}

void CalibrationExchange::release(Buffer &b) {
    if (!b.data) return;
    if (memory_)
        memory_->release(b.data, b.bytes);
    else
        ::operator delete(b.data);
    b = Buffer();
}

std::vector<double> CalibrationExchange::run(const std::vector<int> &dims,
                                             const std::vector<size_t> &bytes) {
    std::vector<PendingDimension> pending;
    for (size_t i = 0; i < dims.size(); ++i) {
        const int d = dims[i];
        const ExchangePeers peers = exchange_peers(topo_.dim(d), topo_.coord(position_, d));
        // The bytes are split evenly over the peers the rank sends to.
        const size_t share =
            std::max<size_t>(1, (bytes[i] + peers.to.size() - 1) / peers.to.size());
        char *send = grown(send_[d], share), *recv = grown(recv_[d], share * peers.from.size());
        PendingDimension p{d, {}, now(), 0};
        for (size_t k = 0; k < peers.from.size(); ++k)
            p.requests.push_back(
                transport_.irecv(d, peers.from[k], recv + share * k, share, kCalibrationTag));
        for (int c : peers.to) {
            p.requests.push_back(transport_.isend(d, c, send, share, kCalibrationTag));
            bytes_sent_ += share;
        }
        pending.push_back(std::move(p));
    }
    for (size_t open = pending.size(); open > 0;) {
        bool moved = false;
        for (PendingDimension &p : pending) {
            if (p.finished > 0) continue;
            auto &reqs = p.requests;
            const size_t before = reqs.size();
            reqs.erase(std::remove_if(reqs.begin(), reqs.end(),
                                      [&](Transport::Request r) { return transport_.test(r); }),
                       reqs.end());
            moved |= reqs.size() < before;
            if (reqs.empty()) {
                p.finished = now();
                --open;
            }
        }
        if (!moved && open > 0) transport_.progress();
    }
    std::vector<double> seconds(topo_.num_dims(), 0.0);
    for (const PendingDimension &p : pending) seconds[p.dim] = p.finished - p.started;
    return seconds;
}

size_t next_exchange_bytes(size_t bytes, double seconds, double target_seconds, size_t max_bytes) {
    if (seconds >= target_seconds / 2 || bytes >= max_bytes) return bytes;
    // At most x4 a step: a shaper's burst or a fast first message would make a larger
    // jump overshoot the target many times (64 KiB in 2 ms, then 1 MiB in 100 ms).
    const double factor = std::clamp(target_seconds / std::max(seconds, 1e-9), 2.0, 4.0);
    size_t next = bytes * 2; // bytes is a power of two, or max_bytes
    while (double(next) * 2 <= double(bytes) * factor) next <<= 1;
    return std::min(next, max_bytes);
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

namespace {

// One phase: the dimensions `dims` at once, dimension dims[i] sending weight[i] x B bytes.
// Per dimension of the phase, its bytes and the agreed (maximum over ranks of each rank's
// median) time of a large and of a small exchange. With `joint`, a dimension's time is
// the exchange's, until every dimension of it finished: a link shared by several
// dimensions may serve them one after the other or side by side, and either way each
// dimension gets its bytes through in that time.
struct PhaseTimes {
    std::vector<size_t> bytes;
    std::vector<double> large, small; // indexed like `dims`
    double ended = 0;                 // agreed: seconds since `since` when the phase ended
};

PhaseTimes measure_phase(CalibrationExchange &exchange, const std::vector<int> &dims,
                         const std::vector<double> &weight, bool joint, const AgreeMax &agree,
                         const CalibrationSettings &s, double phase_seconds, double since) {
    auto sizes = [&](size_t bytes) {
        std::vector<size_t> out;
        for (double w : weight) out.push_back(std::max(s.latency_bytes, size_t(double(bytes) * w)));
        return out;
    };
    // Grow the exchange until it takes about its share of the phase: the probing ones add
    // up to about two of the final size, then come the repetitions. The times are agreed,
    // so every rank takes the same sizes and counts the same time spent.
    const double target = phase_seconds / double(s.repetitions + 2);
    size_t bytes = s.min_bytes;
    double spent = 0, last = 0;
    for (;;) {
        std::vector<double> t = exchange.run(dims, sizes(bytes));
        agree(t);
        last = *std::max_element(t.begin(), t.end());
        spent += last;
        const size_t next = next_exchange_bytes(bytes, last, target, s.max_bytes);
        if (next == bytes) break;
        bytes = next;
    }
    // As many repetitions as the phase has time left for (the final size may overshoot its
    // target up to twice), but at least three for a median; after one untimed exchange:
    // while the ranks agreed, a traffic shaper's token bucket refilled, and the first
    // exchange after an idle moment runs faster than the link's rate.
    const int repetitions =
        std::clamp(int((phase_seconds - spent) / std::max(last, 1e-9)) - 1, 3, s.repetitions);
    // Per dimension, `statistic` over the repetitions of an exchange of `size`.
    auto repeated = [&](const std::vector<size_t> &size, int count,
                        double (*statistic)(std::vector<double>)) {
        std::vector<std::vector<double>> runs(dims.size());
        for (int r = 0; r < count; ++r) {
            const std::vector<double> t = exchange.run(dims, size);
            const double all = *std::max_element(t.begin(), t.end());
            for (size_t i = 0; i < dims.size(); ++i) runs[i].push_back(joint ? all : t[dims[i]]);
        }
        std::vector<double> out;
        for (auto &r : runs) out.push_back(statistic(std::move(r)));
        return out;
    };
    PhaseTimes times{sizes(bytes), {}, {}};
    exchange.run(dims, times.bytes);
    // The large exchange's median; the small one's minimum: its time is a fixed delay plus
    // whatever a busy machine adds (one 8-byte exchange in 40 took 4.6 ms instead of 0.1),
    // and a latency read too high steers the latency-aware scheduler wrong.
    std::vector<double> both = repeated(times.bytes, repetitions, median),
                        small = repeated(std::vector<size_t>(dims.size(), s.latency_bytes),
                                         std::max(repetitions, s.latency_repetitions),
                                         [](std::vector<double> v) {
                                             return *std::min_element(v.begin(), v.end());
                                         });
    both.insert(both.end(), small.begin(), small.end());
    both.push_back(now() - since);
    agree(both);
    times.large.assign(both.begin(), both.begin() + dims.size());
    times.small.assign(both.begin() + dims.size(), both.end() - 1);
    times.ended = both.back();
    return times;
}

double bandwidth_of(size_t bytes, size_t small_bytes, double large, double small) {
    // What the extra bytes cost beyond the fixed delay; if noise made the large exchange
    // no slower than the small one, the whole time is the best estimate left.
    const double extra = large - small;
    return extra > large * 1e-3 ? double(bytes - small_bytes) / extra : double(bytes) / large;
}

} // namespace

CalibrationResult calibrate(const Topology &topo, int position, Transport &transport,
                            const std::vector<int> &measured, const AgreeMax &agree,
                            const CalibrationSettings &settings, Memory *buffers) {
    const double start = now();
    CalibrationResult result;
    result.dims.assign(topo.num_dims(), DimensionRates());
    if (measured.empty()) return result;

    // One phase per dimension, and one for all at once. Each phase takes an equal share of
    // what is left of the budget (agreed, so the same on every rank): what the small
    // exchanges, the agreements and ranks starting late cost beyond the timed exchanges
    // (about 0.3 s on the emulated network of a 2-core machine) comes out of the later ones.
    const size_t phases = measured.size() + (measured.size() > 1);
    double ended = 0;
    // A fifth of the budget is kept for the last phase's own overshoot.
    auto share = [&](size_t phase) {
        return std::max(0.0, 0.8 * settings.budget_seconds - ended) / double(phases - phase);
    };

    // One untimed exchange with every peer first: a transport that connects on first use
    // (Open MPI's TCP BTL does) would otherwise charge the connections to the first phase,
    // whose probing would then settle on too small a size. The budget starts after it.
    CalibrationExchange exchange(topo, position, transport, buffers);
    exchange.run(measured, std::vector<size_t>(measured.size(), settings.latency_bytes));
    std::vector<double> all_connected = {0};
    agree(all_connected);
    const double budget_start = now();
    result.connect_seconds = budget_start - start;
    for (size_t i = 0; i < measured.size(); ++i) {
        const int d = measured[i];
        const PhaseTimes t =
            measure_phase(exchange, {d}, {1.0}, false, agree, settings, share(i), budget_start);
        ended = t.ended;
        DimensionRates &r = result.dims[d];
        r.bandwidth = r.bandwidth_alone =
            bandwidth_of(t.bytes[0], settings.latency_bytes, t.large[0], t.small[0]);
        r.latency = t.small[0];
        r.exchange_bytes = t.bytes[0];
    }
    if (measured.size() > 1) {
        // All at once, each dimension with bytes in proportion to its rate alone: were they
        // independent, all would finish together, at their rates alone.
        double fastest = 0;
        for (int d : measured) fastest = std::max(fastest, result.dims[d].bandwidth_alone);
        std::vector<double> weight;
        for (int d : measured) weight.push_back(result.dims[d].bandwidth_alone / fastest);
        const PhaseTimes t = measure_phase(exchange, measured, weight, true, agree, settings,
                                           share(measured.size()), budget_start);
        // Independent dimensions finish together at their rates alone; only a clear
        // slowdown (a shared NIC or bus) replaces those rates, since a joint exchange on a
        // busy machine is also the noisiest measurement.
        std::vector<double> together;
        double slowdown = 0;
        for (size_t i = 0; i < measured.size(); ++i) {
            together.push_back(
                bandwidth_of(t.bytes[i], settings.latency_bytes, t.large[i], t.small[i]));
            slowdown = std::max(slowdown, result.dims[measured[i]].bandwidth_alone / together[i]);
        }
        if (slowdown > settings.shared_slowdown)
            for (size_t i = 0; i < measured.size(); ++i)
                result.dims[measured[i]].bandwidth = together[i];
    }
    result.seconds = now() - start;
    result.bytes_sent = exchange.bytes_sent();
    return result;
}

const char *rate_source_name(RateSource s) {
    switch (s) {
    case RateSource::Default: return "default";
    case RateSource::Given: return "given";
    case RateSource::Measured: return "measured";
    case RateSource::Cached: return "cached";
    }
    return "?";
}

Topology with_measured_rates(const Topology &topo, const std::vector<DimensionRates> &rates,
                             bool bandwidth_given, bool latency_given) {
    std::vector<Dimension> dims = topo.dims();
    for (size_t d = 0; d < dims.size() && d < rates.size(); ++d) {
        if (!(rates[d].bandwidth > 0)) continue;
        // Rounded in bits/s, the unit the spec prints, so that it prints as it is rounded.
        if (!bandwidth_given) dims[d].bandwidth = round_significant(rates[d].bandwidth * 8, 4) / 8;
        if (!latency_given) dims[d].latency = round_significant(rates[d].latency, 4);
    }
    return Topology(dims);
}

bool spec_gives(const std::string &dims, const std::string &key) {
    // Sections after the first ':' are attribute lists "key=values".
    for (size_t at = dims.find(':'); at != std::string::npos; at = dims.find(':', at + 1))
        if (dims.compare(at + 1, key.size() + 1, key + "=") == 0) return true;
    return false;
}

} // namespace themis
