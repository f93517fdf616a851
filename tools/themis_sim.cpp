// themis_sim: the what-if command line over the Themis planner (themis-sim --help).
//
//   one run   --topology T --size S [...]  summary on stdout; optional SVG timeline and
//                                          per-stage CSV; --measured: beside a trace of
//                                          the same collective run by the component
//   --paper   [--csv FILE]                 the paper's microbenchmark: table and CSV
//
// Exit status: 0 done, 1 a file could not be written, 2 a bad command line (one line on
// stderr says what and where).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim_paper.h"
#include "timeline_svg.h"
#include "trace.h"

namespace {

using namespace themis;
using namespace themis::sim;

const char kHelp[] = R"(themis-sim: predict a hierarchical collective under the Themis scheduler.

Usage:
  themis-sim --topology T --size S [options]   simulate one collective
  themis-sim --paper [--csv FILE]              the Themis paper's microbenchmark
  themis-sim --help

One run:
  --topology T       a dimension spec, PEERSxPEERSx...[:bw=LIST][:lat=LIST][:alg=LIST],
                     e.g. "2x4:bw=200Gbps,100Gbps:lat=1us,5us:alg=ring,hd" (a LIST holds one
                     value per dimension or one for all; bw units bps..Tbps or B/s..TB/s,
                     none = Gbps; lat units ns, us, ms, s, none = us; alg ring, hd, direct),
                     or a topology of the paper's Table 2: 2D-SW_SW, 3D-SW_SW_SW_homo,
                     3D-SW_SW_SW_hetero, 3D-FC_Ring_SW, 4D-Ring_SW_SW_SW, 4D-Ring_FC_Ring_SW
  --size S           bytes: All-Reduce the vector, Reduce-Scatter each rank's input (all
                     blocks), All-Gather each rank's output. Suffixes K, M, G, T (or KB, MB,
                     ...) are decimal, KiB, MiB, GiB, TiB binary: 64M, 1G, 100MB, 1.5GiB, 1e8
  --collective C     allreduce (default), reduce_scatter, allgather
  --chunks N|auto    chunks the collective is split into, at most (default 128, as the
                     component's coll_themis_chunks); auto: the planner chooses the count
                     (up to 128) and, on the paper's switch dimensions, the algorithm (hd,
                     direct or ring), as the component does with coll_themis_chunks=0
  --min-chunk-bytes B  no chunk smaller than B bytes (default 256KiB, the component's
                     coll_themis_min_chunk_bytes; 0: no floor)
  --policy P         themis (default): Algorithm 1, least-loaded dimension first;
                     baseline: every chunk takes the fixed hierarchical order
                     (Reduce-Scatter on dim 0, 1, ..., All-Gather the reverse)
  --intra I          order of ready stages on a dimension: scf (default, smallest chunk
                     first, ties to the oldest), fifo, or scf_newest (ties to the newest,
                     as the paper's reference code)
  --max-active K     stages running at once per dimension, sharing its bandwidth (default 1)
  --max-active-bytes B  bytes of stages running at once per dimension, as the component's
                     coll_themis_max_active_bytes (default 0: no bound)
  --load-model M     what the scheduler charges a dimension per stage: latency (default,
                     bandwidth time + steps x latency) or reference (bandwidth time only,
                     the paper's reference implementation)
  --bandwidth-only   set every latency to zero (the model the paper's averages come from)
  --orders N         show the dimension orders of the first N chunks (default 8)
  --timeline FILE    write an SVG timeline: one lane per dimension, one rectangle per
                     stage, coloured by chunk, Reduce-Scatter solid, All-Gather hatched
  --csv FILE         write every stage as CSV: chunk,stage,dim,phase,input_bytes,ready_us,
                     start_us,end_us (in start order)
  --measured FILE    compare with a trace of the same collective run by the component
                     (coll_themis_trace; same columns, after a call column): completion,
                     utilization and per-dimension busy time, predicted beside measured
  --call N           the call of the trace to compare (default: the last one)
  --measured-timeline FILE   the measured stages as an SVG timeline (as --timeline)

The paper's microbenchmark (--paper): All-Reduce of 100 MB, 250 MB, 500 MB and 1 GB
(decimal) with K = 1 on the six Table 2 topologies, for the paper's policies baseline
(baseline order, FIFO), themis_fifo and themis_scf (64 chunks, Table 2's algorithms), and
themis_auto (Themis+SCF, chunk count and switch algorithms chosen by the planner with the
component's defaults), under three latency models:
  bandwidth_only     no latency; scheduler load model reference (the paper's averages)
  table2_reference   Table 2 latencies; scheduler load model reference
  table2_latency     Table 2 latencies; scheduler load model latency
It prints utilization (ideal time / predicted time) per run, the Themis+SCF speedup over
the baseline, per-topology and overall averages. --csv FILE writes one row per run,
  topology,size_bytes,latency_model,policy,time_us,ideal_us,utilization
with utilization a fraction; averages are not written as rows (every column stays a plain
number or label), they are the mean of the rows.

Exit status: 0 done, 1 a file could not be written or a trace not read, 2 a bad command
line.
)";

// A bad command line: main prints it as one line and exits with status 2.
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct Options {
    bool help = false, paper = false, bandwidth_only = false;
    std::string topology; // as given: a paper name or a spec
    SimCase run;          // everything but the topology
    std::string timeline_path, csv_path, measured_path, measured_timeline_path;
    int orders = 8;
    long call = -1;              // of the measured trace; -1: the last
    std::set<std::string> given; // option names seen
};

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

int parse_int(const std::string &option, const std::string &text, int lo, int hi) {
    errno = 0;
    char *end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
        throw UsageError("--" + option + ": expected a whole number from " + std::to_string(lo) +
                         " to " + std::to_string(hi) + ", got \"" + text + "\"");
    return static_cast<int>(v);
}

// Bytes: a number and an optional unit, with or without its trailing B: K, M, G, T are
// decimal, Ki, Mi, Gi, Ti binary (64M, 1G, 100MB, 1.5GiB, 1e8).
double parse_size(const std::string &text) {
    static const std::pair<const char *, double> prefixes[] = {
        {"", 1},        {"k", 1e3},     {"m", 1e6},     {"g", 1e9},    {"t", 1e12},
        {"ki", 0x1p10}, {"mi", 0x1p20}, {"gi", 0x1p30}, {"ti", 0x1p40}};
    const std::string bad =
        "--size: expected bytes such as 64M, 1G, 100MB or 1.5GiB, got \"" + text + "\"";
    char *end = nullptr;
    const double number = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || !std::isfinite(number) || number <= 0) throw UsageError(bad);
    std::string prefix = lower(end);
    if (!prefix.empty() && prefix.back() == 'b') prefix.pop_back();
    const auto *p = std::find_if(std::begin(prefixes), std::end(prefixes),
                                 [&](const auto &x) { return prefix == x.first; });
    if (p == std::end(prefixes))
        throw UsageError(bad + " (unknown unit \"" + std::string(end) + "\")");
    const double bytes = std::round(number * p->second);
    if (bytes < 1 || bytes > 1e15)
        throw UsageError("--size: expected 1 byte to 1 PB, got \"" + text + "\"");
    return bytes;
}

template <typename T> T parse_choice(const std::string &option, const std::string &text,
                                     std::initializer_list<std::pair<const char *, T>> choices) {
    std::string valid;
    for (const auto &c : choices) {
        if (lower(text) == c.first) return c.second;
        valid += (valid.empty() ? "" : ", ") + std::string(c.first);
    }
    throw UsageError("--" + option + ": expected one of " + valid + ", got \"" + text + "\"");
}

// Every option: its name, whether it takes a value, and what it sets.
struct OptionSpec {
    const char *name;
    bool takes_value;
    std::function<void(Options &, const std::string &)> apply;
};

const std::vector<OptionSpec> &option_specs() {
    static const std::vector<OptionSpec> specs = {
        {"help", false, [](Options &o, const std::string &) { o.help = true; }},
        {"paper", false, [](Options &o, const std::string &) { o.paper = true; }},
        {"bandwidth-only", false, [](Options &o, const std::string &) { o.bandwidth_only = true; }},
        {"topology", true, [](Options &o, const std::string &v) { o.topology = v; }},
        {"size", true, [](Options &o, const std::string &v) { o.run.bytes = parse_size(v); }},
        {"chunks", true,
         [](Options &o, const std::string &v) {
             o.run.chunks = lower(v) == "auto" ? kAutoChunks : parse_int("chunks", v, 1, 1 << 20);
         }},
        {"min-chunk-bytes", true,
         [](Options &o, const std::string &v) {
             o.run.min_chunk_bytes = v == "0" ? 0 : static_cast<uint64_t>(parse_size(v));
         }},
        {"collective", true,
         [](Options &o, const std::string &v) {
             o.run.collective =
                 parse_choice<Collective>("collective", v,
                                          {{"allreduce", Collective::AllReduce},
                                           {"reduce_scatter", Collective::ReduceScatter},
                                           {"allgather", Collective::AllGather}});
         }},
        {"policy", true,
         [](Options &o, const std::string &v) {
             o.run.scheduler.policy = parse_choice<Policy>(
                 "policy", v, {{"baseline", Policy::Baseline}, {"themis", Policy::Themis}});
         }},
        {"intra", true,
         [](Options &o, const std::string &v) {
             o.run.ordering.intra =
                 parse_choice<IntraPolicy>("intra", v,
                                           {{"fifo", IntraPolicy::Fifo},
                                            {"scf", IntraPolicy::Scf},
                                            {"scf_newest", IntraPolicy::ScfNewest}});
         }},
        {"max-active", true,
         [](Options &o, const std::string &v) {
             o.run.ordering.max_active = parse_int("max-active", v, 1, 1024);
         }},
        {"max-active-bytes", true,
         [](Options &o, const std::string &v) {
             o.run.ordering.max_active_bytes = v == "0" ? 0 : parse_size(v);
         }},
        {"load-model", true,
         [](Options &o, const std::string &v) {
             o.run.scheduler.load_model = parse_choice<LoadModel>(
                 "load-model", v,
                 {{"reference", LoadModel::Reference}, {"latency", LoadModel::Latency}});
         }},
        {"orders", true,
         [](Options &o, const std::string &v) { o.orders = parse_int("orders", v, 0, 1 << 20); }},
        {"timeline", true, [](Options &o, const std::string &v) { o.timeline_path = v; }},
        {"csv", true, [](Options &o, const std::string &v) { o.csv_path = v; }},
        {"measured", true, [](Options &o, const std::string &v) { o.measured_path = v; }},
        {"call", true,
         [](Options &o, const std::string &v) { o.call = parse_int("call", v, 0, 1 << 30); }},
        {"measured-timeline", true,
         [](Options &o, const std::string &v) { o.measured_timeline_path = v; }},
    };
    return specs;
}

// Applies one "--name[=value]" argument, taking the value from the next one if needed.
void apply_option(Options &o, int argc, char **argv, int &i) {
    std::string arg = argv[i], value;
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument \"" + arg + "\"");
    std::string name = arg.substr(2);
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
        value = name.substr(eq + 1);
        name.resize(eq);
    }
    const auto &specs = option_specs();
    const auto spec = std::find_if(specs.begin(), specs.end(),
                                   [&](const OptionSpec &s) { return name == s.name; });
    if (spec == specs.end()) throw UsageError("unknown option \"--" + name + "\"");
    if (!o.given.insert(name).second) throw UsageError("--" + name + " given twice");
    if (spec->takes_value && !inline_value) {
        if (i + 1 >= argc) throw UsageError("--" + name + " needs a value");
        value = argv[++i];
    } else if (!spec->takes_value && inline_value) {
        throw UsageError("--" + name + " takes no value");
    }
    spec->apply(o, value);
}

Topology resolve_topology(const std::string &text, bool bandwidth_only) {
    Topology topo;
    if (auto paper = paper_topology(text)) {
        topo = *paper;
    } else {
        try {
            topo = parse_topology(text);
        } catch (const SpecError &e) {
            throw UsageError("--topology \"" + text + "\": " + e.what() +
                             " (or give a paper topology name, see --help)");
        }
    }
    return bandwidth_only ? topo.without_latency() : topo;
}

Options parse_args(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) apply_option(o, argc, argv, i);
    if (o.help) return o;
    if (o.paper) {
        for (const auto &name : o.given)
            if (name != "paper" && name != "csv")
                throw UsageError("--paper runs a fixed set of cases and takes only --csv, not --" +
                                 name);
        return o;
    }
    for (const char *required : {"topology", "size"})
        if (!o.given.count(required))
            throw UsageError(std::string("missing --") + required +
                             ": one run needs --topology and --size (or run --paper)");
    for (const char *needs_trace : {"call", "measured-timeline"})
        if (o.given.count(needs_trace) && !o.given.count("measured"))
            throw UsageError(std::string("--") + needs_trace + " needs --measured FILE");
    o.run.topology = resolve_topology(o.topology, o.bandwidth_only);
    return o;
}

void write_file(const std::string &path, const std::string &content) {
    std::ofstream f(path, std::ios::binary);
    f << content;
    f.close();
    if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

// ---------------------------------------------------------------------------------------
// One run: the summary

// How the network is named to the reader: as the user gave it.
std::string topology_label(const Options &o) {
    return o.topology + (o.bandwidth_only ? " (bandwidth only)" : "");
}

std::string join(const std::vector<int> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
}

void print_case(std::ostream &out, const Options &o, const SimResult &r) {
    const SimCase &c = o.run;
    out << "topology     " << topology_label(o) << ", " << c.topology.size() << " ranks\n"
        << "             " << c.topology.to_spec() << "\n"
        << "collective   " << collective_name(c.collective) << " of " << format_si(c.bytes, "B")
        << " (" << static_cast<uint64_t>(c.bytes) << " B) in " << r.schedule.size() << " chunks\n"
        << "policy       " << policy_name(c.scheduler.policy) << ", load model "
        << load_model_name(c.scheduler.load_model) << ", intra "
        << intra_policy_name(c.ordering.intra) << ", K = " << c.ordering.max_active << "\n"
        << "predicted    " << format_si(r.ordering.makespan, "s") << "\n"
        << "ideal        " << format_si(r.ideal, "s") << "\n";
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f %%", 100 * r.utilization());
    out << "utilization  " << buf << "\n\n";
}

void print_dims(std::ostream &out, const SimResult &r) {
    std::vector<int> stages(r.topology.num_dims(), 0);
    for (const StageRun &run : r.ordering.runs) ++stages[run.dim];
    char buf[200];
    snprintf(buf, sizeof buf, "%-4s %6s  %-7s %13s %10s %7s %12s %7s\n", "dim", "peers", "alg",
             "bandwidth", "latency", "stages", "busy", "busy %");
    out << buf;
    for (int d = 0; d < r.topology.num_dims(); ++d) {
        const Dimension &dim = r.topology.dim(d);
        const double busy = r.ordering.busy[d];
        const double fraction = r.ordering.makespan > 0 ? busy / r.ordering.makespan : 0;
        snprintf(buf, sizeof buf, "%-4d %6d  %-7s %13s %10s %7d %12s %7.2f\n", d, dim.peers,
                 algorithm_name(dim.algorithm), format_si(dim.bandwidth, "B/s").c_str(),
                 format_si(dim.latency, "s").c_str(), stages[d], format_si(busy, "s").c_str(),
                 100 * fraction);
        out << buf;
    }
    out << "\n";
}

void print_orders(std::ostream &out, const SimResult &r, int count) {
    const size_t shown = std::min(r.schedule.size(), static_cast<size_t>(count));
    if (shown == 0 || r.ordering.runs.empty()) return; // no chunk has a stage to show
    out << "dimension orders of the first " << shown << " of " << r.schedule.size() << " chunks:\n";
    for (size_t k = 0; k < shown; ++k) {
        const ChunkSchedule &chunk = r.schedule[k];
        out << "  chunk " << k << " (" << format_si(chunk.bytes, "B") << "):";
        const auto rs = rs_order(chunk), ag = ag_order(chunk);
        if (!rs.empty()) out << " RS " << join(rs);
        if (!ag.empty()) out << " AG " << join(ag);
        out << "\n";
    }
}

std::string stages_csv(const SimResult &r) {
    std::ostringstream out;
    write_stage_csv_header(out, false);
    write_stage_csv(out, r.schedule, r.ordering.runs);
    return out.str();
}

// The trace's runs as the result of the same case: every stage must be one of the
// plan's, on the dimension the plan gives it (else the trace is of another collective).
SimResult measured_result(const Options &o, const SimResult &predicted) {
    std::ifstream in(o.measured_path);
    if (!in)
        throw std::runtime_error("cannot read " + o.measured_path + ": " + std::strerror(errno));
    SimResult m = predicted;
    m.ordering.runs = read_stage_csv(in, o.call);
    size_t stages = 0;
    for (const ChunkSchedule &c : predicted.schedule) stages += c.stages.size();
    for (const StageRun &run : m.ordering.runs) {
        const bool known = run.ref.chunk >= 0 && run.ref.chunk < int(predicted.schedule.size()) &&
                           run.ref.stage >= 0 &&
                           run.ref.stage < int(predicted.schedule[run.ref.chunk].stages.size());
        if (!known || predicted.schedule[run.ref.chunk].stages[run.ref.stage].dim != run.dim)
            throw std::runtime_error(o.measured_path + " is not a trace of this case: chunk " +
                                     std::to_string(run.ref.chunk) + " stage " +
                                     std::to_string(run.ref.stage) + " on dim " +
                                     std::to_string(run.dim) + " is not in its plan");
    }
    if (m.ordering.runs.size() != stages)
        throw std::runtime_error(o.measured_path + " holds " +
                                 std::to_string(m.ordering.runs.size()) + " stages, the plan " +
                                 std::to_string(stages));
    m.ordering.busy = busy_per_dim(m.ordering.runs, o.run.topology.num_dims());
    m.ordering.makespan = makespan(m.ordering.runs);
    return m;
}

// Predicted beside measured: where the measured run lost time. "rate while busy" is
// the predicted busy time over the measured one, times the nominal bandwidth: what the
// link delivered while a stage was running on it.
void print_comparison(std::ostream &out, const Options &o, const SimResult &p, const SimResult &m) {
    char buf[200];
    out << "measured     " << o.measured_path
        << (o.call >= 0 ? ", call " + std::to_string(o.call) : std::string(", last call")) << "\n";
    snprintf(buf, sizeof buf, "%-13s %12s %12s\n", "", "predicted", "measured");
    out << buf;
    snprintf(buf, sizeof buf, "%-13s %12s %12s\n", "completion",
             format_si(p.ordering.makespan, "s").c_str(),
             format_si(m.ordering.makespan, "s").c_str());
    out << buf;
    snprintf(buf, sizeof buf, "%-13s %10.2f %% %10.2f %%\n\n", "utilization", 100 * p.utilization(),
             100 * m.utilization());
    out << buf;
    snprintf(buf, sizeof buf, "%-4s %12s %12s %8s %8s %14s %12s\n", "dim", "busy pred", "busy meas",
             "% pred", "% meas", "rate busy", "idle meas");
    out << buf;
    for (int d = 0; d < o.run.topology.num_dims(); ++d) {
        const double pb = p.ordering.busy[d], mb = m.ordering.busy[d];
        const auto share = [](double busy, const SimResult &r) {
            return r.ordering.makespan > 0 ? 100 * busy / r.ordering.makespan : 0.0;
        };
        snprintf(buf, sizeof buf, "%-4d %12s %12s %8.2f %8.2f %14s %12s\n", d,
                 format_si(pb, "s").c_str(), format_si(mb, "s").c_str(), share(pb, p), share(mb, m),
                 mb > 0 ? format_si(pb / mb * o.run.topology.dim(d).bandwidth, "B/s").c_str() : "-",
                 format_si(m.ordering.makespan - mb, "s").c_str());
        out << buf;
    }
    out << "\n";
}

int run_one(const Options &o) {
    const SimResult r = simulate(o.run);
    print_case(std::cout, o, r);
    print_dims(std::cout, r);
    print_orders(std::cout, r, o.orders);
    if (!o.timeline_path.empty())
        write_file(o.timeline_path, timeline_svg(o.run, r, topology_label(o)));
    if (!o.csv_path.empty()) write_file(o.csv_path, stages_csv(r));
    if (!o.measured_path.empty()) {
        const SimResult m = measured_result(o, r);
        print_comparison(std::cout, o, r, m);
        if (!o.measured_timeline_path.empty())
            write_file(o.measured_timeline_path,
                       timeline_svg(o.run, m, topology_label(o), "measured"));
    }
    return 0;
}

int run_paper_benchmark(const Options &o) {
    const std::vector<PaperRun> runs = run_paper();
    print_paper(std::cout, runs);
    if (!o.csv_path.empty()) {
        std::ostringstream csv;
        write_paper_csv(csv, runs);
        write_file(o.csv_path, csv.str());
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    try {
        const Options o = parse_args(argc, argv);
        if (o.help) {
            std::cout << kHelp;
            return 0;
        }
        return o.paper ? run_paper_benchmark(o) : run_one(o);
    } catch (const UsageError &e) {
        std::cerr << "themis-sim: " << e.what() << "\n";
        return 2;
    } catch (const std::exception &e) {
        std::cerr << "themis-sim: " << e.what() << "\n";
        return 1;
    }
}
