// sim_options: themis-sim's command line (see sim_options.h).
#include "sim_options.h"

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

namespace themis::sim {

namespace {

// The help text, {field} standing for a default that help_text() fills in.
const char kHelpTemplate[] =
    R"(themis-sim: predict a hierarchical collective under the Themis scheduler.

Usage:
  themis-sim --topology T --size S [options]   simulate one collective
  themis-sim --paper [--csv FILE]              the Themis paper's microbenchmark
  themis-sim --help

One run:
  --topology T       a dimension spec,
                     PEERSxPEERSx...[:bw=LIST][:lat=LIST][:alg=LIST][:fill=LIST],
                     e.g. "2x4:bw=200Gbps,100Gbps:lat=1us,5us:alg=ring,hd" (a LIST holds one
                     value per dimension or one for all; bw units bps..Tbps or B/s..TB/s,
                     none = Gbps; lat units ns, us, ms, s, none = us; alg ring, hd, direct,
                     each followed by any alternatives the planner may run instead after
                     '/', e.g. ring/hd, as the component's verbose `selected` line prints
                     them; fill the dimension's fill curve, see --fill), or a topology of the
                     paper's Table 2: 2D-SW_SW, 3D-SW_SW_SW_homo, 3D-SW_SW_SW_hetero,
                     3D-FC_Ring_SW, 4D-Ring_SW_SW_SW, 4D-Ring_FC_Ring_SW
  --fill LIST        the fill curves, as the spec's fill= (also over a paper topology): per
                     dimension the fraction of its bandwidth that 1, 2, ... stages in flight
                     reach together, separated by '/', the last holding past its end, e.g.
                     0.56/0.78/0.94 (the emulated network's); one curve for all dimensions
                     or one per dimension, "1" a full link (default: 1, one stage fills it,
                     as the component without a measured curve)
  --size S           bytes: All-Reduce, Bcast and Reduce the vector, Reduce-Scatter each rank's input (all
                     blocks), All-Gather each rank's output. Suffixes K, M, G, T (or KB, MB,
                     ...) are decimal, KiB, MiB, GiB, TiB binary: 64M, 1G, 100MB, 1.5GiB, 1e8
  --collective C     allreduce (default), reduce_scatter, allgather, bcast, reduce
Defaults are the component's (one table: src/settings.h), "as" the parameter they mirror.
  --chunks N|auto    chunks the collective is split into, at most
                     (default {chunks}, as coll_themis_chunks); auto (or 0): the planner
                     chooses the count (up to {auto_chunks}) and, on dimensions with
                     alternatives (alg=ring/hd; the paper's switches: hd, direct or ring),
                     the algorithm, as the component does with coll_themis_chunks=0
  --min-chunk-bytes B  no chunk smaller than B bytes; 0: no floor
                     (default {min_chunk_bytes}, as coll_themis_min_chunk_bytes)
  --policy P         the dimension order of a chunk: themis = Algorithm 1, least-loaded
                     dimension first; baseline = every chunk takes the fixed hierarchical
                     order (Reduce-Scatter on dim 0, 1, ..., All-Gather the reverse)
                     (default {policy}, as coll_themis_policy)
  --intra I          order of ready stages on a dimension: scf = smallest chunk first, ties
                     to the oldest; fifo; scf_newest = ties to the newest, as the paper's
                     reference code (default {intra}, as coll_themis_intra_policy)
  --max-active K     stages running at once per dimension, sharing its bandwidth, {max_active_range}
                     (default {max_active}, as coll_themis_max_active)
  --max-active-bytes B  bytes of stages running at once per dimension; 0: no bound
                     (default {max_active_bytes}, as coll_themis_max_active_bytes)
  --load-model M     what the scheduler charges a dimension per stage: latency = bandwidth
                     time + steps x latency; reference = bandwidth time only, the paper's
                     reference implementation (default {load_model}, as coll_themis_load_model)
  --bandwidth-only   set every latency to zero (the model the paper's averages come from)
  --calls N          N calls of the collective started back to back, as nonblocking calls
                     in flight together (default 1): each planned from the load the one
                     before left, run as the component's engine shares the dimensions (a
                     later call starts stages while the earlier ones wait for their chunks);
                     utilization counts all N. Chunks are numbered across the calls
  --carry-load B     true or false: plan each of the --calls from the load the one before
                     left (default {carry_load}, as coll_themis_carry_load)
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

// Bytes as the help text shows them: the count, then in binary units where they fit:
// "262144 (256KiB)", "0".
std::string byte_text(uint64_t bytes) {
    const std::string count = std::to_string(bytes);
    if (bytes != 0 && bytes % (1u << 20) == 0)
        return count + " (" + std::to_string(bytes >> 20) + "MiB)";
    if (bytes != 0 && bytes % (1u << 10) == 0)
        return count + " (" + std::to_string(bytes >> 10) + "KiB)";
    return count;
}

} // namespace

std::string help_text() {
    const SimCase defaults;
    const std::pair<const char *, std::string> fields[] = {
        {"{chunks}", std::to_string(defaults.chunks)},
        {"{auto_chunks}", std::to_string(kMaxAutoChunks)},
        {"{min_chunk_bytes}", byte_text(defaults.min_chunk_bytes)},
        {"{policy}", policy_name(defaults.scheduler.policy)},
        {"{intra}", intra_policy_name(defaults.ordering.intra)},
        {"{max_active}", std::to_string(defaults.ordering.max_active)},
        {"{max_active_range}",
         std::to_string(THEMIS_MAX_ACTIVE_MIN) + " to " + std::to_string(THEMIS_MAX_ACTIVE_MAX)},
        {"{max_active_bytes}",
         byte_text(static_cast<uint64_t>(defaults.ordering.max_active_bytes))},
        {"{load_model}", load_model_name(defaults.scheduler.load_model)},
        {"{carry_load}", defaults.carry_load ? "true" : "false"}};
    std::string text = kHelpTemplate;
    for (const auto &[field, value] : fields)
        for (size_t at = text.find(field); at != std::string::npos; at = text.find(field, at))
            text.replace(at, std::strlen(field), value);
    return text;
}

namespace {

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

// The position of `text` (in any case) among `names`; a UsageError listing them if none.
size_t parse_name(const std::string &option, const std::string &text,
                  const std::vector<const char *> &names) {
    std::string valid;
    for (size_t k = 0; k < names.size(); ++k) {
        if (lower(text) == names[k]) return k;
        valid += (valid.empty() ? "" : ", ") + std::string(names[k]);
    }
    throw UsageError("--" + option + ": expected one of " + valid + ", got \"" + text + "\"");
}

template <typename T> T parse_choice(const std::string &option, const std::string &text,
                                     std::initializer_list<std::pair<const char *, T>> choices) {
    std::vector<const char *> names;
    for (const auto &c : choices) names.push_back(c.first);
    return (choices.begin() + parse_name(option, text, names))->second;
}

// A choice shared with the component (settings.h), by the names it has there.
template <typename Enum, size_t N> Enum parse_setting(const std::string &option,
                                                      const std::string &text,
                                                      const SettingChoice (&choices)[N]) {
    std::vector<const char *> names;
    for (const SettingChoice &c : choices) names.push_back(c.name);
    return static_cast<Enum>(choices[parse_name(option, text, names)].value);
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
        {"fill", true, [](Options &o, const std::string &v) { o.fill = v; }},
        {"size", true, [](Options &o, const std::string &v) { o.run.bytes = parse_size(v); }},
        {"chunks", true,
         [](Options &o, const std::string &v) {
             o.run.chunks =
                 lower(v) == "auto" ? kAutoChunks : parse_int("chunks", v, 0, THEMIS_CHUNKS_MAX);
         }},
        {"min-chunk-bytes", true,
         [](Options &o, const std::string &v) {
             o.run.min_chunk_bytes = v == "0" ? 0 : static_cast<uint64_t>(parse_size(v));
         }},
        {"collective", true,
         [](Options &o, const std::string &v) {
             std::vector<const char *> names;
             for (const CollectiveInfo &row : collectives()) names.push_back(row.name);
             o.run.collective = collectives()[parse_name("collective", v, names)].id;
         }},
        {"policy", true,
         [](Options &o, const std::string &v) {
             o.run.scheduler.policy = parse_setting<Policy>("policy", v, kPolicyChoices);
         }},
        {"intra", true,
         [](Options &o, const std::string &v) {
             o.run.ordering.intra = parse_setting<IntraPolicy>("intra", v, kIntraChoices);
         }},
        {"max-active", true,
         [](Options &o, const std::string &v) {
             o.run.ordering.max_active =
                 parse_int("max-active", v, THEMIS_MAX_ACTIVE_MIN, THEMIS_MAX_ACTIVE_MAX);
         }},
        {"max-active-bytes", true,
         [](Options &o, const std::string &v) {
             o.run.ordering.max_active_bytes = v == "0" ? 0 : parse_size(v);
         }},
        {"load-model", true,
         [](Options &o, const std::string &v) {
             o.run.scheduler.load_model =
                 parse_setting<LoadModel>("load-model", v, kLoadModelChoices);
         }},
        {"calls", true,
         [](Options &o, const std::string &v) { o.run.calls = parse_int("calls", v, 1, 4096); }},
        {"carry-load", true,
         [](Options &o, const std::string &v) {
             o.run.carry_load =
                 parse_choice<bool>("carry-load", v, {{"true", true}, {"false", false}});
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

// Whether a spec has a fill= section.
bool spec_gives_fill(const std::string &spec) {
    const std::vector<std::string> sections = split(spec, ':');
    for (size_t i = 1; i < sections.size(); ++i) {
        const std::string section = lower(sections[i]);
        const size_t key = section.find_first_not_of(" \t");
        if (key != std::string::npos && section.compare(key, 4, "fill") == 0 &&
            section.find_first_not_of(" \t", key + 4) == section.find('='))
            return true;
    }
    return false;
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

// `topo` with the fill curves of `list` (as the spec's fill=).
Topology with_fill(const Topology &topo, const std::string &list) {
    std::string sizes;
    for (int d = 0; d < topo.num_dims(); ++d)
        sizes += (d ? "x" : "") + std::to_string(topo.dim(d).peers);
    Topology curves;
    try {
        curves = parse_topology(sizes + ":fill=" + list);
    } catch (const SpecError &e) {
        throw UsageError("--fill \"" + list + "\": " + e.what());
    }
    std::vector<Dimension> dims = topo.dims();
    for (int d = 0; d < topo.num_dims(); ++d) dims[d].fill = curves.dim(d).fill;
    return Topology(dims);
}

} // namespace

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
    if (o.given.count("fill")) {
        if (spec_gives_fill(o.topology))
            throw UsageError("--fill: the --topology spec gives fill= already; give one of them");
        o.run.topology = with_fill(o.run.topology, o.fill);
    }
    return o;
}

} // namespace themis::sim
