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

void CalibrationExchange::post(int d, const ExchangePeers &peers, size_t share, char *recv, int tag,
                               std::vector<Transport::Request> &requests) {
    for (size_t k = 0; k < peers.from.size(); ++k)
        requests.push_back(transport_.irecv(d, peers.from[k], recv + share * k, share, tag));
    for (int c : peers.to) {
        requests.push_back(transport_.isend(d, c, send_[d].data, share, tag));
        bytes_sent_ += share;
    }
}

namespace {

// The bytes are split evenly over the peers the rank sends to.
size_t share_of(size_t bytes, const ExchangePeers &peers) {
    return std::max<size_t>(1, (bytes + peers.to.size() - 1) / peers.to.size());
}

// Whether every request of `requests` completed; the completed ones are removed.
bool all_done(Transport &transport, std::vector<Transport::Request> &requests, bool &moved) {
    const size_t before = requests.size();
    requests.erase(std::remove_if(requests.begin(), requests.end(),
                                  [&](Transport::Request r) { return transport.test(r); }),
                   requests.end());
    moved |= requests.size() < before;
    return requests.empty();
}

} // namespace

std::vector<double> CalibrationExchange::run(const std::vector<int> &dims,
                                             const std::vector<size_t> &bytes) {
    std::vector<PendingDimension> pending;
    for (size_t i = 0; i < dims.size(); ++i) {
        const int d = dims[i];
        const ExchangePeers peers = exchange_peers(topo_.dim(d), topo_.coord(position_, d));
        const size_t share = share_of(bytes[i], peers);
        grown(send_[d], share);
        char *recv = grown(recv_[d], share * peers.from.size());
        PendingDimension p{d, {}, now(), 0};
        post(d, peers, share, recv, kCalibrationTag, p.requests);
        pending.push_back(std::move(p));
    }
    for (size_t open = pending.size(); open > 0;) {
        bool moved = false;
        for (PendingDimension &p : pending) {
            if (p.finished > 0) continue;
            if (all_done(transport_, p.requests, moved)) {
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

std::vector<double> CalibrationExchange::stream(const std::vector<int> &dims,
                                                const std::vector<size_t> &bytes, int in_flight,
                                                int count) {
    in_flight = std::max(1, in_flight);
    if (count <= 0) return std::vector<double>(topo_.num_dims(), 0.0);
    // One exchange in flight: its requests and its slot of the receive buffer.
    struct InFlight {
        std::vector<Transport::Request> requests;
        int slot;
    };
    struct Stream {
        int dim;
        ExchangePeers peers;
        size_t share = 0;
        char *recv = nullptr;
        int posted = 0, done = 0;
        std::vector<InFlight> open;
        std::vector<int> free_slots;
        double finished = 0;
    };
    std::vector<Stream> streams;
    const double started = now();
    // Exchange n of a dimension takes the tag below the one-off exchanges' by n, modulo a
    // window far wider than the exchanges one rank can be ahead of its peers (at most
    // about twice in_flight): every rank numbers a dimension's exchanges alike, so the
    // tags pair each with its peers' exchange of the same number.
    const int window = 1024;
    auto post_next = [&](Stream &s) {
        InFlight f{{}, s.free_slots.back()};
        s.free_slots.pop_back();
        const size_t region = s.share * s.peers.from.size();
        post(s.dim, s.peers, s.share, s.recv + region * size_t(f.slot),
             kCalibrationTag - 1 - s.posted % window, f.requests);
        ++s.posted;
        s.open.push_back(std::move(f));
    };
    for (size_t i = 0; i < dims.size(); ++i) {
        Stream s;
        s.dim = dims[i];
        s.peers = exchange_peers(topo_.dim(s.dim), topo_.coord(position_, s.dim));
        s.share = share_of(bytes[i], s.peers);
        grown(send_[s.dim], s.share);
        s.recv = grown(recv_[s.dim], s.share * s.peers.from.size() * size_t(in_flight));
        for (int k = in_flight - 1; k >= 0; --k) s.free_slots.push_back(k);
        streams.push_back(std::move(s));
    }
    for (Stream &s : streams)
        while (s.posted < count && !s.free_slots.empty()) post_next(s);
    for (size_t open = streams.size(); open > 0;) {
        bool moved = false;
        for (Stream &s : streams) {
            if (s.done == count) continue;
            for (size_t k = 0; k < s.open.size();) {
                if (!all_done(transport_, s.open[k].requests, moved)) {
                    ++k;
                    continue;
                }
                s.free_slots.push_back(s.open[k].slot);
                s.open.erase(s.open.begin() + long(k));
                ++s.done;
                if (s.posted < count) post_next(s);
            }
            if (s.done == count) {
                s.finished = now();
                --open;
            }
        }
        if (!moved && open > 0) transport_.progress();
    }
    std::vector<double> seconds(topo_.num_dims(), 0.0);
    for (const Stream &s : streams) seconds[s.dim] = s.finished - started;
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

std::vector<double> derive_fill_curve(const FillStreams &streams, double latency, int max_active,
                                      double full) {
    const size_t n = streams.in_flight.size();
    if (n == 0 || streams.exchanges.size() != n || streams.seconds.size() != n ||
        !(streams.bytes > 0) || max_active < 1)
        return {};
    // Each measured count's rate, from the model the simulation runs.
    std::vector<std::pair<int, double>> points;
    double best = 0;
    for (size_t i = 0; i < n; ++i) {
        const int c = streams.in_flight[i];
        const double t = streams.seconds[i], e = streams.exchanges[i];
        if (c < 1 || !(e > 0) || !(t > 0) || !std::isfinite(t)) return {};
        // Per exchange, the time it was in flight; one latency is its fixed delay. Where
        // noise left no time beyond it, the whole time is the best estimate left.
        const double each = t * c / e;
        const double moving = each - latency > each * 1e-3 ? each - latency : each;
        const double rate = c * streams.bytes / moving;
        points.emplace_back(c, rate);
        best = std::max(best, rate);
    }
    std::sort(points.begin(), points.end());
    // The ratios to the best count, which fills the link; never less with more in flight.
    double previous = 0;
    for (auto &point : points) point.second = previous = std::max(previous, point.second / best);
    // One point per count from 1 to max_active: the measured one, interpolated between
    // measured counts, the last past them.
    std::vector<double> curve;
    for (int c = 1; c <= max_active; ++c) {
        const auto above =
            std::find_if(points.begin(), points.end(),
                         [&](const std::pair<int, double> &p) { return p.first >= c; });
        double f;
        if (above == points.end()) {
            f = points.back().second;
        } else if (above == points.begin() || above->first == c) {
            f = above->second;
        } else {
            const auto below = above - 1;
            const double x = double(c - below->first) / double(above->first - below->first);
            f = below->second + x * (above->second - below->second);
        }
        curve.push_back(std::clamp(std::round(f * 100) / 100, 0.01, 1.0));
    }
    if (std::all_of(curve.begin(), curve.end(), [&](double f) { return f >= full; })) return {};
    return canonical_fill(std::move(curve));
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
                         const CalibrationSettings &s, double phase_seconds, double since,
                         size_t start_bytes = 0) {
    auto sizes = [&](size_t bytes) {
        std::vector<size_t> out;
        for (double w : weight) out.push_back(std::max(s.latency_bytes, size_t(double(bytes) * w)));
        return out;
    };
    // Grow the exchange until it takes about its share of the phase: the probing ones add
    // up to about two of the final size, then come the repetitions. The times are agreed,
    // so every rank takes the same sizes and counts the same time spent.
    const double target = phase_seconds / double(s.repetitions + 2);
    size_t bytes = start_bytes > 0 ? start_bytes : s.min_bytes;
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
    // whatever a busy machine adds (a stray exchange can take many times the latency), and
    // a latency read too high steers the latency-aware scheduler wrong.
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

// The counts of stages in flight the fill streams measure: 1, 2 and K.
std::vector<int> fill_levels(int max_active) {
    std::vector<int> levels = {1, 2};
    if (max_active > 2) levels.push_back(max_active);
    return levels;
}

// Exchanges per fill stream of `in_flight` at once: two rounds of its window.
int fill_exchanges(int in_flight) { return 2 * in_flight; }

// The fill curves of `measured` (result holds their agreed rates): every dimension busy
// at once, interleaved streams of 1, 2 and K exchanges in flight (see calibration.h).
void measure_fill(CalibrationExchange &exchange, const std::vector<int> &measured,
                  CalibrationResult &result, const AgreeMax &agree, const CalibrationSettings &s,
                  double phase_seconds) {
    const int k = std::min(s.fill_in_flight, int(kMaxFillPoints));
    const std::vector<int> levels = fill_levels(k);
    double fastest = 0, latency = 0;
    for (int d : measured) {
        fastest = std::max(fastest, result.dims[d].bandwidth);
        latency = std::max(latency, result.dims[d].latency);
    }
    if (!(fastest > 0)) return;
    // The size that fits the phase: per repetition every level's exchanges at the fastest
    // rate (the others send in proportion to theirs), plus a latency per round of each.
    double units = 0, rounds = 0;
    for (int c : levels) {
        units += fill_exchanges(c);
        rounds += double(fill_exchanges(c)) / c;
    }
    const int repetitions = std::max(1, s.fill_repetitions);
    const double fits = (phase_seconds / repetitions - rounds * latency) * fastest / units;
    // At most the largest exchange; a stage smaller than the floor (a small
    // coll_themis_min_chunk_bytes) is its own floor.
    const double most = double(std::max<size_t>(1, std::min(s.fill_bytes, s.max_bytes))),
                 least = std::min(double(s.fill_min_bytes), most);
    const double bytes = std::clamp(fits, least, most);
    std::vector<size_t> sizes;
    for (int d : measured)
        sizes.push_back(
            size_t(std::clamp(bytes * result.dims[d].bandwidth / fastest, least, most)));
    // One untimed stream at K opens every window before the timed ones.
    exchange.stream(measured, sizes, k, fill_exchanges(k));
    // samples[level][i]: dimension measured[i]'s times, interleaved over the levels.
    std::vector<std::vector<std::vector<double>>> samples(
        levels.size(), std::vector<std::vector<double>>(measured.size()));
    for (int r = 0; r < repetitions; ++r)
        for (size_t l = 0; l < levels.size(); ++l) {
            const std::vector<double> t =
                exchange.stream(measured, sizes, levels[l], fill_exchanges(levels[l]));
            for (size_t i = 0; i < measured.size(); ++i) samples[l][i].push_back(t[measured[i]]);
        }
    // Per rank the median, over ranks the maximum (a stage ends with its slowest rank).
    std::vector<double> agreed;
    for (size_t l = 0; l < levels.size(); ++l)
        for (size_t i = 0; i < measured.size(); ++i) agreed.push_back(median(samples[l][i]));
    agree(agreed);
    for (size_t i = 0; i < measured.size(); ++i) {
        FillStreams streams;
        streams.bytes = double(sizes[i]);
        for (size_t l = 0; l < levels.size(); ++l) {
            streams.in_flight.push_back(levels[l]);
            streams.exchanges.push_back(fill_exchanges(levels[l]));
            streams.seconds.push_back(agreed[l * measured.size() + i]);
        }
        DimensionRates &r = result.dims[measured[i]];
        r.fill = derive_fill_curve(streams, r.latency, k, s.fill_full);
    }
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
    // comes out of the later ones.
    const bool fill = settings.fill_in_flight >= 2;
    size_t phases = measured.size() + (measured.size() > 1) + fill; // one more to confirm
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
        // One joint phase: per dimension its rate busy with the others, and the exchange's
        // size (the fastest dimension's bytes, weight 1).
        size_t joint_bytes = 0;
        auto joint_phase = [&](double phase_seconds) {
            const PhaseTimes t = measure_phase(exchange, measured, weight, true, agree, settings,
                                               phase_seconds, budget_start, joint_bytes);
            ended = t.ended;
            joint_bytes = *std::max_element(t.bytes.begin(), t.bytes.end());
            std::vector<double> together;
            for (size_t i = 0; i < measured.size(); ++i)
                together.push_back(
                    bandwidth_of(t.bytes[i], settings.latency_bytes, t.large[i], t.small[i]));
            return together;
        };
        auto slowdown_of = [&](const std::vector<double> &together) {
            double slowdown = 0;
            for (size_t i = 0; i < measured.size(); ++i)
                slowdown =
                    std::max(slowdown, result.dims[measured[i]].bandwidth_alone / together[i]);
            return slowdown;
        };
        std::vector<double> together = joint_phase(share(measured.size()));
        result.joint_phases = 1;
        // Independent dimensions finish together at their rates alone; only a clear
        // slowdown (a shared NIC or bus) replaces those rates, since a joint exchange on a
        // busy machine is also the noisiest measurement. A slowdown is confirmed by a second
        // joint phase of the same size before it counts: a disturbance of the machine passes,
        // a shared resource stays. Each dimension keeps the faster of its two readings.
        if (slowdown_of(together) > settings.shared_slowdown) {
            ++phases;
            const std::vector<double> again = joint_phase(share(measured.size() + 1));
            for (size_t i = 0; i < measured.size(); ++i)
                together[i] = std::max(together[i], again[i]);
            result.joint_phases = 2;
        }
        result.joint_slowdown = slowdown_of(together);
        result.shared = result.joint_slowdown > settings.shared_slowdown;
        if (result.shared)
            for (size_t i = 0; i < measured.size(); ++i)
                result.dims[measured[i]].bandwidth = together[i];
    }
    // Last, with every dimension's rate known (the streams' sizes follow them).
    if (fill) measure_fill(exchange, measured, result, agree, settings, share(phases - 1));
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

RateSources rate_sources(int dims, const std::vector<int> &measured, bool bandwidth_given,
                         bool latency_given, bool fill_given, std::optional<RateSource> found) {
    const auto first = [](bool given) { return given ? RateSource::Given : RateSource::Default; };
    RateSources out{std::vector<RateSource>(size_t(dims), first(bandwidth_given)),
                    std::vector<RateSource>(size_t(dims), first(latency_given)),
                    std::vector<RateSource>(size_t(dims), first(fill_given))};
    if (!found) return out;
    for (int d : measured) {
        if (!bandwidth_given) out.bandwidth[size_t(d)] = *found;
        if (!latency_given) out.latency[size_t(d)] = *found;
        if (!fill_given) out.fill[size_t(d)] = *found;
    }
    return out;
}

bool plausible_rates(const std::vector<DimensionRates> &rates, const std::vector<int> &measured) {
    for (int d : measured) {
        const DimensionRates &r = rates[size_t(d)];
        if (!(std::isfinite(r.bandwidth) && r.bandwidth > 0 && std::isfinite(r.latency) &&
              r.latency >= 0))
            return false;
        for (double f : r.fill)
            if (!(f > 0 && f <= 1)) return false;
    }
    return true;
}

Topology with_bandwidth_factors(const Topology &topo, const std::vector<double> &factors) {
    std::vector<Dimension> dims = topo.dims();
    if (factors.size() != dims.size())
        throw std::invalid_argument("bandwidth factors: one per dimension");
    for (size_t d = 0; d < dims.size(); ++d)
        dims[d].bandwidth = round_significant(dims[d].bandwidth * factors[d] * 8, 4) / 8;
    return Topology(std::move(dims));
}

Topology with_measured_rates(const Topology &topo, const std::vector<DimensionRates> &rates,
                             bool bandwidth_given, bool latency_given, bool fill_given) {
    std::vector<Dimension> dims = topo.dims();
    for (size_t d = 0; d < dims.size() && d < rates.size(); ++d) {
        if (!(rates[d].bandwidth > 0)) continue;
        // Rounded in bits/s, the unit the spec prints, so that it prints as it is rounded.
        if (!bandwidth_given) dims[d].bandwidth = round_significant(rates[d].bandwidth * 8, 4) / 8;
        if (!latency_given) dims[d].latency = round_significant(rates[d].latency, 4);
        if (!fill_given) dims[d].fill = rates[d].fill;
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
