// Unit tests of src/transports/cma_transport: two ranks of one process over LoopbackNetwork, each
// wrapped in a CmaTransport, so every "peer read" is process_vm_readv on this process.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "transports/cma_transport.h"
#include "testbed/loopback_transport.h"

using namespace themis;

namespace {

// Sums of 12-byte elements (three int32 lanes): an element size no power of two divides
// the reduction pieces by.
class Lane3Sum : public Reducer {
  public:
    void reduce(void *dst, const void *src, size_t bytes) override {
        EXPECT_EQ(bytes % 12, 0u) << "partial element reduced";
        auto *d = static_cast<int32_t *>(dst);
        auto *s = static_cast<const int32_t *>(src);
        for (size_t i = 0; i < bytes / 4; ++i) d[i] += s[i];
        ++calls;
    }
    size_t element_bytes() const override { return 12; }
    int calls = 0;
};

struct Pair {
    Pair() : net(parse_topology("2"), true) {
        for (int r = 0; r < 2; ++r)
            cma.push_back(
                std::make_unique<CmaTransport>(net.transport(r), std::vector<bool>{true}));
    }
    // Tests every (rank, request) until all are complete; false if they never are.
    bool drive(std::vector<std::pair<int, Transport::Request>> requests) {
        for (int round = 0; round < 1000 && !requests.empty(); ++round)
            for (auto it = requests.begin(); it != requests.end();)
                it = cma[size_t(it->first)]->test(it->second) ? requests.erase(it) : std::next(it);
        return requests.empty();
    }
    bool drive(Transport::Request send, Transport::Request recv) {
        return drive({{0, send}, {1, recv}});
    }
    LoopbackNetwork net;
    std::vector<std::unique_ptr<CmaTransport>> cma;
};

std::vector<int32_t> pattern(size_t n, int32_t seed) {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = int32_t((i * 2654435761u) ^ uint32_t(seed)) % 100000;
    return v;
}

TEST(CmaTransport, SegmentsCutDifferentlyOnEachSideArriveInOrder) {
    // 300 KB from three segments into four, cut at other places: one stream of bytes.
    const size_t n = 75000; // int32 values
    std::vector<int32_t> src = pattern(n, 1), dst(n, -1);
    const size_t cut_s[] = {0, 1000, 50001, n}, cut_r[] = {0, 7, 30000, 74000, n};
    std::vector<Segment> s, r;
    for (int i = 0; i < 3; ++i)
        s.push_back({reinterpret_cast<char *>(&src[cut_s[i]]), (cut_s[i + 1] - cut_s[i]) * 4});
    for (int i = 0; i < 4; ++i)
        r.push_back({reinterpret_cast<char *>(&dst[cut_r[i]]), (cut_r[i + 1] - cut_r[i]) * 4});
    Pair p;
    ASSERT_GE(p.cma[0]->max_segments(0), 4u);
    auto send = p.cma[0]->isendv(0, 1, s.data(), s.size(), 5);
    auto recv = p.cma[1]->irecvv(0, 0, r.data(), r.size(), 5, nullptr);
    ASSERT_TRUE(p.drive(send, recv));
    EXPECT_EQ(dst, src);
    EXPECT_EQ(p.net.unmatched(), 0u);
}

TEST(CmaTransport, ReductionInPiecesOfWholeElements) {
    // 1 MB + 12 B of 12-byte elements reduced into two segments: pieces never split one.
    const size_t elements = 87382, n = elements * 3;
    std::vector<int32_t> src = pattern(n, 2), dst = pattern(n, 3), want(n);
    for (size_t i = 0; i < n; ++i) want[i] = src[i] + dst[i];
    const size_t half = (elements / 2) * 3;
    Segment s{reinterpret_cast<char *>(src.data()), n * 4};
    Segment r[] = {{reinterpret_cast<char *>(dst.data()), half * 4},
                   {reinterpret_cast<char *>(dst.data() + half), (n - half) * 4}};
    Lane3Sum sum;
    Pair p;
    auto send = p.cma[0]->isendv(0, 1, &s, 1, 9);
    auto recv = p.cma[1]->irecvv(0, 0, r, 2, 9, &sum);
    ASSERT_TRUE(p.drive(send, recv));
    EXPECT_EQ(dst, want);
    EXPECT_GT(sum.calls, 2) << "the reduction did not run in pieces";
}

TEST(CmaTransport, SmallMessagesTravelInlineAndReduce) {
    for (size_t bytes : {size_t(12), CmaTransport::inline_bytes() / 12 * 12}) {
        std::vector<int32_t> src = pattern(bytes / 4, 4), dst = pattern(bytes / 4, 5),
                             want(bytes / 4);
        for (size_t i = 0; i < want.size(); ++i) want[i] = src[i] + dst[i];
        Lane3Sum sum;
        Pair p;
        auto send = p.cma[0]->isend(0, 1, src.data(), bytes, 1);
        Segment r{reinterpret_cast<char *>(dst.data()), bytes};
        auto recv = p.cma[1]->irecvv(0, 0, &r, 1, 1, &sum);
        EXPECT_TRUE(p.cma[0]->test(send)) << "an inline send waits for nothing";
        ASSERT_TRUE(p.drive({{1, recv}}));
        EXPECT_EQ(dst, want) << bytes << " bytes";
    }
}

TEST(CmaTransport, BothDirectionsOnOneTagWithDifferentSizes) {
    // Two peers send each other a block in the same step, one inline and one read: the
    // control messages of both share (dimension, tag) and are told apart by kind.
    std::vector<char> a(100, 'a'), b(200000, 'b'), got_a(100), got_b(200000);
    Pair p;
    auto s0 = p.cma[0]->isend(0, 1, a.data(), a.size(), 3);
    auto r0 = p.cma[0]->irecv(0, 1, got_b.data(), got_b.size(), 3);
    auto s1 = p.cma[1]->isend(0, 0, b.data(), b.size(), 3);
    auto r1 = p.cma[1]->irecv(0, 0, got_a.data(), got_a.size(), 3);
    ASSERT_TRUE(p.drive({{0, s0}, {0, r0}, {1, s1}, {1, r1}}));
    EXPECT_EQ(got_a, a);
    EXPECT_EQ(got_b, b);
}

TEST(CmaTransport, SizeMismatchFailsBothSidesInsteadOfHanging) {
    std::vector<char> src(100000, 'x'), dst(120000);
    Pair p;
    auto send = p.cma[0]->isend(0, 1, src.data(), src.size(), 2);
    auto recv = p.cma[1]->irecv(0, 0, dst.data(), dst.size(), 2);
    EXPECT_THROW(p.cma[1]->test(recv), std::runtime_error);
    bool threw = false;
    for (int i = 0; i < 100 && !threw; ++i) {
        try {
            p.cma[0]->test(send);
        } catch (const std::runtime_error &) {
            threw = true;
        }
    }
    EXPECT_TRUE(threw) << "the sender must learn that its peer failed";
}

TEST(CmaTransport, OtherDimensionsGoThroughTheWrappedTransport) {
    LoopbackNetwork net(parse_topology("2x2"), true);
    CmaTransport t0(net.transport(0), {true, false}), t2(net.transport(2), {true, false});
    EXPECT_EQ(t0.max_segments(1), 0u);
    std::vector<char> src(5000, 'q'), dst(5000);
    auto s = t0.isend(1, 1, src.data(), src.size(), 4);
    auto r = t2.irecv(1, 0, dst.data(), dst.size(), 4);
    EXPECT_TRUE(t2.test(r));
    EXPECT_TRUE(t0.test(s));
    EXPECT_EQ(dst, src);
    EXPECT_EQ(net.messages(), 1u) << "one message, no control traffic";
}

TEST(CmaRead, ReadsThisProcessAndExplainsAFailure) {
    const char text[] = "single copy";
    char out[sizeof text] = {};
    std::string why;
    ASSERT_TRUE(cma_read(getpid(), text, out, sizeof text, why)) << why;
    EXPECT_STREQ(out, text);
    EXPECT_FALSE(cma_read(getpid(), reinterpret_cast<const void *>(uintptr_t(8)), out, 8, why));
    EXPECT_NE(why.find("process_vm_readv"), std::string::npos) << why;
}

} // namespace
