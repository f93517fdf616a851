// Unit tests of src/buffer_cache over a counting raw allocator: what it allocates and
// frees, not what the buffers hold (HostMemory's tests in test_engine.cpp cover the
// cache through malloc).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "buffer_cache.h"

using namespace themis;

namespace {

// The raw allocator's calls, counted (function pointers carry no state).
int allocations = 0, frees = 0;

void *counted_allocate(size_t bytes) {
    ++allocations;
    return std::malloc(bytes);
}

void counted_free(void *buf) {
    ++frees;
    std::free(buf);
}

class BufferCacheTest : public ::testing::Test {
  protected:
    void SetUp() override { allocations = frees = 0; }
    static constexpr RawAllocator kCounted = {counted_allocate, counted_free};
};

TEST_F(BufferCacheTest, ARepeatedWorkingSetAllocatesNothing) {
    BufferCache cache(kCounted, 1 << 20);
    for (int call = 0; call < 3; ++call) {
        void *a = cache.acquire(4000), *b = cache.acquire(1000);
        cache.release(a);
        cache.release(b);
    }
    EXPECT_EQ(allocations, 2);
    EXPECT_EQ(frees, 0);
    EXPECT_EQ(cache.cached_bytes(), 5000u);
}

TEST_F(BufferCacheTest, TheSmallestCachedBuffersAreFreedFirst) {
    BufferCache cache(kCounted, 1 << 20);
    void *a = cache.acquire(1000), *b = cache.acquire(4000);
    cache.release(a);
    cache.release(b);             // the working set was 5000 bytes: both stay
    void *c = cache.acquire(450); // more than twice as small as either: a new buffer
    cache.release(c);             // room for it: the 1000 bytes go, the 4000 stay
    EXPECT_EQ(frees, 1);
    EXPECT_EQ(cache.cached_bytes(), 4450u);
    EXPECT_EQ(cache.acquire(4000), b);
    EXPECT_EQ(allocations, 3);
    cache.release(b);
}

TEST_F(BufferCacheTest, TheLimitBoundsTheCacheUntilRaised) {
    BufferCache cache(kCounted, 1000);
    cache.release(cache.acquire(2000)); // over the limit: freed at once
    EXPECT_EQ(frees, 1);
    EXPECT_EQ(cache.cached_bytes(), 0u);
    cache.raise_limit(500); // lowers nothing
    cache.raise_limit(4000);
    cache.release(cache.acquire(2000));
    EXPECT_EQ(frees, 1);
    EXPECT_EQ(cache.cached_bytes(), 2000u);
}

TEST_F(BufferCacheTest, DestructionFreesTheCachedBuffers) {
    {
        BufferCache cache(kCounted, 1 << 20);
        void *a = cache.acquire(100), *b = cache.acquire(0);
        EXPECT_EQ(cache.outstanding(), 2u);
        cache.release(a);
        cache.release(b);
        EXPECT_EQ(cache.acquire(0), b); // filed under 0 bytes: found again
        cache.release(b);
    }
    EXPECT_EQ(allocations, 2);
    EXPECT_EQ(frees, 2);
}

} // namespace

// Under MPI_THREAD_MULTIPLE a call's preparation and the progress loop's engine use one
// cache from two threads: buffers handed out at once are never the same one, and every
// buffer comes back.
TEST(BufferCacheThreads, ThreadsAcquiringAndReleasingAtOnceShareNoBuffer) {
    BufferCache cache({[](size_t bytes) { return std::malloc(bytes); }, std::free}, 1 << 20);
    std::atomic<int> clashes{0};
    auto work = [&](unsigned char id) {
        for (int i = 0; i < 20000; ++i) {
            const size_t bytes = 64 + size_t(i * 37 + id * 101) % 4096;
            auto *buf = static_cast<unsigned char *>(cache.acquire(bytes));
            std::memset(buf, id, bytes);
            for (size_t b = 0; b < bytes; ++b)
                if (buf[b] != id) {
                    ++clashes;
                    break;
                }
            cache.release(buf);
        }
    };
    std::vector<std::thread> threads;
    for (unsigned char id = 1; id <= 4; ++id) threads.emplace_back(work, id);
    for (std::thread &t : threads) t.join();
    EXPECT_EQ(clashes.load(), 0);
    EXPECT_EQ(cache.outstanding(), 0u);
    EXPECT_LE(cache.cached_bytes(), size_t(1) << 20);
}
