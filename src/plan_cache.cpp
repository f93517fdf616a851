// plan_cache: LRU cache of compiled plans (see plan_cache.h).
#include "plan_cache.h"

#include "fnv1a.h"

namespace themis {

uint64_t PlanCache::hash_of(const Topology &topo, const PlanRequest &req) {
    Fnv1a h;
    h.value(topo.fingerprint());
    h.value(req.collective);
    h.value(req.element_size);
    for (uint64_t c : req.block_counts) h.value(c);
    for (uint64_t d : req.block_displs) h.value(d);
    h.value(req.chunks);
    h.value(req.min_chunk_bytes);
    h.value(req.scheduler.policy);
    h.value(req.scheduler.load_model);
    h.value(req.scheduler.threshold);
    h.value(req.ordering.intra);
    h.value(req.ordering.max_active);
    h.value(req.rank);
    return h.digest();
}

bool PlanCache::same(const Entry &e, const Topology &topo, const PlanRequest &req) {
    const PlanRequest &a = e.req;
    return e.topo == topo && a.collective == req.collective &&
           a.element_size == req.element_size && a.block_counts == req.block_counts &&
           a.block_displs == req.block_displs &&
           a.chunks == req.chunks && a.min_chunk_bytes == req.min_chunk_bytes &&
           a.scheduler.policy == req.scheduler.policy &&
           a.scheduler.load_model == req.scheduler.load_model &&
           a.scheduler.threshold == req.scheduler.threshold &&
           a.ordering.intra == req.ordering.intra &&
           a.ordering.max_active == req.ordering.max_active && a.rank == req.rank;
}

std::shared_ptr<const Plan> PlanCache::get(const Topology &topo, const PlanRequest &req) {
    const uint64_t h = hash_of(topo, req);
    auto range = index_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
        if (same(*it->second, topo, req)) {
            entries_.splice(entries_.begin(), entries_, it->second);
            ++hits_;
            return entries_.front().plan;
        }
    }
    ++misses_;
    auto plan = std::make_shared<const Plan>(compile_plan(topo, req));
    entries_.push_front({h, topo, req, plan});
    index_.emplace(h, entries_.begin());
    if (entries_.size() > capacity_) {
        auto last = std::prev(entries_.end());
        auto r = index_.equal_range(last->hash);
        for (auto it = r.first; it != r.second; ++it)
            if (it->second == last) {
                index_.erase(it);
                break;
            }
        entries_.pop_back();
    }
    return plan;
}

void PlanCache::clear() {
    entries_.clear();
    index_.clear();
}

} // namespace themis
