// test_support: small helpers shared by the unit tests (no assertions about src/ here).
#pragma once

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "plan.h"
#include "topology.h"
#include "transport.h"

namespace themis_test {

// A dimension built field by field, so a test states every number it relies on.
inline themis::Dimension dim(int peers, double bandwidth, double latency = 0,
                             themis::Algorithm alg = themis::Algorithm::Ring) {
    themis::Dimension d;
    d.peers = peers;
    d.bandwidth = bandwidth;
    d.latency = latency;
    d.algorithm = alg;
    return d;
}

// A plan request without the component's bounds (settings.h): no chunk floor, one stage
// per dimension and no byte bound, the model the tests' hand-worked chunks and orders
// assume; a test that needs a bound sets it.
inline themis::PlanRequest bare_request(themis::Collective coll, uint64_t element_size,
                                        std::vector<uint64_t> counts, int chunks) {
    themis::PlanRequest req;
    req.collective = coll;
    req.element_size = element_size;
    req.block_counts = std::move(counts);
    req.chunks = chunks;
    req.min_chunk_bytes = 0;
    req.ordering.max_active = 1;
    req.ordering.max_active_bytes = 0;
    return req;
}

// Every algorithm of the registry, one bit (1 << Algorithm) each, as Dimension::alternatives.
inline unsigned every_algorithm() {
    unsigned all = 0;
    for (const themis::AlgorithmInfo &row : themis::algorithms()) all |= 1u << int(row.id);
    return all;
}

// A random topology of 1..max_dims dimensions with 1..max_peers peers each, random
// bandwidths (1..100 GB/s), latencies (0..10 us) and a random algorithm of the registry,
// ring where that one does not accept the peer count.
inline themis::Topology random_topology(std::mt19937_64 &rng, int max_dims = 4, int max_peers = 8) {
    const std::vector<themis::AlgorithmInfo> &rows = themis::algorithms();
    std::uniform_int_distribution<int> ndims(1, max_dims), peers(1, max_peers),
        alg(0, int(rows.size()) - 1);
    std::uniform_real_distribution<double> bw(1e9, 100e9), lat(0, 10e-6);
    std::vector<themis::Dimension> dims(ndims(rng));
    for (auto &d : dims) {
        d.peers = peers(rng);
        d.bandwidth = bw(rng);
        d.latency = lat(rng);
        const themis::AlgorithmInfo &row = rows[alg(rng)];
        d.algorithm = row.accepts(d.peers) ? row.id : themis::Algorithm::Ring;
    }
    return themis::Topology(dims);
}

// Coordinates by the documented rule (dimension 0 fastest), computed without Topology.
inline std::vector<int> expected_coords(const std::vector<int> &peers, int rank) {
    std::vector<int> c(peers.size());
    for (size_t d = 0; d < peers.size(); ++d) {
        c[d] = rank % peers[d];
        rank /= peers[d];
    }
    return c;
}

inline int expected_rank(const std::vector<int> &peers, const std::vector<int> &coords) {
    int rank = 0, stride = 1;
    for (size_t d = 0; d < peers.size(); ++d) {
        rank += coords[d] * stride;
        stride *= peers[d];
    }
    return rank;
}

inline std::vector<int> peers_of(const themis::Topology &t) {
    std::vector<int> p;
    for (const auto &d : t.dims()) p.push_back(d.peers);
    return p;
}

// Relative closeness for floats: |a-b| <= rel * max(|a|,|b|) (or both tiny).
inline bool close_rel(double a, double b, double rel) {
    double m = std::max(std::abs(a), std::abs(b));
    return std::abs(a - b) <= rel * m || m < 1e-300;
}

// AgreeMax for ranks that are threads: a reusable barrier that reduces by maximum.
class ThreadAgree {
  public:
    explicit ThreadAgree(int ranks) : ranks_(ranks) {}
    void agree(std::vector<double> &values) {
        std::unique_lock<std::mutex> lock(mutex_);
        const long generation = generation_;
        if (arrived_ == 0) max_ = values;
        for (size_t i = 0; i < values.size(); ++i) max_[i] = std::max(max_[i], values[i]);
        if (++arrived_ == ranks_) {
            result_ = max_;
            arrived_ = 0;
            ++generation_;
            done_.notify_all();
        } else {
            done_.wait(lock, [&] { return generation_ != generation; });
        }
        values = result_;
    }

  private:
    int ranks_, arrived_ = 0;
    long generation_ = 0;
    std::vector<double> max_, result_;
    std::mutex mutex_;
    std::condition_variable done_;
};

// dst += src over elements of T (wrapping for unsigned T).
template <typename T> class PlusReducer : public themis::Reducer {
  public:
    void reduce(void *dst, const void *src, size_t bytes) override {
        T *d = static_cast<T *>(dst);
        const T *s = static_cast<const T *>(src);
        for (size_t i = 0; i < bytes / sizeof(T); ++i) d[i] += s[i];
    }
    size_t element_bytes() const override { return sizeof(T); }
};

} // namespace themis_test
