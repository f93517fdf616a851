// plan_cache: compiled plans kept for reuse (paper Sec. 4.6: a schedule is computed once
// and reused by later iterations). Keyed by everything a plan depends on; least recently
// used plans are dropped beyond the capacity.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <unordered_map>

#include "plan.h"

namespace themis {

class PlanCache {
  public:
    explicit PlanCache(size_t capacity = 64) : capacity_(capacity ? capacity : 1) {}

    // The plan for (topo, req): from the cache, or compiled and stored.
    std::shared_ptr<const Plan> get(const Topology &topo, const PlanRequest &req);

    size_t size() const { return entries_.size(); }
    size_t hits() const { return hits_; }
    size_t misses() const { return misses_; }
    void clear();

  private:
    struct Entry {
        uint64_t hash;
        Topology topo;
        PlanRequest req;
        std::shared_ptr<const Plan> plan;
    };
    static uint64_t hash_of(const Topology &topo, const PlanRequest &req);
    static bool same(const Entry &e, const Topology &topo, const PlanRequest &req);

    size_t capacity_;
    std::list<Entry> entries_; // most recently used first
    std::unordered_multimap<uint64_t, std::list<Entry>::iterator> index_;
    size_t hits_ = 0, misses_ = 0;
};

} // namespace themis
