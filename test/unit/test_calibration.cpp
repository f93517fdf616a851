// Unit tests of src/calibration: the sizing rule, the statistics, the spec merge, and whole
// calibrations of every rank at once (one thread each) over a transport that delivers at
// rates the test sets, so the measured numbers can be checked against them.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "calibration.h"
#include "transports/loopback_transport.h"
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
    ShapedNetwork(const Topology &topo, std::vector<double> rate, std::vector<double> latency,
                  bool shared_link)
        : net_(topo, false), rate_(std::move(rate)), latency_(std::move(latency)),
          shared_link_(shared_link), link_free_(topo.size(), std::vector<double>(topo.num_dims())),
          start_(Clock::now()) {
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
            free = std::max(free, seconds_since(n_.start_)) + double(bytes) / n_.rate_[d];
            double late = 0;
            if (rank_ == 0 && bytes <= n_.small_bytes_ && n_.delayed_ > 0) {
                --n_.delayed_;
                late = n_.delay_;
            }
            return new Op{n_.net_.transport(rank_).isend(d, peer, buf, bytes, tag),
                          free + n_.latency_[d] + late};
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

    std::mutex mutex_;
    LoopbackNetwork net_;
    std::vector<double> rate_, latency_;
    bool shared_link_;
    std::vector<std::vector<double>> link_free_;
    int delayed_ = 0;
    size_t small_bytes_ = 0;
    double delay_ = 0;
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
    EXPECT_GT(results[0].bytes_sent, 0u);
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
