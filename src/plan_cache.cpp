// plan_cache: LRU cache of compiled plans (see plan_cache.h).
#include "plan_cache.h"

#include "fnv1a.h"

namespace themis {

namespace {

template <typename T> void hash_field(Fnv1a &h, const T &v) { h.value(v); }
template <typename T> void hash_field(Fnv1a &h, const std::vector<T> &v) {
    h.value(v.size());
    for (const T &x : v) h.value(x);
}

} // namespace

uint64_t PlanCache::hash_of(const Topology &topo, const PlanRequest &req) {
    Fnv1a h;
    h.value(topo.fingerprint());
    std::apply([&h](const auto &...field) { (hash_field(h, field), ...); }, plan_request_key(req));
    return h.digest();
}

bool PlanCache::same(const Entry &e, const Topology &topo, const PlanRequest &req) {
    return e.topo == topo && plan_request_key(e.req) == plan_request_key(req);
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
