// trace: stage timings as CSV (see trace.h).
#include "trace.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

namespace themis {

void write_stage_csv_header(std::ostream &out, bool with_call) {
    out << (with_call ? "call," : "")
        << "chunk,stage,dim,phase,input_bytes,ready_us,start_us,end_us\n";
}

void write_stage_csv(std::ostream &out, const std::vector<ChunkSchedule> &schedule,
                     std::vector<StageRun> runs, long call) {
    std::stable_sort(runs.begin(), runs.end(),
                     [](const StageRun &a, const StageRun &b) { return a.start < b.start; });
    char buf[256];
    for (const StageRun &run : runs) {
        const Stage &s = schedule.at(run.ref.chunk).stages.at(run.ref.stage);
        if (call >= 0) out << call << ',';
        snprintf(buf, sizeof buf, "%d,%d,%d,%s,%.3f,%.6f,%.6f,%.6f\n", run.ref.chunk, run.ref.stage,
                 run.dim, phase_name(s.phase), s.input_bytes, run.ready * 1e6, run.start * 1e6,
                 run.end * 1e6);
        out << buf;
    }
}

namespace {

std::vector<std::string> split_fields(const std::string &line) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, ',');) fields.push_back(f);
    return fields;
}

// One row: fields from `first` on are chunk..end_us.
StageRun parse_run(const std::vector<std::string> &f, size_t first) {
    StageRun run;
    run.ref.chunk = std::stoi(f.at(first));
    run.ref.stage = std::stoi(f.at(first + 1));
    run.dim = std::stoi(f.at(first + 2));
    run.ready = std::stod(f.at(first + 5)) * 1e-6;
    run.start = std::stod(f.at(first + 6)) * 1e-6;
    run.end = std::stod(f.at(first + 7)) * 1e-6;
    return run;
}

} // namespace

std::vector<StageRun> read_stage_csv(std::istream &in, long call) {
    std::string line;
    if (!std::getline(in, line)) throw std::runtime_error("empty stage CSV");
    const bool with_call = line.compare(0, 5, "call,") == 0;
    if (line.find("chunk,stage,dim,phase,input_bytes,ready_us,start_us,end_us") ==
        std::string::npos)
        throw std::runtime_error("not a stage CSV (header \"" + line + "\")");
    const size_t first = with_call ? 1 : 0;
    std::vector<StageRun> runs;
    long current = -1;
    for (int number = 2; std::getline(in, line); ++number) {
        if (line.empty()) continue;
        const std::vector<std::string> f = split_fields(line);
        try {
            if (f.size() != first + 8) throw std::invalid_argument("field count");
            const long row_call = with_call ? std::stol(f[0]) : 0;
            if (call >= 0 && row_call != call) continue;
            if (call < 0 && row_call != current) {
                runs.clear(); // a later call: only the last one is kept
                current = row_call;
            }
            runs.push_back(parse_run(f, first));
        } catch (const std::exception &) {
            throw std::runtime_error("stage CSV line " + std::to_string(number) +
                                     " is malformed: \"" + line + "\"");
        }
    }
    if (runs.empty())
        throw std::runtime_error("stage CSV holds no stage of call " + std::to_string(call));
    return runs;
}

std::vector<double> busy_per_dim(const std::vector<StageRun> &runs, int num_dims) {
    std::vector<double> busy(num_dims, 0.0);
    for (int d = 0; d < num_dims; ++d) {
        std::vector<std::pair<double, double>> spans;
        for (const StageRun &r : runs)
            if (r.dim == d) spans.emplace_back(r.start, r.end);
        std::sort(spans.begin(), spans.end());
        double covered_to = -1e300;
        for (const auto &[start, end] : spans) {
            // Overlapping stages (K > 1) count once: only the part past what is covered.
            const double from = std::max(start, covered_to);
            if (end > from) busy[d] += end - from;
            covered_to = std::max(covered_to, end);
        }
    }
    return busy;
}

double makespan(const std::vector<StageRun> &runs) {
    double end = 0;
    for (const StageRun &r : runs) end = std::max(end, r.end);
    return end;
}

} // namespace themis
