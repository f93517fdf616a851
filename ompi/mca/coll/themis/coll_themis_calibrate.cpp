// coll_themis_calibrate.cpp: measured, cached or given rates (see coll_themis_calibrate.h).
#include "coll_themis_calibrate.h"
#include "coll_themis_params.h"
#include "coll_themis_setup_task.h"
#include "coll_themis_test_hooks.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "calibration_file.h"
#include "ompi/op/op.h"
#include "ompi/proc/proc.h"

namespace themis {

namespace {

// True on every rank when every rank holds the same `values`.
bool all_hold(mca_coll_themis_module_t *m, ompi_communicator_t *comm, std::vector<double> values) {
    const size_t n = values.size();
    for (size_t i = 0; i < n; ++i) values.push_back(-values[i]);
    agree_max(m, comm, values);
    for (size_t i = 0; i < n; ++i)
        if (values[i] != -values[n + i]) return false;
    return true;
}

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

bool plausible(const std::vector<DimensionRates> &rates, const std::vector<int> &measured) {
    for (int d : measured)
        if (!(std::isfinite(rates[d].bandwidth) && rates[d].bandwidth > 0 &&
              std::isfinite(rates[d].latency) && rates[d].latency >= 0))
            return false;
    for (int d : measured)
        for (double f : rates[d].fill)
            if (!(f > 0 && f <= 1)) return false;
    return true;
}

// The file's rates when every rank read the same ones for this layout; empty otherwise.
std::vector<DimensionRates> rates_from_file(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                            const Topology &topo, const std::string &key,
                                            std::string &note) {
    std::optional<Topology> cached;
    try {
        cached = cached_topology(read_calibration_file(params().calibration_file), key, topo);
    } catch (const CalibrationFileError &e) {
        note = e.what();
        report_calibration_file_problem(note);
    }
    const uint64_t print = cached ? cached->fingerprint() : 0;
    if (!all_hold(m, comm, {double(print >> 32), double(print & 0xffffffffu)}) || !cached)
        return {};
    return rates_of(*cached);
}

void store_in_file(ompi_communicator_t *comm, const Topology &measured, const std::string &key,
                   std::string &note) {
    if (!writes_for_node(comm)) return;
    try {
        write_calibration_entry(params().calibration_file, key, measured);
    } catch (const CalibrationFileError &e) {
        note = e.what();
        report_calibration_file_problem(note);
    }
}

} // namespace

void report_calibration_file_problem(const std::string &what) {
    static bool shown = false;
    if (!shown)
        mca_coll_themis_show_help("calibration-file", params().calibration_file, what.c_str());
    shown = true;
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

void agree_max(mca_coll_themis_module_t *m, ompi_communicator_t *, std::vector<double> &values) {
    std::vector<double> all(values.size());
    setup_allreduce(m, values.data(), all.data(), int(values.size()), &ompi_mpi_double.dt,
                    &ompi_mpi_op_max.op);
    values = all;
}

CalibratedTopology calibrated_topology(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                       const RankLayout &layout, int position, Transport &transport,
                                       Memory *buffers, const std::string &transport_name,
                                       const std::vector<std::string> &host_at_position) {
    const Topology &given = layout.topology;
    const bool bw_given = spec_gives(params().dims, "bw"),
               lat_given = spec_gives(params().dims, "lat"),
               fill_given = spec_gives(params().dims, "fill");
    CalibratedTopology out;
    out.topology = given;
    out.bandwidth_source.assign(given.num_dims(),
                                bw_given ? RateSource::Given : RateSource::Default);
    out.latency_source.assign(given.num_dims(),
                              lat_given ? RateSource::Given : RateSource::Default);
    out.fill_source.assign(given.num_dims(), fill_given ? RateSource::Given : RateSource::Default);
    const std::vector<int> measured = dimensions_to_measure(given, bw_given, lat_given);
    if (measured.empty() || params().calibration_seconds <= 0) return out;

    // Where the rates come from: this process's memory, the file, or a measurement.
    RateSource source = RateSource::Cached;
    const std::string key = process_key(comm, layout, transport_name);
    const std::vector<DimensionRates> known = calibrated_layouts.find(key);
    std::vector<DimensionRates> rates;
    uint64_t mine = !known.empty();
    if (all_hold(m, comm, {double(mine)}) && mine) rates = known;
    const bool use_file = params().calibration_file && params().calibration_file[0];
    // Rates over one transport say nothing of another: the key names it.
    const std::string file_key =
        use_file ? calibration_key(given, host_at_position) + "-" + transport_name : "";
    if (rates.empty() && use_file) rates = rates_from_file(m, comm, given, file_key, out.note);
    if (rates.empty()) {
        source = RateSource::Measured;
        CalibrationSettings settings;
        settings.budget_seconds = params().calibration_seconds;
        // The fill curve, unless the spec gives it: up to the engine's K stages in flight,
        // each about the smallest chunk (a stage's size).
        settings.fill_in_flight = fill_given ? 0 : params().max_active;
        if (params().min_chunk_bytes > 0) settings.fill_bytes = params().min_chunk_bytes;
        const CalibrationResult result = calibrate(
            given, position, transport, measured,
            [&](std::vector<double> &v) { agree_max(m, comm, v); }, settings, buffers);
        out.seconds = result.seconds;
        out.connect_seconds = result.connect_seconds;
        out.bytes_sent = result.bytes_sent;
        out.joint_slowdown = result.joint_slowdown;
        out.shared = result.shared;
        out.joint_phases = result.joint_phases;
        // Every rank holds the same agreed numbers, but tests make a measurement fail on
        // some ranks only (THEMIS_TEST_CALIBRATION_FAILS): all keep the defaults together.
        std::vector<double> failed = {
            plausible(result.dims, measured) && !test_hooks().calibration_fails ? 0.0 : 1.0};
        agree_max(m, comm, failed);
        if (failed[0] != 0) {
            out.note = "calibration measured no usable rate: the defaults are kept";
            static bool shown = false;
            if (!shown && mca_coll_themis_first_process())
                mca_coll_themis_show_help("calibration-failed", given.to_spec().c_str());
            shown = true;
            return out;
        }
        rates = result.dims;
    }
    calibrated_layouts.store(key, rates);
    out.kept = {key, file_key};
    out.topology = with_measured_rates(given, rates, bw_given, lat_given, fill_given);
    for (int d : measured) {
        if (!bw_given) out.bandwidth_source[d] = source;
        if (!lat_given) out.latency_source[d] = source;
        if (!fill_given) out.fill_source[d] = source;
    }
    if (use_file && source == RateSource::Measured)
        store_in_file(comm, out.topology, file_key, out.note);
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
