// calibration: measure each dimension's bandwidth and step latency at run time.
//
// The scheduler only balances the dimensions as well as it knows their rates. Where the
// user's spec gives no bw= or lat=, the component measures them on the layout's first use,
// over the transport the collectives will run on:
//
//   phases   every measured dimension alone, then (with two or more) all of them at once,
//            each sending in proportion to its rate alone, timed until the last finishes:
//            a dimension that shares a NIC, a bus or cores with another is slower there,
//            and that rate is the one the schedule meets, since Themis keeps every
//            dimension busy. Only a clear slowdown (shared_slowdown) counts, and only when
//            a second joint phase shows it again (on a 2-core machine running 8 ranks, 1 job
//            in 30 read independent links 1.27 slower once): independent dimensions keep
//            their rates alone, the less noisy measurement.
//   pattern  one exchange: every rank sends B bytes on each dimension of the phase, and
//            receives as much, with the peers the dimension's algorithm talks to in one
//            step (its row in algorithms/registry.cpp): its ring neighbours (ring), its
//            partner (hd: partners differ in the lowest bit, any step moves data alike), or
//            every peer at once (direct), B split evenly over them. A pattern the
//            algorithm never makes could measure what the collectives never meet: every
//            peer at once on a hd dimension of the emulated network overflows the
//            receivers' shapers (incast), TCP waits out its 200 ms retransmission timeout
//            and the rate reads at half.
//   sizes    B starts at min_bytes and grows until an exchange takes about its share of the
//            time budget (or reaches max_bytes); then `repetitions` exchanges of B and at
//            least `latency_repetitions` of latency_bytes. The first exchanges drain a
//            shaper's burst allowance and open TCP's window, so the repeated ones see the
//            steady rate.
//   noise    per rank the median of the large exchange's repetitions (as many as the
//            phase's share of the budget leaves after probing, 3 to `repetitions`) and the
//            minimum of the small one's (noise only adds to a fixed delay), then the
//            maximum over ranks (a stage ends when its slowest rank does); latency = the
//            small exchange's time, bandwidth = (B - latency_bytes) / (large - small).
//   fill     last, with every measured dimension busy at once, streams of exchanges of
//            about a stage's size (fill_bytes, less where the budget's share cannot hold
//            them; in proportion to the rates, as above) with 1, 2 and K of them in flight
//            per dimension (each finished one replaced at once, as the engine's slots):
//            one stage alone may not fill a link (docs/design.md, "Why the defaults"),
//            and the planner's model needs how much each count reaches (the
//            fill curve, topology.h). Interleaved (1, 2, K, 1, 2, K, ...), per rank the
//            median of the repetitions, over ranks the maximum; the curve follows from the
//            ratios (derive_fill_curve). Only with fill_in_flight >= 2.
//   agreed   every decision (the next size, the repetitions, the result) follows from
//            values reduced over all ranks, so every rank measures the same sizes and plans
//            with identical numbers.
//
// Time: about budget_seconds whatever the number of dimensions D (D + 1 phases share it,
// D + 2 with the fill curve),
// after one untimed exchange that makes a transport connect its peers first,
// plus one small reduction over all ranks per size step and per phase (log P steps each),
// so it grows with log P and not with the number of ranks otherwise; a dimension too slow
// to reach its share at min_bytes takes longer: 1 + 2 x 3 exchanges of min_bytes per
// phase. Bytes: per rank about the budget times the rate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "topology.h"
#include "transport.h"

namespace themis {

struct CalibrationSettings {
    double budget_seconds = 0.5;
    size_t min_bytes = 64 << 10; // first exchange of a phase
    size_t max_bytes = 16 << 20; // largest exchange
    size_t latency_bytes = 8;    // the small exchange that measures latency
    // At most this many timed large exchanges per phase (at least 3): the exchange shrinks to
    // fit its share of the budget, and each rank's median has more samples to resist a busy
    // machine's disturbances (docs/design.md, "Why the defaults").
    int repetitions = 9;
    // Small exchanges, timed for the latency: cheap, so more of them, for a minimum that a
    // busy machine's scheduling delays do not reach on every repetition of every rank.
    int latency_repetitions = 16;
    // Dimensions count as sharing a resource when, busy together, one of them runs this
    // many times slower than alone; otherwise each keeps its rate alone.
    double shared_slowdown = 1.25;
    // The fill curve: K, the most stages in flight per dimension (the engine's max_active);
    // below 2 no curve is measured (the dimensions keep a full one).
    int fill_in_flight = 0;
    // Bytes of one exchange of the fill streams: a stage's size (the component passes its
    // smallest chunk), less where the phase's share of the budget cannot hold them, but not
    // below fill_min_bytes.
    size_t fill_bytes = 256 << 10;
    size_t fill_min_bytes = 16 << 10;
    int fill_repetitions = 5;
    // A curve whose every point reaches this fraction is noise around a full link: kept
    // full, so that such a network plans as before.
    double fill_full = 0.95;
};

struct DimensionRates {
    double bandwidth = 0;       // bytes/s per rank with every measured dimension busy (the
                                // rate alone unless they share a resource, see phases)
    double bandwidth_alone = 0; // bytes/s per rank with this dimension alone
    double latency = 0;         // seconds per step
    size_t exchange_bytes = 0;  // B of the bandwidth exchanges
    std::vector<double> fill;   // the fill curve (topology.h); empty: full or not measured
};

struct CalibrationResult {
    std::vector<DimensionRates> dims; // per topology dimension; zeros where not measured
    double seconds = 0;               // wall time of the calibration on this rank
    double connect_seconds = 0;       // of which the first, untimed exchange (connections)
    uint64_t bytes_sent = 0;          // bytes this rank sent
    // The joint phase: the largest slowdown of a dimension busy with the others against
    // alone (0 with one dimension), and whether it counted as sharing (shared_slowdown).
    double joint_slowdown = 0;
    bool shared = false;
    int joint_phases = 0; // 2 when a slowdown over shared_slowdown was measured again
};

// Collective over every rank of the topology: replaces `values` by their element-wise
// maximum over the ranks (the same on every rank afterwards).
using AgreeMax = std::function<void(std::vector<double> &)>;

// The peers a rank at coordinate `me` of `dim` sends to and receives from in one exchange
// (see the pattern above): those of one step of its algorithm (algorithms/registry.h).
using ExchangePeers = StepPeers;
ExchangePeers exchange_peers(const Dimension &dim, int me);

// One exchange on a set of dimensions (see the pattern above), over a Transport.
class CalibrationExchange {
  public:
    // `buffers`: where the exchanged bytes live (device memory for a transport that moves
    // it, so the rate measured is the one device buffers meet); nullptr = host memory.
    CalibrationExchange(const Topology &topo, int position, Transport &transport,
                        Memory *buffers = nullptr);
    ~CalibrationExchange();
    CalibrationExchange(const CalibrationExchange &) = delete;
    CalibrationExchange &operator=(const CalibrationExchange &) = delete;
    // Runs it to completion, dimension dims[i] sending bytes[i]; per topology dimension,
    // the seconds until this rank's sends and receives there completed (0 for dimensions
    // not in `dims`).
    std::vector<double> run(const std::vector<int> &dims, const std::vector<size_t> &bytes);
    // `count` exchanges per dimension of `dims` (dimension dims[i] sending bytes[i] each),
    // `in_flight` of them at once: each one that finishes is replaced by the next at once.
    // Per topology dimension, the seconds until its last one finished here (0 for
    // dimensions not in `dims`).
    std::vector<double> stream(const std::vector<int> &dims, const std::vector<size_t> &bytes,
                               int in_flight, int count);
    uint64_t bytes_sent() const { return bytes_sent_; }

  private:
    const Topology &topo_;
    int position_;
    Transport &transport_;
    // A buffer that only grows, from `memory_` (or the heap).
    struct Buffer {
        char *data = nullptr;
        size_t bytes = 0;
    };
    char *grown(Buffer &b, size_t bytes);
    void release(Buffer &b);

    Memory *memory_;
    std::vector<Buffer> send_, recv_; // per dimension
    uint64_t bytes_sent_ = 0;
    // Posts one exchange on dimension d: its receives into `recv`, its sends of `share`
    // bytes each, with `tag`; appends their requests.
    void post(int d, const ExchangePeers &peers, size_t share, char *recv, int tag,
              std::vector<Transport::Request> &requests);
};

// Measures `measured` (dimensions of `topo` with more than one peer) as described above.
// Collective over every rank of the topology.
// `buffers` as for CalibrationExchange.
CalibrationResult calibrate(const Topology &topo, int position, Transport &transport,
                            const std::vector<int> &measured, const AgreeMax &agree,
                            const CalibrationSettings &settings = CalibrationSettings(),
                            Memory *buffers = nullptr);

// The size of the next probing exchange: `bytes` (a power of two) scaled towards
// `target_seconds` from the agreed time `seconds` it took, rounded down to a power of two
// but at least doubled, at most x4, capped at max_bytes; `bytes` itself once it took at
// least half the target or reached the cap.
size_t next_exchange_bytes(size_t bytes, double seconds, double target_seconds, size_t max_bytes);

// Median of a non-empty list.
double median(std::vector<double> values);

// What the fill streams of one dimension measured: with in_flight[i] exchanges in flight,
// exchanges[i] of them, of `bytes` each (sent per rank), took seconds[i] (agreed).
struct FillStreams {
    std::vector<int> in_flight; // ascending, the first 1
    std::vector<int> exchanges;
    std::vector<double> seconds;
    double bytes = 0;
};

// The fill curve of a dimension of step `latency` from its streams, with points for 1 to
// max_active stages in flight:
//   each count   the simulation's model inverted (ordering.h: c stages in flight each pay
//                the latency, then share the dimension's rate x fill(c)): per exchange, the
//                stream's time x in_flight / exchanges less one latency; that count's rate
//                is c x bytes / that time;
//   the ratios   are the curve: every count's rate over the best one's, which fills the
//                link. The streams run with every dimension busy and the large exchanges
//                (the bandwidth) alone, small exchanges may stay in a cache that large ones
//                leave: a difference common to every count cancels, and the bandwidth
//                stays the large exchanges' (at the best count the model moves data at
//                that rate, as it did before fill curves);
//   noise        more stages in flight never deliver less (each point at least the one
//                before); counts between those measured are interpolated; points are
//                rounded to 0.01; a curve whose every point reaches `full` is full (empty).
// Canonical (topology.h canonical_fill); empty without a usable measurement.
std::vector<double> derive_fill_curve(const FillStreams &streams, double latency, int max_active,
                                      double full = 0.95);

// Where a dimension's number came from, for the verbose log and themis-info.
enum class RateSource { Default, Given, Measured, Cached };
const char *rate_source_name(RateSource s);

// Where each of `dims` dimensions' bandwidth, latency and fill curve come from, first that
// applies: the spec gives it (Given); the dimension is among `measured` and its rates were
// found, `found` being Cached (kept by an earlier job or communicator) or Measured (now);
// else the spec's defaults (Default: nothing found, or nothing to find).
struct RateSources {
    std::vector<RateSource> bandwidth, latency, fill;
};
RateSources rate_sources(int dims, const std::vector<int> &measured, bool bandwidth_given,
                         bool latency_given, bool fill_given, std::optional<RateSource> found);

// Whether measured rates can be planned with: every measured dimension's bandwidth finite
// and above 0, its latency finite and not negative, its fill curve's points in (0, 1].
bool plausible_rates(const std::vector<DimensionRates> &rates, const std::vector<int> &measured);

// `topo` with the measured rates where the spec did not give them: bandwidth replaced
// unless `bandwidth_given`, latency unless `latency_given`, the fill curve unless
// `fill_given`, only for dimensions with a measurement. Rounded to 4 significant digits
// (bandwidth in bits/s) so that the spec prints them as they are.
Topology with_measured_rates(const Topology &topo, const std::vector<DimensionRates> &rates,
                             bool bandwidth_given, bool latency_given, bool fill_given = false);

// `topo` with every dimension's bandwidth multiplied by its factor (a revision at run time:
// rate_refiner.h), rounded as with_measured_rates() rounds.
Topology with_bandwidth_factors(const Topology &topo, const std::vector<double> &factors);

// Whether a coll_themis_dims value gives `key` ("bw", "lat", "fill") in one of its sections.
bool spec_gives(const std::string &dims, const std::string &key);

} // namespace themis
