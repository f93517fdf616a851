// Unit tests of src/transports/transport_choice: four ranks of a 2x2 topology in four threads, over
// one LoopbackNetwork (behind a lock), choosing between it and the CMA transport over it;
// one of the two made slower on purpose must lose on every dimension.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "transports/cma_transport.h"
#include "testbed/loopback_transport.h"
#include "test_support.h"
#include "transports/transport_choice.h"

using namespace themis;

namespace {

// One rank's view of the shared network, every call under the network's lock.
class Locked : public Transport {
  public:
    Locked(Transport &inner, std::mutex &lock) : inner_(inner), lock_(lock) {}
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override {
        std::lock_guard<std::mutex> hold(lock_);
        return inner_.isend(dim, peer, buf, bytes, tag);
    }
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override {
        std::lock_guard<std::mutex> hold(lock_);
        return inner_.irecv(dim, peer, buf, bytes, tag);
    }
    bool test(Request req) override {
        std::lock_guard<std::mutex> hold(lock_);
        return inner_.test(req);
    }
    void progress() override {}
    const char *name() const override { return "locked"; }

  private:
    Transport &inner_;
    std::mutex &lock_;
};

// A transport whose every message takes at least `delay` to complete.
class Slow : public Transport {
  public:
    Slow(Transport &inner, std::chrono::microseconds delay) : inner_(inner), delay_(delay) {}
    Request isend(int dim, int peer, const void *buf, size_t bytes, int tag) override {
        return track(inner_.isend(dim, peer, buf, bytes, tag));
    }
    Request irecv(int dim, int peer, void *buf, size_t bytes, int tag) override {
        return track(inner_.irecv(dim, peer, buf, bytes, tag));
    }
    size_t max_segments(int dim) const override { return inner_.max_segments(dim); }
    Request isendv(int dim, int peer, const Segment *s, size_t n, int tag) override {
        return track(inner_.isendv(dim, peer, s, n, tag));
    }
    Request irecvv(int dim, int peer, const Segment *s, size_t n, int tag, Reducer *r) override {
        return track(inner_.irecvv(dim, peer, s, n, tag, r));
    }
    bool test(Request req) override {
        auto *t = static_cast<Tracked *>(req);
        if (!t->done) t->done = inner_.test(t->inner);
        if (!t->done || std::chrono::steady_clock::now() - t->posted < delay_) return false;
        delete t;
        return true;
    }
    void progress() override { inner_.progress(); }
    const char *name() const override { return "slow"; }

  private:
    struct Tracked {
        Request inner;
        std::chrono::steady_clock::time_point posted;
        bool done;
    };
    Request track(Request r) { return new Tracked{r, std::chrono::steady_clock::now(), false}; }
    Transport &inner_;
    std::chrono::microseconds delay_;
};

// Runs choose_transports on every rank of 2x2; `slow_single_copy` slows the CMA side,
// else the base one.
std::vector<std::vector<DimensionChoice>> choose(bool slow_single_copy) {
    const Topology topo = parse_topology("2x2");
    LoopbackNetwork net(topo, false);
    std::mutex lock;
    themis_test::ThreadAgree agree(topo.size());
    TransportChoiceSettings settings;
    settings.request.collective = Collective::AllReduce;
    settings.request.element_size = sizeof(float);
    settings.request.block_counts = {16384}; // 64 KiB
    settings.request.chunks = 4;
    settings.repetitions = 2;
    std::vector<std::vector<DimensionChoice>> out(size_t(topo.size()));
    std::vector<std::thread> ranks;
    for (int r = 0; r < topo.size(); ++r)
        ranks.emplace_back([&, r] {
            Locked base(net.transport(r), lock);
            CmaTransport cma(base, {true, true});
            Slow slow_base(base, std::chrono::microseconds(20000));
            Slow slow_cma(cma, std::chrono::microseconds(20000));
            Transport &b = slow_single_copy ? static_cast<Transport &>(base) : slow_base;
            Transport &c = slow_single_copy ? static_cast<Transport &>(slow_cma) : cma;
            themis_test::PlusReducer<float> sum;
            out[size_t(r)] = choose_transports(
                topo, r, b, c, {true, true}, sum, [&](std::vector<double> &v) { agree.agree(v); },
                settings);
        });
    for (auto &t : ranks) t.join();
    return out;
}

TEST(TransportChoice, TheSlowerTransportLosesOnEveryDimensionAndAllRanksAgree) {
    for (bool slow_single_copy : {false, true}) {
        const auto choices = choose(slow_single_copy);
        for (size_t r = 0; r < choices.size(); ++r)
            for (size_t d = 0; d < 2; ++d) {
                const DimensionChoice &c = choices[r][d];
                EXPECT_EQ(c.single_copy, !slow_single_copy) << "rank " << r << " dim " << d;
                EXPECT_GT(c.seconds_base, 0);
                EXPECT_GT(c.seconds_single_copy, 0);
                EXPECT_EQ(c.seconds_base, choices[0][d].seconds_base) << "agreed times differ";
                if (slow_single_copy)
                    EXPECT_GT(c.seconds_single_copy, c.seconds_base);
                else
                    EXPECT_GT(c.seconds_base, c.seconds_single_copy);
            }
    }
}

TEST(TransportChoice, DimensionsNotCandidatesAreLeftAlone) {
    const Topology topo = parse_topology("2x2");
    LoopbackNetwork net(topo, false);
    // No candidate: nothing runs, so one rank alone can call it.
    themis_test::PlusReducer<float> sum;
    CmaTransport cma(net.transport(0), {false, false});
    TransportChoiceSettings settings;
    const auto c = choose_transports(
        topo, 0, net.transport(0), cma, {false, false}, sum,
        [](std::vector<double> &) { FAIL() << "nothing to agree"; }, settings);
    ASSERT_EQ(c.size(), 2u);
    for (const DimensionChoice &d : c) {
        EXPECT_FALSE(d.single_copy);
        EXPECT_EQ(d.seconds_base, 0);
    }
}

} // namespace
