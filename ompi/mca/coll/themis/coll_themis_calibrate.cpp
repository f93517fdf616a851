// coll_themis_calibrate.cpp: measured, cached or given rates (see coll_themis_calibrate.h).
#include "coll_themis_calibrate.h"
#include "coll_themis_params.h"
#include "coll_themis_test_hooks.h"

#include <mutex>

#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "calibration_file.h"
#include "ompi/op/op.h"
#include "opal/util/output.h"
#include "ompi/proc/proc.h"

namespace themis {

namespace {

// Layouts this process calibrated, by the processes at each position and the transport.
ProcessMemo<std::vector<DimensionRates>> calibrated_layouts;

// The dimensions whose rates are worth measuring: those with peers, when two or more of
// them are left to balance and the spec did not give both numbers.
std::vector<int> dimensions_to_measure(const Topology &topo, bool bw_given, bool lat_given) {
    std::vector<int> dims;
    for (int d = 0; d < topo.num_dims(); ++d)
        if (topo.dim(d).peers > 1) dims.push_back(d);
    if (dims.size() < 2 || (bw_given && lat_given)) dims.clear();
    return dims;
}

std::vector<DimensionRates> rates_of(const Topology &topo) {
    std::vector<DimensionRates> rates(topo.num_dims());
    for (int d = 0; d < topo.num_dims(); ++d) {
        rates[d].bandwidth = rates[d].bandwidth_alone = topo.dim(d).bandwidth;
        rates[d].latency = topo.dim(d).latency;
        rates[d].fill = topo.dim(d).fill;
    }
    return rates;
}

// The rates the file keeps for `key`, empty when none.
std::vector<DimensionRates> rates_in_file(const Topology &topo, const std::string &key) {
    const std::optional<Topology> cached = cached_topology(read_kept_entries(), key, topo);
    return cached ? rates_of(*cached) : std::vector<DimensionRates>();
}

void store_in_file(ompi_communicator_t *comm, const Topology &measured, const std::string &key,
                   std::string &note) {
    if (!writes_for_node(comm)) return;
    try {
        write_calibration_entry(calibration_file(), key, measured);
    } catch (const CalibrationFileError &e) {
        note = e.what();
        report_calibration_file_problem(note);
    }
}

} // namespace

namespace {

// Said once per process, whatever the file (the threads of one process set communicators up
// at once).
void show_file_problem(const std::string &path, const std::string &what) {
    static std::once_flag once;
    std::call_once(
        once, [&] { mca_coll_themis_show_help("calibration-file", path.c_str(), what.c_str()); });
}

} // namespace

const std::string &calibration_file() {
    static const std::string path = [] {
        const std::string given = params().calibration_file ? params().calibration_file : "";
        if (given.empty() || given == "none") return std::string();
        if (given != "auto") return given;
        const std::string cache = default_cache_path(user_dirs().xdg_cache_home, user_dirs().home);
        if (cache.empty()) {
            opal_output_verbose(1, params().output,
                                "coll:themis: no calibration file: neither XDG_CACHE_HOME nor "
                                "HOME is an absolute path (coll_themis_calibration_file auto)");
            return std::string();
        }
        try {
            make_parent_directories(cache);
        } catch (const CalibrationFileError &e) {
            show_file_problem(cache, e.what());
            return std::string();
        }
        return cache;
    }();
    return path;
}

CalibrationEntries read_kept_entries() {
    std::vector<std::string> damaged;
    try {
        CalibrationEntries entries = read_calibration_file(calibration_file(), &damaged);
        if (!damaged.empty()) {
            const size_t more = damaged.size() - 1;
            report_calibration_file_problem(
                damaged.front() +
                (more ? " (and " + std::to_string(more) + " more lines)" : std::string()) +
                ": what it kept there is measured again");
        }
        return entries;
    } catch (const CalibrationFileError &e) {
        report_calibration_file_problem(e.what());
        return CalibrationEntries();
    }
}

void report_calibration_file_problem(const std::string &what) {
    show_file_problem(calibration_file(), what);
}

bool writes_for_node(ompi_communicator_t *comm) {
    const int me = ompi_comm_rank(comm);
    for (int r = 0; r < me; ++r)
        if (OPAL_PROC_ON_LOCAL_NODE(ompi_comm_peer_lookup(comm, r)->super.proc_flags)) return false;
    return true;
}

std::string process_key(ompi_communicator_t *comm, const RankLayout &layout,
                        const std::string &transport_name) {
    std::ostringstream key;
    key << transport_name;
    for (const Dimension &d : layout.topology.dims())
        key << ' ' << d.peers << algorithm_name(d.algorithm);
    for (int rank : layout.rank_at) {
        const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
        key << ' ' << proc->super.proc_name.jobid << ':' << proc->super.proc_name.vpid;
    }
    return key.str();
}

RatesQuestion::RatesQuestion(ompi_communicator_t *comm, const RankLayout &layout,
                             const std::string &transport_name,
                             const std::vector<std::string> &host_at_position)
    : comm_(comm), layout_(layout), transport_name_(transport_name),
      bw_given_(spec_gives(params().dims, "bw")), lat_given_(spec_gives(params().dims, "lat")),
      fill_given_(spec_gives(params().dims, "fill")) {
    const Topology &given = layout.topology;
    measured_ = dimensions_to_measure(given, bw_given_, lat_given_);
    if (measured_.empty() || params().calibration_seconds <= 0) {
        measured_.clear();
        return;
    }
    // Where the rates come from: this process's memory, the file, or a measurement.
    memo_key_ = process_key(comm, layout, transport_name);
    known_ = calibrated_layouts.find(memo_key_);
    // Rates over one transport say nothing of another: the file's key names it.
    if (!calibration_file().empty())
        file_key_ = calibration_key(given, host_at_position) + "-" + transport_name;
    if (known_.empty() && !file_key_.empty()) known_ = rates_in_file(given, file_key_);
}

void RatesQuestion::ask(Agreement &agreement) {
    const Topology known =
        with_measured_rates(layout_.topology, known_, bw_given_, lat_given_, fill_given_);
    same_needed_ = agreement.same(measured_.empty() ? 0 : 1);
    same_known_ = agreement.same(known_.empty() ? 0 : known.fingerprint());
    all_known_ = agreement.all(!known_.empty());
}

CalibratedTopology RatesQuestion::settle_alone(mca_coll_themis_module_t *m, int position,
                                               Transport &transport, Memory *buffers) {
    Agreement agreement;
    ask(agreement);
    agreement.run(m);
    return settle(m, agreement, position, transport, buffers);
}

CalibratedTopology RatesQuestion::settle(mca_coll_themis_module_t *m, const Agreement &agreement,
                                         int position, Transport &transport, Memory *buffers) {
    const Topology &given = layout_.topology;
    CalibratedTopology out;
    out.topology = given;
    out.note = note_;
    const auto sources = [&](std::optional<RateSource> found) {
        RateSources s =
            rate_sources(given.num_dims(), measured_, bw_given_, lat_given_, fill_given_, found);
        out.bandwidth_source = std::move(s.bandwidth);
        out.latency_source = std::move(s.latency);
        out.fill_source = std::move(s.fill);
    };
    sources(std::nullopt);
    // Nothing to measure, or ranks that disagree on whether to: the spec's numbers everywhere.
    if (measured_.empty() || !agreement.holds(same_needed_)) return out;

    RateSource source = RateSource::Cached;
    std::vector<DimensionRates> rates;
    if (agreement.holds(all_known_) && agreement.holds(same_known_)) rates = known_;
    if (rates.empty()) {
        source = RateSource::Measured;
        CalibrationSettings settings;
        settings.budget_seconds = params().calibration_seconds;
        // The fill curve, unless the spec gives it: up to the engine's K stages in flight,
        // each about the smallest chunk (a stage's size).
        settings.fill_in_flight = fill_given_ ? 0 : params().max_active;
        if (params().min_chunk_bytes > 0) settings.fill_bytes = params().min_chunk_bytes;
        const CalibrationResult result = calibrate(
            given, position, transport, measured_, [&](std::vector<double> &v) { agree_max(m, v); },
            settings, buffers);
        out.seconds = result.seconds;
        out.connect_seconds = result.connect_seconds;
        out.bytes_sent = result.bytes_sent;
        out.joint_slowdown = result.joint_slowdown;
        out.shared = result.shared;
        out.joint_phases = result.joint_phases;
        // Every rank holds the same agreed numbers, but tests make a measurement fail on
        // some ranks only (THEMIS_TEST_CALIBRATION_FAILS): all keep the defaults together.
        if (!all_agree(m, plausible_rates(result.dims, measured_) &&
                              !test_hooks().calibration_fails)) {
            out.note = "calibration measured no usable rate: the defaults are kept";
            if (mca_coll_themis_first_time("calibration-failed") && mca_coll_themis_first_process())
                mca_coll_themis_show_help("calibration-failed", given.to_spec().c_str());
            return out;
        }
        rates = result.dims;
    }
    calibrated_layouts.store(memo_key_, rates);
    out.kept = {memo_key_, file_key_};
    out.topology = with_measured_rates(given, rates, bw_given_, lat_given_, fill_given_);
    sources(source);
    if (!file_key_.empty() && source == RateSource::Measured)
        store_in_file(comm_, out.topology, file_key_, out.note);
    return out;
}

void keep_revised_rates(ompi_communicator_t *comm, const RatesKept &kept, const Topology &revised) {
    if (kept.memo_key.empty()) return;
    calibrated_layouts.store(kept.memo_key, rates_of(revised));
    std::string note;
    if (!kept.file_key.empty()) store_in_file(comm, revised, kept.file_key, note);
}

void describe_rates(const CalibratedTopology &t, LogEvent &event) {
    std::string bw, lat, fill;
    for (int d = 0; d < t.topology.num_dims(); ++d) {
        bw += std::string(d ? "," : "") + rate_source_name(t.bandwidth_source[d]);
        lat += std::string(d ? "," : "") + rate_source_name(t.latency_source[d]);
        fill += std::string(d ? "," : "") + rate_source_name(t.fill_source[d]);
    }
    event.add("dims", t.topology.to_spec())
        .add("bw_source", bw)
        .add("lat_source", lat)
        .add("fill_source", fill);
}

} // namespace themis
