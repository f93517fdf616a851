// sim_paper: one simulated collective, and the Themis paper's microbenchmark (see sim_paper.h).
#include "sim_paper.h"

#include "order_mix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

namespace themis::sim {

PlanRequest plan_request(const SimCase &c) {
    PlanRequest req;
    req.collective = c.collective;
    req.element_size = 1;
    const uint64_t bytes = static_cast<uint64_t>(c.bytes);
    if (collective_info(c.collective).one_vector) {
        req.block_counts = {bytes};
    } else {
        const uint64_t n = static_cast<uint64_t>(c.topology.size());
        for (uint64_t r = 0; r < n; ++r) req.block_counts.push_back(bytes / n + (r < bytes % n));
    }
    req.chunks = c.chunks;
    req.min_chunk_bytes = c.min_chunk_bytes;
    req.scheduler = c.scheduler;
    req.ordering = c.ordering;
    return req;
}

SimResult simulate(const SimCase &c) {
    PlanRequest req = plan_request(c);
    std::vector<Prediction> calls;
    for (int k = 0; k < std::max(1, c.calls); ++k) {
        calls.push_back(predict_plan(c.topology, req));
        if (c.carry_load) req.carried_load = carried_after(calls.back(), req);
    }
    SimResult r;
    r.topology = calls.front().topology;
    r.ideal = ideal_time(c.topology, c.collective, c.bytes * double(calls.size()));
    if (calls.size() == 1) {
        r.schedule = std::move(calls.front().schedule);
        r.ordering = std::move(calls.front().ordering);
        return r;
    }
    std::vector<ReplayCall> replayed;
    for (const Prediction &p : calls) {
        replayed.push_back({&p.schedule, &p.ordering.dim_order, &p.topology});
        r.schedule.insert(r.schedule.end(), p.schedule.begin(), p.schedule.end());
    }
    r.ordering = replay_calls(r.topology, replayed, c.ordering, CrossCall::FillIdle);
    return r;
}

std::string policy_label(Policy policy, IntraPolicy intra, int max_active) {
    std::string label = policy == Policy::Baseline && intra == IntraPolicy::Fifo
                            ? "baseline"
                            : std::string(policy_name(policy)) + "_" + intra_policy_name(intra);
    return max_active > 1 ? label + "_k" + std::to_string(max_active) : label;
}

std::string format_si(double value, const char *unit) {
    static const struct {
        double factor;
        const char *prefix;
    } prefixes[] = {{1e12, "T"}, {1e9, "G"},  {1e6, "M"},  {1e3, "k"},
                    {1, ""},     {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}};
    const auto *p = std::find_if(std::begin(prefixes), std::end(prefixes),
                                 [&](const auto &x) { return std::fabs(value) >= x.factor; });
    if (value == 0 || p == std::end(prefixes)) p = &prefixes[4]; // no prefix for 0 or tiny
    char buf[64];
    snprintf(buf, sizeof buf, "%.4g %s%s", value / p->factor, p->prefix, unit);
    return buf;
}

// ---------------------------------------------------------------------------------------
// The paper's microbenchmark

namespace {

const double kPaperSizes[] = {1e8, 2.5e8, 5e8, 1e9}; // 100 MB .. 1 GB, decimal
constexpr int kPaperChunks = 64;

struct PaperPolicy {
    const char *label;
    Policy policy;
    IntraPolicy intra;
    // false: the paper's runs, 64 chunks and Table 2's algorithms; true: the planner
    // chooses the chunk count and the switches' algorithms, as the component does
    bool planned;
};
// The paper's three, then the planner's. The speedup column compares the baseline (first)
// with Themis+SCF (kScf), as the paper does.
// The paper's SCF breaks ties as its reference code does (newest first).
const PaperPolicy kPaperPolicies[] = {{"baseline", Policy::Baseline, IntraPolicy::Fifo, false},
                                      {"themis_fifo", Policy::Themis, IntraPolicy::Fifo, false},
                                      {"themis_scf", Policy::Themis, IntraPolicy::ScfNewest, false},
                                      {"themis_auto", Policy::Themis, IntraPolicy::Scf, true}};
constexpr size_t kNumPolicies = std::size(kPaperPolicies);
constexpr size_t kScf = 2;

std::string label_of(const PaperPolicy &p) { return p.label; }

// The topology with Table 2's algorithms only.
Topology pinned(const Topology &topo) {
    std::vector<Dimension> dims = topo.dims();
    for (Dimension &d : dims) d.alternatives = 0;
    return Topology(dims);
}

// How latency enters a run: the network's (Table 2's or none) and the scheduler's view of it.
struct LatencyModel {
    const char *name;
    bool with_table2_latency; // false: Topology::without_latency()
    LoadModel load_model;
    const char *about;
};
const LatencyModel kLatencyModels[] = {
    {"bandwidth_only", false, LoadModel::Reference,
     "no latency anywhere; the model the paper's averages come from"},
    {"table2_reference", true, LoadModel::Reference,
     "Table 2 latencies; scheduler load = bandwidth time only (latency-blind)"},
    {"table2_latency", true, LoadModel::Latency,
     "Table 2 latencies; scheduler load = bandwidth time + steps x latency"},
};

// The paper's averages over its 24 runs (bandwidth-only), in kPaperPolicies order (NaN:
// not in the paper).
const double kPaperUtilization[kNumPolicies] = {0.5631, 0.8767, 0.9514, NAN};
constexpr double kPaperSpeedupAvg = 1.72, kPaperSpeedupMax = 2.70;

PaperRun run_one(const std::string &topo_name, const LatencyModel &model, double bytes,
                 const PaperPolicy &policy) {
    const Topology table2 = *paper_topology(topo_name);
    const Topology network = model.with_table2_latency ? table2 : table2.without_latency();
    SimCase c;
    c.topology = policy.planned ? network : pinned(network);
    c.bytes = bytes;
    c.chunks = policy.planned ? kAutoChunks : kPaperChunks;
    if (!policy.planned) c.min_chunk_bytes = 0;
    c.scheduler.policy = policy.policy;
    c.scheduler.load_model = model.load_model;
    c.ordering.intra = policy.intra;
    c.ordering.max_active = 1;
    const SimResult r = simulate(c);
    return {topo_name, bytes, model.name, label_of(policy), r.ordering.makespan, r.ideal};
}

// The runs by (latency model, topology, size, policy).
class RunIndex {
  public:
    explicit RunIndex(const std::vector<PaperRun> &runs) {
        for (const auto &r : runs) index_[{r.latency_model, r.topology, r.bytes, r.policy}] = &r;
    }
    const PaperRun &at(const std::string &model, const std::string &topo, double bytes,
                       const PaperPolicy &policy) const {
        auto it = index_.find({model, topo, bytes, label_of(policy)});
        if (it == index_.end()) throw std::logic_error("paper run missing: " + model + " " + topo);
        return *it->second;
    }

  private:
    std::map<std::tuple<std::string, std::string, double, std::string>, const PaperRun *> index_;
};

// The runs of one topology and size, in kPaperPolicies order.
using PolicyRuns = const PaperRun *[kNumPolicies];

double scf_speedup(const PolicyRuns &runs) { return runs[0]->time / runs[kScf]->time; }

double mean(const std::vector<double> &v) {
    return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

// Utilizations per policy and Themis+SCF speedups of a group of rows, for its average row.
struct Tally {
    std::vector<double> utilization[kNumPolicies];
    std::vector<double> speedup;

    void add(const PolicyRuns &runs) {
        for (size_t p = 0; p < kNumPolicies; ++p) utilization[p].push_back(runs[p]->utilization());
        speedup.push_back(scf_speedup(runs));
    }
    double mean_utilization(size_t p) const { return mean(utilization[p]); }
    double max_speedup() const { return *std::max_element(speedup.begin(), speedup.end()); }
};

constexpr const char *kRowFormat = "%-20s %-9s";

void print_header(std::ostream &out, const LatencyModel &model) {
    char buf[160];
    out << model.name << ": " << model.about << "\n";
    snprintf(buf, sizeof buf, kRowFormat, "topology", "size");
    out << buf;
    for (const auto &p : kPaperPolicies) {
        snprintf(buf, sizeof buf, " %12s", label_of(p).c_str());
        out << buf;
    }
    out << "   speedup\n";
}

void print_row(std::ostream &out, const std::string &first, const std::string &second,
               const double utilization[kNumPolicies], const std::string &speedup) {
    char buf[160];
    snprintf(buf, sizeof buf, kRowFormat, first.c_str(), second.c_str());
    out << buf;
    for (size_t p = 0; p < kNumPolicies; ++p) {
        if (std::isnan(utilization[p]))
            snprintf(buf, sizeof buf, " %12s", "-");
        else
            snprintf(buf, sizeof buf, " %10.2f %%", 100 * utilization[p]);
        out << buf;
    }
    out << "   " << speedup << "\n";
}

std::string times(double x) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.2fx", x);
    return buf;
}

// An average row: the group's name in the topology column, "average" in the size column.
void print_average(std::ostream &out, const std::string &group, const Tally &t, bool with_max) {
    double u[kNumPolicies];
    for (size_t p = 0; p < kNumPolicies; ++p) u[p] = t.mean_utilization(p);
    std::string speedup = times(mean(t.speedup)) + " avg";
    if (with_max) speedup += ", " + times(t.max_speedup()) + " max";
    print_row(out, group, "average", u, speedup);
}

void print_model(std::ostream &out, const RunIndex &index, const LatencyModel &model) {
    print_header(out, model);
    Tally overall;
    for (const auto &topo : paper_topology_names()) {
        Tally per_topology;
        for (double bytes : kPaperSizes) {
            PolicyRuns runs;
            double u[kNumPolicies];
            for (size_t p = 0; p < kNumPolicies; ++p) {
                runs[p] = &index.at(model.name, topo, bytes, kPaperPolicies[p]);
                u[p] = runs[p]->utilization();
            }
            print_row(out, topo, format_si(bytes, "B"), u, times(scf_speedup(runs)));
            per_topology.add(runs);
            overall.add(runs);
        }
        print_average(out, topo, per_topology, false);
    }
    print_average(out, "all topologies", overall, true);
    if (!model.with_table2_latency)
        print_row(out, "paper, Sec. 5.3", "average", kPaperUtilization,
                  times(kPaperSpeedupAvg) + " avg, " + times(kPaperSpeedupMax) + " max");
    out << "\n";
}

std::string order_text(const std::vector<int> &order) {
    std::string s;
    for (int d : order) s += (s.empty() ? "" : ",") + std::to_string(d);
    return s;
}

// The best order mix of each topology (order_mix.h) against the greedy's bandwidth-only
// averages: what is left between them is the schedule's (pipeline, discrete chunks), not
// the choice of orders.
void print_order_mix(std::ostream &out, const RunIndex &index) {
    out << "order_mix: best mix of RS orders (linear program over order fractions, bandwidth "
           "only, no pipeline): the bound's utilization against the greedy's, averaged over "
           "sizes\n";
    char buf[200];
    snprintf(buf, sizeof buf, "%-20s %12s %12s %12s   %s\n", "topology", "order_mix", "themis_scf",
             "themis_auto", "orders (fraction)");
    out << buf;
    const std::string model = kLatencyModels[0].name; // bandwidth only
    for (const auto &name : paper_topology_names()) {
        const Topology topo = paper_topology(name)->without_latency();
        const double bytes = kPaperSizes[0]; // the bound scales with the bytes, as the ideal
        const OrderMix mix = best_order_mix(topo, Collective::AllReduce, bytes);
        const double bound = ideal_time(topo, Collective::AllReduce, bytes) / mix.time;
        std::vector<double> scf, planned;
        for (double b : kPaperSizes) {
            scf.push_back(index.at(model, name, b, kPaperPolicies[kScf]).utilization());
            planned.push_back(
                index.at(model, name, b, kPaperPolicies[kNumPolicies - 1]).utilization());
        }
        std::string orders;
        for (const OrderShare &s : mix.shares) {
            snprintf(buf, sizeof buf, "%s%s (%.2f)", orders.empty() ? "" : " ",
                     order_text(s.order).c_str(), s.fraction);
            orders += buf;
        }
        snprintf(buf, sizeof buf, "%-20s %10.2f %% %10.2f %% %10.2f %%   %s\n", name.c_str(),
                 100 * bound, 100 * mean(scf), 100 * mean(planned), orders.c_str());
        out << buf;
    }
    out << "\n";
}

} // namespace

std::vector<PaperRun> run_paper() {
    std::vector<PaperRun> runs;
    for (const auto &model : kLatencyModels)
        for (const auto &topo : paper_topology_names())
            for (double bytes : kPaperSizes)
                for (const auto &policy : kPaperPolicies)
                    runs.push_back(run_one(topo, model, bytes, policy));
    return runs;
}

void print_paper(std::ostream &out, const std::vector<PaperRun> &runs) {
    out << "Themis paper microbenchmark: All-Reduce, K = 1, Table 2 topologies; the paper's "
           "policies with "
        << kPaperChunks
        << " chunks and Table 2's algorithms, themis_auto with the planner's chunk count "
           "(up to "
        << kMaxAutoChunks << ") and algorithms (a switch may run hd, direct or ring).\n"
        << "utilization = ideal time / predicted time; speedup = baseline time / themis_scf "
           "time\n\n";
    const RunIndex index(runs);
    for (const auto &model : kLatencyModels) print_model(out, index, model);
    print_order_mix(out, index);
}

void write_paper_csv(std::ostream &out, const std::vector<PaperRun> &runs) {
    out << "topology,size_bytes,latency_model,policy,time_us,ideal_us,utilization\n";
    char buf[256];
    for (const auto &r : runs) {
        snprintf(buf, sizeof buf, "%s,%.0f,%s,%s,%.6f,%.6f,%.6f\n", r.topology.c_str(), r.bytes,
                 r.latency_model.c_str(), r.policy.c_str(), r.time * 1e6, r.ideal * 1e6,
                 r.utilization());
        out << buf;
    }
}

} // namespace themis::sim
