// coll_themis_calibrate.h: the rates a communicator's plans use, agreed by every rank.
//
// Whatever the dims spec does not give (bw=, lat=, fill=) comes, first found first:
//   this process's memory  a layout already calibrated in this job (the same processes at
//                          the same positions, the same transport): dups and re-creations
//                          of a communicator cost nothing;
//   coll_themis_calibration_file  numbers measured by an earlier job on the same layout
//                          and hosts, used only when every rank read the same ones;
//   measurement            src/calibration.h over the communicator's own transport, within
//                          coll_themis_calibration_seconds; stored in both places above;
//   the defaults           of the spec, when measuring is off (0 s), not worth it (fewer
//                          than two dimensions to balance) or failed (said once).
#pragma once

#include "coll_themis_prelude.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "coll_themis_agreement.h"
#include "coll_themis_log.h"
#include "calibration.h"
#include "calibration_file.h"
#include "rank_layout.h"
#include "transport.h"

namespace themis {

// Where measured or cached rates are kept: this process's memory (process_key()) and the
// calibration file's key ("" without a file); both "" for given or default rates.
struct RatesKept {
    std::string memo_key, file_key;
};

struct CalibratedTopology {
    Topology topology;
    std::vector<RateSource> bandwidth_source, latency_source, fill_source; // per dimension
    double seconds = 0;         // this rank's time measuring (0 when nothing was measured)
    double connect_seconds = 0; // of which connecting to the peers (first exchange)
    uint64_t bytes_sent = 0;    // this rank's bytes sent measuring
    double joint_slowdown = 0;  // the calibration's joint phase (calibration.h)
    bool shared = false;        // whether it counted as sharing (the joint rates kept)
    int joint_phases = 0;       // how many joint phases it took (2: a slowdown measured again)
    std::string note;           // why the defaults were kept, or a cache problem; "" if none
    RatesKept kept;
};

// The rates a communicator's plans use, in two steps around one of the set-up's rounds
// (coll_themis_agreement.h): this rank's side first (what it knows without measuring: this
// process's memory, else the file), then, once every rank's answer is agreed, the rates
// every rank plans with: those known where every rank knows the same, else measured now.
class RatesQuestion {
  public:
    // `layout` on `transport_name` (the caches' key for the transport the rates are measured
    // over); `host_at_position`: each position's hostname (the file's key).
    RatesQuestion(ompi_communicator_t *comm, const RankLayout &layout,
                  const std::string &transport_name,
                  const std::vector<std::string> &host_at_position);
    void ask(Agreement &agreement);
    // Collective over `comm` (more rounds where it measures): measures over `transport` with
    // the exchanged bytes in `buffers` (nullptr: host memory).
    CalibratedTopology settle(mca_coll_themis_module_t *m, const Agreement &agreement, int position,
                              Transport &transport, Memory *buffers);
    // ask() and settle() with a round of their own.
    CalibratedTopology settle_alone(mca_coll_themis_module_t *m, int position, Transport &transport,
                                    Memory *buffers);

  private:
    ompi_communicator_t *comm_;
    const RankLayout &layout_;
    std::string transport_name_;
    bool bw_given_, lat_given_, fill_given_;
    std::vector<int> measured_;         // dimensions measured (none: nothing to do)
    std::vector<DimensionRates> known_; // empty: none
    std::string memo_key_, file_key_, note_;
    Agreement::Slot same_needed_ = 0, same_known_ = 0, all_known_ = 0;
};

// Rates revised at run time (coll_themis_refine.h), on every rank of `comm` alike: they
// replace the measured or cached ones where `kept` says, so that later communicators of this
// layout and later jobs (coll_themis_calibration_file) start from them. A file that cannot
// be written is reported once, as after a measurement; the job runs on.
void keep_revised_rates(ompi_communicator_t *comm, const RatesKept &kept, const Topology &revised);

// The processes at each position of `layout` (and the dimensions' shapes) with
// `transport_name`: what a measurement made in this process stays valid for.
std::string process_key(ompi_communicator_t *comm, const RankLayout &layout,
                        const std::string &transport_name);

// What this process measured, by process_key (threads may set communicators up at once:
// locked). A key not found gives T().
template <typename T> class ProcessMemo {
  public:
    T find(const std::string &key) {
        std::lock_guard<std::mutex> hold(lock_);
        const auto known = values_.find(key);
        return known == values_.end() ? T() : known->second;
    }
    void store(const std::string &key, const T &value) {
        std::lock_guard<std::mutex> hold(lock_);
        values_[key] = value;
    }

  private:
    std::mutex lock_;
    std::map<std::string, T> values_;
};

// The calibration file this process uses: coll_themis_calibration_file's path; with `auto`
// (the default) the user's cache (calibration_file.h, default_cache_path(): XDG_CACHE_HOME,
// else ~/.cache), its directories made; "" with `none` or an empty value, or where no cache
// directory is known or can be made (said once). Resolved once per process.
const std::string &calibration_file();

// Reads the calibration file (which must be named): a file that cannot be read is reported
// once and gives no entries; damaged lines are left out, the first one reported once.
CalibrationEntries read_kept_entries();

// A calibration file that cannot be read or written: said once per process (the help
// file's calibration-file); the job runs on with measured numbers.
void report_calibration_file_problem(const std::string &what);

// Whether this rank writes the calibration file for its node: the node's lowest rank in
// `comm`, so that every node's disk gets the file and no two ranks of a node race.
bool writes_for_node(ompi_communicator_t *comm);

// The dimensions with every number and where it came from, as the keys of the verbose
// log's event "selected": dims (the spec), bw_source, lat_source and fill_source (one per
// dimension).
void describe_rates(const CalibratedTopology &t, LogEvent &event);

} // namespace themis
