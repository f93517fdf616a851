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
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim_options.h"
#include "sim_paper.h"
#include "timeline_svg.h"
#include "trace.h"

namespace {

using namespace themis;
using namespace themis::sim;

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
        << "collective   " << (c.calls > 1 ? std::to_string(c.calls) + " x " : "")
        << collective_name(c.collective) << " of " << format_si(c.bytes, "B") << " ("
        << static_cast<uint64_t>(c.bytes) << " B) in " << r.schedule.size() << " chunks"
        << (c.calls > 1 ? std::string(", started back to back, load ") +
                              (c.carry_load ? "carried" : "not carried")
                        : std::string())
        << "\n"
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
    for (int d = 0; d < r.topology.num_dims() && d < int(r.ordering.dim_order.size()); ++d)
        stages[d] = static_cast<int>(r.ordering.dim_order[d].size());
    // The fill curves' column only where one is known.
    bool fill = false;
    for (const Dimension &dim : r.topology.dims()) fill |= !dim.fill.empty();
    char buf[200];
    snprintf(buf, sizeof buf, "%-4s %6s  %-7s %13s %10s %7s %12s %7s%s\n", "dim", "peers", "alg",
             "bandwidth", "latency", "stages", "busy", "busy %", fill ? "  fill" : "");
    out << buf;
    for (int d = 0; d < r.topology.num_dims(); ++d) {
        const Dimension &dim = r.topology.dim(d);
        const double busy = r.ordering.busy[d];
        const double fraction = r.ordering.makespan > 0 ? busy / r.ordering.makespan : 0;
        snprintf(buf, sizeof buf, "%-4d %6d  %-7s %13s %10s %7d %12s %7.2f", d, dim.peers,
                 algorithm_name(dim.algorithm), format_si(dim.bandwidth, "B/s").c_str(),
                 format_si(dim.latency, "s").c_str(), stages[d], format_si(busy, "s").c_str(),
                 100 * fraction);
        out << buf << (fill ? "  " + fill_text(dim.fill) : std::string()) << "\n";
    }
    out << "\n";
}

// A rooted chunk's tree, cast by cast in its stages' order: "d1 5>4,6,7".
std::string describe_tree(const ChunkSchedule &chunk) {
    std::string text;
    for (const Stage &s : chunk.stages) {
        const GroupCast &cast = chunk.tree[size_t(s.cast)];
        text += " d" + std::to_string(cast.dim) + " " + std::to_string(cast.source) + ">" +
                join(cast.targets);
    }
    return text;
}

void print_orders(std::ostream &out, const SimResult &r, int count) {
    const size_t shown = std::min(r.schedule.size(), static_cast<size_t>(count));
    if (shown == 0 || stage_count(r.schedule) == 0) return; // no chunk has a stage to show
    const bool trees = !r.schedule.front().tree.empty();
    out << (trees ? "trees" : "dimension orders") << " of the first " << shown << " of "
        << r.schedule.size() << " chunks:\n";
    for (size_t k = 0; k < shown; ++k) {
        const ChunkSchedule &chunk = r.schedule[k];
        out << "  chunk " << k << " (" << format_si(chunk.bytes, "B") << "):";
        if (trees) {
            out << describe_tree(chunk) << "\n";
            continue;
        }
        const auto rs = narrowing_order(chunk), ag = widening_order(chunk);
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
    const size_t stages = stage_count(predicted.schedule);
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
            std::cout << help_text();
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
