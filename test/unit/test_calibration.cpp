// Unit tests of src/calibration: the sizing rule, the statistics, the spec merge, and whole
// calibrations of every rank at once (one thread each) over a transport that delivers at
// rates the test sets, so the measured numbers can be checked against them.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <random>
#include <map>
#include <mutex>
#include <thread>

#include "calibration.h"
#include "testbed/loopback_transport.h"
#include "test_support.h"

using namespace themis;
using themis_test::dim;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Every rank's transport, one thread per rank: a loopback network behind one lock, whose
// sends complete only once a link of `rate` bytes/s has carried them, plus `latency`.
// Each rank has one link per dimension, or one for all (`shared_link`): a NIC shared by
// every dimension.
class ShapedNetwork {
  public:
    // `flow_share`: per dimension, the fraction of the link one message can use (1 when
    // empty): a link one exchange cannot fill, as TCP's window on a long path.
    ShapedNetwork(const Topology &topo, std::vector<double> rate, std::vector<double> latency,
                  bool shared_link, std::vector<double> flow_share = {})
        : net_(topo, false), rate_(std::move(rate)), latency_(std::move(latency)),
          flow_share_(std::move(flow_share)), shared_link_(shared_link),
          link_free_(topo.size(), std::vector<double>(topo.num_dims())), start_(Clock::now()) {
        flow_share_.resize(rate_.size(), 1.0);
        for (int r = 0; r < topo.size(); ++r) ranks_.emplace_back(new Rank(*this, r));
    }
    Transport &transport(int rank) { return *ranks_[rank]; }
    // Rank 0's next `count` sends of at most `bytes` arrive `delay` seconds late, as a
    // descheduled process's would.
    void delay_small_sends(int count, size_t bytes, double delay) {
        delayed_ = count;
        small_bytes_ = bytes;
        delay_ = delay;
    }
    // Rank 0's sends are `factor` times slower from its first send of more than `small`
    // bytes while another of its links is busy (the first joint exchange) until its next
    // send of at most `small` bytes (that phase's small exchanges): one joint phase's large
    // exchanges, as a machine busy for a moment would slow them.
    void slow_first_joint_exchanges(double factor, size_t small) {
        joint_factor_ = factor;
        joint_small_ = small;
    }

  private:
    // A send completes when the loopback matched it and its link has carried it; a
    // receive (done_at 0) when the loopback matched it.
    struct Op {
        Transport::Request inner;
        double done_at;
    };
    class Rank : public Transport {
      public:
        Rank(ShapedNetwork &n, int rank) : n_(n), rank_(rank) {}
        Request isend(int d, int peer, const void *buf, size_t bytes, int tag) override {
            std::lock_guard<std::mutex> lock(n_.mutex_);
            double &free = n_.link_free_[rank_][n_.shared_link_ ? 0 : d];
            const double now = seconds_since(n_.start_);
            const double slower = rank_ == 0 ? n_.disturbance(d, bytes, now) : 1.0;
            free = std::max(free, now) + slower * double(bytes) / n_.rate_[d];
            // A message alone moves at most at its share of the link.
            const double alone = now + double(bytes) / (n_.rate_[d] * n_.flow_share_[d]);
            double late = 0;
            if (rank_ == 0 && bytes <= n_.small_bytes_ && n_.delayed_ > 0) {
                --n_.delayed_;
                late = n_.delay_;
            }
            return new Op{n_.net_.transport(rank_).isend(d, peer, buf, bytes, tag),
                          std::max(free, alone) + n_.latency_[d] + late};
        }
        Request irecv(int d, int peer, void *buf, size_t bytes, int tag) override {
            std::lock_guard<std::mutex> lock(n_.mutex_);
            return new Op{n_.net_.transport(rank_).irecv(d, peer, buf, bytes, tag), 0.0};
        }
        bool test(Request req) override {
            std::lock_guard<std::mutex> lock(n_.mutex_);
            auto *op = static_cast<Op *>(req);
            if (op->inner && n_.net_.transport(rank_).test(op->inner)) op->inner = nullptr;
            if (op->inner || seconds_since(n_.start_) < op->done_at) return false;
            delete op;
            return true;
        }
        void progress() override { std::this_thread::yield(); }
        const char *name() const override { return "calibration-rank"; }

      private:
        ShapedNetwork &n_;
        int rank_;
    };
    friend class Rank;

    // slow_first_joint_exchanges: the factor for rank 0's send of `bytes` on `d` at `now`.
    double disturbance(int d, size_t bytes, double now) {
        if (joint_factor_ <= 1 || joint_window_ == Window::Over) return 1.0;
        if (joint_window_ == Window::Open && bytes <= joint_small_) joint_window_ = Window::Over;
        bool other_busy = false;
        for (size_t other = 0; other < link_free_[0].size(); ++other)
            other_busy |= int(other) != d && link_free_[0][other] > now;
        if (joint_window_ == Window::NotYet && bytes > joint_small_ && other_busy)
            joint_window_ = Window::Open;
        return joint_window_ == Window::Open ? joint_factor_ : 1.0;
    }

    std::mutex mutex_;
    LoopbackNetwork net_;
    std::vector<double> rate_, latency_, flow_share_;
    bool shared_link_;
    std::vector<std::vector<double>> link_free_;
    int delayed_ = 0;
    size_t small_bytes_ = 0;
    double delay_ = 0;
    enum class Window { NotYet, Open, Over } joint_window_ = Window::NotYet;
    double joint_factor_ = 1;
    size_t joint_small_ = 0;
    Clock::time_point start_;
    std::vector<std::unique_ptr<Rank>> ranks_;
};

} // namespace

namespace {

// Every rank's calibration of `measured`, each rank in its own thread.
std::vector<CalibrationResult> calibrate_all(const Topology &topo, ShapedNetwork &net,
                                             const std::vector<int> &measured,
                                             const CalibrationSettings &settings) {
    themis_test::ThreadAgree agree(topo.size());
    std::vector<CalibrationResult> results(topo.size());
    std::vector<std::thread> threads;
    for (int r = 0; r < topo.size(); ++r)
        threads.emplace_back([&, r] {
            results[r] = calibrate(
                topo, r, net.transport(r), measured,
                [&](std::vector<double> &v) { agree.agree(v); }, settings);
        });
    for (auto &t : threads) t.join();
    return results;
}

CalibrationSettings quick_settings() {
    CalibrationSettings s;
    s.budget_seconds = 0.8;
    s.min_bytes = 4 << 10;
    return s;
}

void expect_identical_rates(const std::vector<CalibrationResult> &results) {
    for (size_t r = 1; r < results.size(); ++r)
        for (size_t d = 0; d < results[0].dims.size(); ++d) {
            EXPECT_EQ(results[r].dims[d].bandwidth, results[0].dims[d].bandwidth) << r << "," << d;
            EXPECT_EQ(results[r].dims[d].bandwidth_alone, results[0].dims[d].bandwidth_alone);
            EXPECT_EQ(results[r].dims[d].latency, results[0].dims[d].latency);
            EXPECT_EQ(results[r].dims[d].exchange_bytes, results[0].dims[d].exchange_bytes);
            EXPECT_EQ(results[r].dims[d].fill, results[0].dims[d].fill);
        }
}

} // namespace

TEST(CalibrationSizing, GrowsTowardsTheTargetInPowersOfTwo) {
    // 64 KiB took 1 ms, the target is 20 ms: x4 at most -> 256 KiB.
    EXPECT_EQ(next_exchange_bytes(64 << 10, 1e-3, 20e-3, 16 << 20), size_t(256) << 10);
    // 64 KiB took 6 ms, target 20 ms: x3.3 -> 213 KiB, rounded down to 128 KiB.
    EXPECT_EQ(next_exchange_bytes(64 << 10, 6e-3, 20e-3, 16 << 20), size_t(128) << 10);
    // 64 KiB took 9 ms, target 20 ms: x2.2, at least doubled.
    EXPECT_EQ(next_exchange_bytes(64 << 10, 9e-3, 20e-3, 16 << 20), size_t(128) << 10);
    // Half the target reached, or the cap: stays.
    EXPECT_EQ(next_exchange_bytes(64 << 10, 10e-3, 20e-3, 16 << 20), size_t(64) << 10);
    EXPECT_EQ(next_exchange_bytes(16 << 20, 1e-6, 20e-3, 16 << 20), size_t(16) << 20);
    EXPECT_EQ(next_exchange_bytes(8 << 20, 1e-6, 20e-3, 12 << 20), size_t(12) << 20);
}

TEST(CalibrationStatistics, MedianOfOddAndEvenLists) {
    EXPECT_EQ(median({5, 1, 9}), 5);
    EXPECT_EQ(median({4, 1, 100, 2}), 3);
    EXPECT_EQ(median({7}), 7);
}

TEST(CalibrationSpec, FindsGivenAttributesInAnySection) {
    EXPECT_TRUE(spec_gives("2x4:bw=100Mbps,200Mbps", "bw"));
    EXPECT_FALSE(spec_gives("2x4:bw=100Mbps,200Mbps", "lat"));
    EXPECT_TRUE(spec_gives("auto:alg=ring:lat=5us", "lat"));
    EXPECT_FALSE(spec_gives("auto", "bw"));
    EXPECT_FALSE(spec_gives("2x4:alg=ring", "bw"));
}

TEST(CalibrationSpec, MeasuredRatesReplaceOnlyWhatWasNotGiven) {
    const Topology topo({dim(2, 1e9, 1e-6), dim(4, 2e9, 2e-6), dim(1, 3e9, 3e-6)});
    std::vector<DimensionRates> rates(3);
    rates[0].bandwidth = 12345678.9;
    rates[0].latency = 4.56789e-5;
    rates[1].bandwidth = 25e6;
    rates[1].latency = 1e-4; // dimension 2 was not measured: zeros
    const Topology both = with_measured_rates(topo, rates, false, false);
    EXPECT_EQ(both.dim(0).bandwidth, 98770000.0 / 8); // 4 significant digits of bits/s
    EXPECT_EQ(both.dim(0).latency, 4.568e-5);
    EXPECT_EQ(both.dim(1).bandwidth, 25e6);
    EXPECT_EQ(both.dim(2).bandwidth, 3e9);
    EXPECT_EQ(both.dim(2).latency, 3e-6);
    const Topology bw_given = with_measured_rates(topo, rates, true, false);
    EXPECT_EQ(bw_given.dim(0).bandwidth, 1e9);
    EXPECT_EQ(bw_given.dim(0).latency, 4.568e-5);
    const Topology lat_given = with_measured_rates(topo, rates, false, true);
    EXPECT_EQ(lat_given.dim(1).bandwidth, 25e6);
    EXPECT_EQ(lat_given.dim(1).latency, 2e-6);
    EXPECT_EQ(lat_given.dim(1).peers, 4);
    EXPECT_EQ(lat_given.dim(1).algorithm, Algorithm::Ring);
}

TEST(CalibrationShaped, MeasuresEachDimensionsRateAndAgreesOnEveryRank) {
    // 2x2, 4 ranks: dimension 0 at 20 MB/s, dimension 1 at 5 MB/s, separate links.
    const Topology topo({dim(2, 1), dim(2, 1)});
    const std::vector<double> rate = {20e6, 5e6}, latency = {300e-6, 800e-6};
    ShapedNetwork net(topo, rate, latency, false);
    const auto results = calibrate_all(topo, net, {0, 1}, quick_settings());
    expect_identical_rates(results);
    for (int d = 0; d < 2; ++d) {
        const DimensionRates &r = results[0].dims[d];
        // Capped by the shaping, lowered only by a loaded machine (see below).
        EXPECT_GT(r.bandwidth_alone, 0.70 * rate[d]) << "dimension " << d;
        EXPECT_LT(r.bandwidth_alone, 1.15 * rate[d]) << "dimension " << d;
        EXPECT_NEAR(r.bandwidth / r.bandwidth_alone, 1.0, 0.15) << "dimension " << d;
        // The small exchange: the latency plus a few scheduling delays of busy threads.
        EXPECT_GE(r.latency, latency[d]);
        EXPECT_LT(r.latency, latency[d] + 5e-3);
    }
    // Separate links: busy together, neither slowed down enough to count as sharing.
    EXPECT_NEAR(results[0].joint_slowdown, 1.0, 0.2);
    EXPECT_FALSE(results[0].shared);
    EXPECT_EQ(results[0].joint_phases, 1);
    EXPECT_GT(results[0].bytes_sent, 0u);
}

TEST(CalibrationShaped, AJointPhaseSlowedForAMomentIsNotTakenForASharedLink) {
    // Separate links, but rank 0 three times slower through the first joint phase's large
    // exchanges (a busy moment of the machine): that phase alone reads a slowdown of about
    // 3, the second one shows the links independent.
    const Topology topo({dim(2, 1), dim(2, 1)});
    const std::vector<double> rate = {20e6, 5e6};
    ShapedNetwork net(topo, rate, {300e-6, 800e-6}, false);
    const CalibrationSettings s = quick_settings();
    net.slow_first_joint_exchanges(3.0, s.latency_bytes);
    const auto results = calibrate_all(topo, net, {0, 1}, s);
    expect_identical_rates(results);
    EXPECT_EQ(results[0].joint_phases, 2);
    EXPECT_NEAR(results[0].joint_slowdown, 1.0, 0.2);
    EXPECT_FALSE(results[0].shared);
    for (int d = 0; d < 2; ++d)
        EXPECT_EQ(results[0].dims[d].bandwidth, results[0].dims[d].bandwidth_alone) << d;
}

TEST(CalibrationShaped, DimensionsSharingOneLinkShowItWhenBusyTogether) {
    // One NIC for both dimensions at 10 MB/s: alone each gets it all, together half.
    const Topology topo({dim(2, 1), dim(2, 1)});
    ShapedNetwork net(topo, {10e6, 10e6}, {0, 0}, true);
    const auto results = calibrate_all(topo, net, {0, 1}, quick_settings());
    expect_identical_rates(results);
    // The shaping caps each rate; a loaded machine (ranks are threads here) can only lower
    // it, so the bounds are 15 % above and 30 % below, and the sharing shows as the ratio.
    for (int d = 0; d < 2; ++d) {
        const DimensionRates &r = results[0].dims[d];
        EXPECT_GT(r.bandwidth_alone, 0.70 * 10e6) << "dimension " << d;
        EXPECT_LT(r.bandwidth_alone, 1.15 * 10e6) << "dimension " << d;
        EXPECT_NEAR(r.bandwidth / r.bandwidth_alone, 0.5, 0.1) << "dimension " << d;
    }
    // What the verbose log says: each dimension about twice as slow together, so shared.
    EXPECT_NEAR(results[0].joint_slowdown, 2.0, 0.4);
    EXPECT_TRUE(results[0].shared);
    // Measured twice: a shared link slows every joint phase.
    EXPECT_EQ(results[0].joint_phases, 2);
}

TEST(CalibrationShaped, ARankLateForItsFirstSmallExchangesDoesNotMakeTheLatency) {
    // Rank 0's first 10 small sends come 3 ms late (its first phase: the connecting
    // exchange, then timed ones): the latency is the minimum of enough repetitions
    // (latency_repetitions) to get past them. With 5, every timed one was late.
    const Topology topo({dim(2, 1), dim(2, 1)});
    ShapedNetwork net(topo, {20e6, 20e6}, {200e-6, 200e-6}, false);
    CalibrationSettings s = quick_settings();
    net.delay_small_sends(10, s.latency_bytes, 3e-3);
    const auto results = calibrate_all(topo, net, {0, 1}, s);
    for (int d = 0; d < 2; ++d) {
        EXPECT_GE(results[0].dims[d].latency, 200e-6) << "dimension " << d;
        EXPECT_LT(results[0].dims[d].latency, 200e-6 + 2e-3) << "dimension " << d;
    }
}

TEST(CalibrationShaped, StaysWithinItsBudgetAndMeasuresOnlyWhatItIsAsked) {
    const Topology topo({dim(2, 1), dim(2, 1)});
    ShapedNetwork net(topo, {20e6, 20e6}, {0, 0}, false);
    CalibrationSettings s = quick_settings();
    s.budget_seconds = 0.3;
    const auto results = calibrate_all(topo, net, {1}, s);
    EXPECT_EQ(results[0].dims[0].bandwidth, 0);
    EXPECT_GT(results[0].dims[1].bandwidth, 0);
    // One phase: the budget, plus the probing that overshoots by at most one size step.
    EXPECT_LT(results[0].seconds, 2 * s.budget_seconds);
}

// ---------------------------------------------------------------------------------------
// The fill curve: derived from stream times, measured over a link one exchange cannot fill

namespace {

// The agreed time of a stream of 2c exchanges of `bytes`, c in flight, on a link of
// `bandwidth` with step `latency` whose c stages in flight reach `fill` of it: as the
// simulation's model has it (every c exchanges in flight pay a latency, then share
// bandwidth x fill), two rounds of c.
double stream_seconds(int c, double bytes, double bandwidth, double latency, double fill) {
    return 2 * (latency + c * bytes / (bandwidth * fill));
}

FillStreams streams_of(const std::vector<int> &levels, const std::vector<double> &fills,
                       double bytes, double bandwidth, double latency) {
    FillStreams s;
    s.bytes = bytes;
    for (size_t i = 0; i < levels.size(); ++i) {
        s.in_flight.push_back(levels[i]);
        s.exchanges.push_back(2 * levels[i]);
        s.seconds.push_back(stream_seconds(levels[i], bytes, bandwidth, latency, fills[i]));
    }
    return s;
}

} // namespace

TEST(CalibrationFill, TheRatiosOfExactTimesGiveTheCurve) {
    // 10 MB/s, 2 ms per step (a fifth of a 100 KB exchange's time: taken out), a link whose
    // 1, 2 and 4 stages in flight reach 50, 80 and 95 %. The best count fills the link:
    //   1: 0.50 / 0.95 = 0.526 -> 0.53;  2: 0.80 / 0.95 = 0.842 -> 0.84;
    //   3: between 2 and 4, (0.842 + 1) / 2 = 0.921 -> 0.92;  4: 1.
    const FillStreams s = streams_of({1, 2, 4}, {0.5, 0.8, 0.95}, 1e5, 10e6, 2e-3);
    EXPECT_EQ(derive_fill_curve(s, 2e-3, 4), (std::vector<double>{0.53, 0.84, 0.92, 1}));
    // K = 2 measures 1 and 2 only; K = 6 holds the last measured count's point past it.
    EXPECT_EQ(derive_fill_curve(streams_of({1, 2}, {0.6, 0.8}, 1e5, 10e6, 2e-3), 2e-3, 2),
              (std::vector<double>{0.75, 1}));
    EXPECT_EQ(derive_fill_curve(s, 2e-3, 6), (std::vector<double>{0.53, 0.84, 0.92, 1}));
    // Taking the latency out matters: left in, it counts as slowness, the more so the fewer
    // in flight (per exchange 22, 27 and 44.1 ms: 4.55, 7.41 and 9.07 MB/s), and one stage
    // would read 4.55 / 9.07 = 0.50 of the best.
    const std::vector<double> no_latency = derive_fill_curve(s, 0, 4);
    ASSERT_FALSE(no_latency.empty());
    EXPECT_EQ(no_latency[0], 0.5);
}

TEST(CalibrationFill, OnlyTheRatiosCount) {
    // The same streams 3 times slower (a machine busy for all counts alike, or exchanges
    // that stay in a cache the large ones leave): the same curve.
    const FillStreams s = streams_of({1, 2, 4}, {0.5, 0.8, 0.95}, 1e5, 10e6, 0);
    FillStreams slow = s;
    for (double &t : slow.seconds) t *= 3;
    EXPECT_EQ(derive_fill_curve(slow, 0, 4), derive_fill_curve(s, 0, 4));
    EXPECT_EQ(derive_fill_curve(s, 0, 4), (std::vector<double>{0.53, 0.84, 0.92, 1}));
}

TEST(CalibrationFill, AFullLinkKeepsNoCurve) {
    // Every count within `full` (0.95) of the best: noise around a full link, no curve (the
    // curve's absence plans as before fill curves).
    for (const std::vector<double> &fills :
         {std::vector<double>{1, 1, 1}, {0.97, 0.99, 1.0}, {1.02, 0.99, 1.03}})
        EXPECT_TRUE(
            derive_fill_curve(streams_of({1, 2, 4}, fills, 1e5, 10e6, 1e-4), 1e-4, 4).empty())
            << fills[0];
    // `full` 1: only an exact one.
    EXPECT_FALSE(
        derive_fill_curve(streams_of({1, 2, 4}, {0.97, 0.99, 1}, 1e5, 10e6, 1e-4), 1e-4, 4, 1.0)
            .empty());
}

TEST(CalibrationFill, NoiseNeverMakesMoreStagesDeliverLess) {
    // Two stages read slower than one (noise): the curve stays flat there.
    const std::vector<double> curve =
        derive_fill_curve(streams_of({1, 2, 4}, {0.6, 0.55, 0.9}, 1e5, 10e6, 0), 0, 4);
    EXPECT_EQ(curve, (std::vector<double>{0.67, 0.67, 0.83, 1}));
    for (size_t i = 1; i < curve.size(); ++i) EXPECT_GE(curve[i], curve[i - 1]);
}

TEST(CalibrationFill, UnusableTimesGiveNoCurve) {
    FillStreams s = streams_of({1, 2, 4}, {0.5, 0.8, 0.95}, 1e5, 10e6, 0);
    for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()}) {
        FillStreams broken = s;
        broken.seconds[1] = bad;
        EXPECT_TRUE(derive_fill_curve(broken, 0, 4).empty()) << bad;
    }
    EXPECT_TRUE(derive_fill_curve(FillStreams(), 0, 4).empty());
    FillStreams no_bytes = s;
    no_bytes.bytes = 0;
    EXPECT_TRUE(derive_fill_curve(no_bytes, 0, 4).empty());
}

TEST(CalibrationFill, MediansOfNoisyRepetitionsOverRanksGiveTheCurve) {
    // Synthetic times of 8 ranks x 5 repetitions per count, as calibrate() reduces them:
    // each rank's median, then the maximum over ranks. Noise: every time +-3 % (uniform),
    // and on each rank one repetition per count 3x as long (a descheduled process). The
    // curve of 50 / 80 / 95 % comes out within 0.04 of its exact ratios (0.53, 0.84, 0.92,
    // 1); the mean of the repetitions instead would let the outliers pull it off.
    std::mt19937_64 rng(29);
    std::uniform_real_distribution<double> jitter(0.97, 1.03);
    const std::vector<int> levels = {1, 2, 4};
    const std::vector<double> fills = {0.5, 0.8, 0.95};
    const double bytes = 1e5, bw = 10e6, lat = 2e-4;
    FillStreams agreed = streams_of(levels, fills, bytes, bw, lat);
    for (size_t l = 0; l < levels.size(); ++l) {
        double slowest = 0;
        for (int rank = 0; rank < 8; ++rank) {
            std::vector<double> reps;
            for (int r = 0; r < 5; ++r)
                reps.push_back(stream_seconds(levels[l], bytes, bw, lat, fills[l]) * jitter(rng) *
                               (r == rank % 5 ? 3 : 1));
            slowest = std::max(slowest, median(reps));
        }
        agreed.seconds[l] = slowest;
    }
    const std::vector<double> curve = derive_fill_curve(agreed, lat, 4);
    const std::vector<double> exact = {0.53, 0.84, 0.92, 1};
    ASSERT_EQ(curve.size(), exact.size());
    for (size_t i = 0; i < exact.size(); ++i) EXPECT_NEAR(curve[i], exact[i], 0.04) << i;
}

TEST(CalibrationShaped, MeasuresTheFillCurveOfALinkOneExchangeCannotFill) {
    // 2x2: dimension 0 a plain 10 MB/s link, dimension 1 a 5 MB/s link that one message
    // uses at most half of. Dimension 1's large exchanges read ~2.5 MB/s, its streams of 1
    // in flight as much, of 2 and 4 ~5 MB/s: curve ~0.5 then 1; its bandwidth stays the
    // large exchanges' (derive_fill_curve). Ranks are threads here, and a loaded machine
    // delays each between its exchanges: one exchange in flight then leaves the link idle
    // meanwhile, as a busy machine does to the engine's stages (dimension 0 read 0.53-0.58
    // with one in flight on a 2-core machine under load; not checked), the less so
    // relatively the longer an exchange takes.
    const Topology topo({dim(2, 1), dim(2, 1)});
    ShapedNetwork net(topo, {10e6, 5e6}, {100e-6, 100e-6}, false, {1.0, 0.5});
    CalibrationSettings s = quick_settings();
    s.fill_in_flight = 4;
    s.fill_bytes = s.fill_min_bytes = 64 << 10;
    s.fill_repetitions = 3;
    const auto results = calibrate_all(topo, net, {0, 1}, s);
    expect_identical_rates(results);
    const DimensionRates &zero = results[0].dims[0], &one = results[0].dims[1];
    ASSERT_FALSE(one.fill.empty());
    EXPECT_NEAR(one.fill[0], 0.5, 0.15) << fill_text(one.fill);
    EXPECT_TRUE(zero.fill.empty() || zero.fill.back() == 1) << fill_text(zero.fill);
    Dimension d = dim(2, one.bandwidth);
    d.fill = one.fill;
    EXPECT_GT(fill_fraction(d, 4), 0.85) << fill_text(one.fill);
    EXPECT_GT(one.bandwidth, 0.70 * 2.5e6);
    EXPECT_LT(one.bandwidth, 1.15 * 2.5e6);
    // The curve goes into the topology the plans use, unless the spec gave one.
    const Topology t = with_measured_rates(topo, results[0].dims, false, false);
    EXPECT_EQ(t.dim(1).fill, one.fill);
    EXPECT_TRUE(with_measured_rates(topo, results[0].dims, false, false, true).dim(1).fill.empty());
}

TEST(CalibrationShaped, TheFillCurveStaysWithinTheBudget) {
    // Its phase takes what the others left of the budget: the streams' exchanges shrink
    // to fit it (down to fill_min_bytes).
    const Topology topo({dim(2, 1), dim(2, 1)});
    ShapedNetwork net(topo, {20e6, 10e6}, {0, 0}, false, {1.0, 0.5});
    CalibrationSettings s = quick_settings();
    s.budget_seconds = 0.3;
    s.fill_in_flight = 4;
    const auto results = calibrate_all(topo, net, {0, 1}, s);
    EXPECT_LT(results[0].seconds, 2 * s.budget_seconds);
    // Stages below the floor (a small coll_themis_min_chunk_bytes): exchanges of a stage.
    s.fill_bytes = 4 << 10;
    EXPECT_LT(calibrate_all(topo, net, {0, 1}, s)[0].seconds, 2 * s.budget_seconds);
}

TEST(CalibrationShaped, NoFillCurveUnlessAsked) {
    const Topology topo({dim(2, 1), dim(2, 1)});
    ShapedNetwork net(topo, {20e6, 10e6}, {0, 0}, false, {1.0, 0.5});
    const auto results = calibrate_all(topo, net, {0, 1}, quick_settings());
    for (const DimensionRates &r : results[0].dims) EXPECT_TRUE(r.fill.empty());
}

TEST(CalibrationRevision, BandwidthFactorsMultiplyAndRoundLikeMeasuredRates) {
    // 100 and 200 Mbit/s revised by 1 and 0.254: 100 and 50.8 Mbit/s exactly; 1/3 of
    // 100 Mbit/s rounds to 4 digits in bits/s (33.33 Mbit/s); latencies and sizes unchanged.
    const Topology t = parse_topology("2x4:bw=100Mbps,200Mbps:lat=5us,7us");
    const Topology r = with_bandwidth_factors(t, {1.0, 0.254});
    EXPECT_DOUBLE_EQ(r.dim(0).bandwidth * 8, 100e6);
    EXPECT_DOUBLE_EQ(r.dim(1).bandwidth * 8, 50.8e6);
    EXPECT_EQ(r.dim(1).peers, 4);
    EXPECT_DOUBLE_EQ(r.dim(1).latency, 7e-6);
    EXPECT_DOUBLE_EQ(with_bandwidth_factors(t, {1.0 / 3, 1}).dim(0).bandwidth * 8, 33.33e6);
    EXPECT_THROW(with_bandwidth_factors(t, {1.0}), std::invalid_argument);
}

// The rate sources' order: given, then what was found (cached or measured) for the measured
// dimensions, else the defaults.
TEST(RateSources, GivenThenFoundThenDefault) {
    const auto G = RateSource::Given, D = RateSource::Default, M = RateSource::Measured,
               C = RateSource::Cached;
    // bw given, dimension 1 of 3 measured now: its latency and fill measured, the rest default.
    RateSources s = rate_sources(3, {1}, true, false, false, M);
    EXPECT_EQ(s.bandwidth, (std::vector<RateSource>{G, G, G}));
    EXPECT_EQ(s.latency, (std::vector<RateSource>{D, M, D}));
    EXPECT_EQ(s.fill, (std::vector<RateSource>{D, M, D}));
    // Kept by an earlier job: cached.
    s = rate_sources(2, {0, 1}, false, false, true, C);
    EXPECT_EQ(s.bandwidth, (std::vector<RateSource>{C, C}));
    EXPECT_EQ(s.fill, (std::vector<RateSource>{G, G}));
    // Nothing found (measuring off, failed, or the ranks disagreed): the defaults.
    s = rate_sources(2, {0, 1}, false, true, false, std::nullopt);
    EXPECT_EQ(s.bandwidth, (std::vector<RateSource>{D, D}));
    EXPECT_EQ(s.latency, (std::vector<RateSource>{G, G}));
}

TEST(RateSources, ImplausibleMeasurementsAreRefused) {
    DimensionRates good;
    good.bandwidth = 1e9;
    good.latency = 1e-6;
    good.fill = {0.5, 1.0};
    std::vector<DimensionRates> rates(2, good);
    EXPECT_TRUE(plausible_rates(rates, {0, 1}));
    for (double bad_bw : std::vector<double>{0.0, -1.0, std::nan(""), INFINITY}) {
        rates[1].bandwidth = bad_bw;
        EXPECT_FALSE(plausible_rates(rates, {0, 1})) << bad_bw;
        EXPECT_TRUE(plausible_rates(rates, {0})) << "dimension 1 is not measured";
    }
    rates[1] = good;
    rates[1].latency = -1e-9;
    EXPECT_FALSE(plausible_rates(rates, {1}));
    rates[1] = good;
    rates[1].fill = {0.0, 1.0};
    EXPECT_FALSE(plausible_rates(rates, {1}));
    rates[1].fill = {0.5, 1.01};
    EXPECT_FALSE(plausible_rates(rates, {1}));
}
