// UcxTransport: whole collectives between UCX workers in one process (UCX's self and
// shared-memory transports), results checked against a direct computation.
#include <gtest/gtest.h>

#include <cstring>

#include "engine.h"
#include "host_memory.h"
#include "transports/ucx_transport.h"

namespace themis {
namespace {

struct Int64Sum : Reducer {
    void reduce(void *dst, const void *src, size_t bytes) override {
        auto *d = static_cast<int64_t *>(dst);
        auto *s = static_cast<const int64_t *>(src);
        for (size_t i = 0; i < bytes / sizeof(int64_t); ++i) d[i] += s[i];
    }
    size_t element_bytes() const override { return sizeof(int64_t); }
};

// N ranks, each with its own UCP worker, connected to every other rank.
class UcxRanks {
  public:
    explicit UcxRanks(const Topology &topo) : memory_(topo.size()) {
        const int n = topo.size();
        for (int r = 0; r < n; ++r) {
            std::string why;
            workers_.push_back(UcxWorker::create(why));
            if (!workers_.back()) {
                skip_reason_ = why;
                return;
            }
        }
        for (int r = 0; r < n; ++r) {
            std::vector<ucp_ep_h> eps(n, nullptr);
            for (int q = 0; q < n; ++q)
                if (q != r) eps[q] = workers_[r]->endpoint(workers_[q]->address());
            transports_.push_back(std::make_unique<UcxTransport>(*workers_[r], topo, r, eps, 42));
            engines_.push_back(std::make_unique<Engine>(topo, *transports_[r], memory_[r], 2));
        }
    }
    const std::string &skip_reason() const { return skip_reason_; }

    // Runs one plan per rank to completion; false if it does not finish.
    bool run(const std::vector<std::shared_ptr<const Plan>> &plans,
             std::vector<std::vector<int64_t>> &buffers) {
        Int64Sum sum;
        std::vector<std::unique_ptr<Execution>> runs;
        for (size_t r = 0; r < plans.size(); ++r)
            runs.push_back(
                engines_[r]->start(plans[r], reinterpret_cast<char *>(buffers[r].data()), sum));
        for (int spin = 0; spin < 50000000; ++spin) {
            bool all = true;
            for (size_t r = 0; r < runs.size(); ++r) {
                all = runs[r]->progress() && all;
                workers_[r]->progress();
            }
            if (all) return true;
        }
        return false;
    }

  private:
    std::vector<std::unique_ptr<UcxWorker>> workers_;
    std::vector<std::unique_ptr<UcxTransport>> transports_;
    std::vector<HostMemory> memory_;
    std::vector<std::unique_ptr<Engine>> engines_;
    std::string skip_reason_;
};

std::vector<std::shared_ptr<const Plan>> plans_for(const Topology &topo, Collective coll,
                                                   std::vector<uint64_t> counts) {
    std::vector<std::shared_ptr<const Plan>> plans;
    for (int r = 0; r < topo.size(); ++r) {
        PlanRequest req;
        req.collective = coll;
        req.element_size = sizeof(int64_t);
        req.block_counts = counts;
        req.chunks = 8;
        req.rank = r;
        plans.push_back(std::make_shared<const Plan>(compile_plan(topo, req)));
    }
    return plans;
}

TEST(UcxTransport, AllReduceMatchesDirectSum) {
    const Topology topo = parse_topology("2x2:alg=hd,ring");
    UcxRanks ranks(topo);
    if (!ranks.skip_reason().empty()) GTEST_SKIP() << "UCX unavailable: " << ranks.skip_reason();
    const uint64_t count = 100003;
    std::vector<std::vector<int64_t>> buf(topo.size(), std::vector<int64_t>(count));
    for (int r = 0; r < topo.size(); ++r)
        for (uint64_t i = 0; i < count; ++i) buf[r][i] = int64_t(i) * (r + 1) - r;
    ASSERT_TRUE(ranks.run(plans_for(topo, Collective::AllReduce, {count}), buf));
    for (int r = 0; r < topo.size(); ++r)
        for (uint64_t i = 0; i < count; ++i) // sum over r of i*(r+1) - r = 10 i - 6
            ASSERT_EQ(buf[r][i], int64_t(i) * 10 - 6) << "rank " << r << " element " << i;
}

TEST(UcxTransport, AllGatherPlacesEveryBlock) {
    const Topology topo = parse_topology("3:alg=direct");
    UcxRanks ranks(topo);
    if (!ranks.skip_reason().empty()) GTEST_SKIP() << "UCX unavailable: " << ranks.skip_reason();
    const std::vector<uint64_t> counts = {5, 0, 70001};
    const uint64_t total = 75006;
    std::vector<std::vector<int64_t>> buf(topo.size(), std::vector<int64_t>(total, -1));
    uint64_t start = 0;
    for (int r = 0; r < topo.size(); ++r) {
        for (uint64_t i = 0; i < counts[r]; ++i) buf[r][start + i] = int64_t(1000000 * r + i);
        start += counts[r];
    }
    ASSERT_TRUE(ranks.run(plans_for(topo, Collective::AllGather, counts), buf));
    for (int r = 0; r < topo.size(); ++r) {
        uint64_t at = 0;
        for (int owner = 0; owner < topo.size(); ++owner)
            for (uint64_t i = 0; i < counts[owner]; ++i, ++at)
                ASSERT_EQ(buf[r][at], int64_t(1000000 * owner + i)) << "rank " << r;
    }
}

TEST(UcxTransport, TagsSeparateCommunicatorsSendersAndDimensions) {
    // Every field lands in its own bits: distinct inputs give distinct tags.
    EXPECT_NE(UcxTransport::make_tag(1, 0, 0, 0), UcxTransport::make_tag(2, 0, 0, 0));
    EXPECT_NE(UcxTransport::make_tag(1, 1, 0, 0), UcxTransport::make_tag(1, 2, 0, 0));
    EXPECT_NE(UcxTransport::make_tag(1, 1, 1, 0), UcxTransport::make_tag(1, 1, 2, 0));
    EXPECT_EQ(
        UcxTransport::make_tag(kUcxMaxCommId, kUcxMaxPositions - 1, kUcxMaxDims - 1, kTagLimit - 1),
        ~ucp_tag_t(0));
    EXPECT_EQ(UcxTransport::make_tag(0, 0, 0, kTagLimit - 1), ucp_tag_t(kTagLimit - 1));
}

} // namespace
} // namespace themis
