// coll_themis_grid_probe.cpp: the hosts' grid found by probing (coll_themis_grid_probe.h).
#include "coll_themis_grid_probe.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_log.h"
#include "coll_themis_params.h"
#include "coll_themis_setup_task.h"
#include "coll_themis_test_hooks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "calibration_file.h"
#include "fnv1a.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include <unistd.h>

namespace themis {

namespace {

constexpr int kDataTag = 0x7e51, kAckTag = 0x7e52; // on the set-up's private duplicate
// One flow's transfer: kMinBytes at first, then as many as the first pair measured moves in
// kTargetSeconds (at most kMaxBytes), so that two flows that start a few milliseconds apart
// (each leaves when the step's agreement reaches its rank, on a busy machine later) still
// overlap for most of their time.
constexpr size_t kMinBytes = 256 << 10, kMaxBytes = 16 << 20;
constexpr double kTargetSeconds = 0.08;
constexpr int kRepetitions = 5; // per measurement: the median is kept
// Sleeps between polls (below): a transfer's expected time over kPollsPerTransfer, within
// these bounds. Polling ranks take the CPU from the network's own work: at 100 us the
// emulated 2x2 network's node receiving 100 and 200 Mbit/s at once read 157-180 of the 200
// (near the shared threshold), at 400 us 179-196, at 20 us 142-153.
constexpr double kPollsPerTransfer = 200;
constexpr double kMinPollSleepMicroseconds = 10, kMaxPollSleepMicroseconds = 400;
constexpr double kFirstPollSleepMicroseconds = 100; // before the first pair sized the transfer

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Grids found in this process (or none), by the hosts (sorted, joined).
ProcessMemo<std::optional<GridResult>> probed_grids;

void agree_max_patiently(ompi_communicator_t *dup, std::vector<double> &values,
                         double poll_sleep_us = kFirstPollSleepMicroseconds);

// The leaders' timed transfers of one step: flow i from host leader src[i] to dst[i].
class Prober {
  public:
    Prober(mca_coll_themis_module_t *m, ompi_communicator_t *comm, std::vector<int> leader)
        : m_(m), comm_(comm), leader_(std::move(leader)), me_(ompi_comm_rank(comm_)) {}

    // Sizes the transfers from an agreed rate (bytes/s), the same on every rank.
    void size_for(double rate) {
        bytes_ = std::min(std::max(size_t(rate * kTargetSeconds), kMinBytes), kMaxBytes);
        poll_sleep_us_ = std::clamp(double(bytes_) / rate / kPollsPerTransfer * 1e6,
                                    kMinPollSleepMicroseconds, kMaxPollSleepMicroseconds);
    }

    // Every flow's rate (bytes/s), agreed; throws on a failure anywhere (every rank alike).
    std::vector<double> step(const std::vector<std::pair<int, int>> &flows, bool timed) {
        std::vector<double> values(flows.size() + 1, 0.0);
        bool failed = false;
        try {
            run(flows, values);
        } catch (const std::exception &) {
            failed = true;
        }
        if (test_hooks().probe_fails) failed = true;
        values.back() = failed ? 1 : 0;
        agree_max_patiently(comm_, values, poll_sleep_us_);
        if (values.back() != 0) throw std::runtime_error("a probe failed on some rank");
        values.pop_back();
        if (timed)
            for (double v : values)
                if (!(v > 0 && std::isfinite(v)))
                    throw std::runtime_error("a probe measured no rate");
        return values;
    }

  private:
    void check(int rc, const char *what) {
        if (rc != OMPI_SUCCESS) throw std::runtime_error(what);
    }

    void run(const std::vector<std::pair<int, int>> &flows, std::vector<double> &rates) {
        struct Flow {
            size_t index = 0;
            int peer = -1;
            bool sending = false;
            ompi_request_t *data = nullptr, *ack = nullptr;
            Clock::time_point start;
            std::vector<char> buffer;
            char ack_byte = 0;
            bool done = false, acked = false;
        };
        std::vector<Flow> mine;
        for (size_t i = 0; i < flows.size(); ++i) {
            const int src = leader_[flows[i].first], dst = leader_[flows[i].second];
            for (const bool sending : {true, false}) {
                if ((sending ? src : dst) != me_) continue;
                Flow f;
                f.index = i;
                f.peer = sending ? dst : src;
                f.sending = sending;
                mine.push_back(std::move(f));
            }
        }
        if (mine.empty()) return;
        data_.resize(bytes_, 'p');
        for (Flow &f : mine) {
            if (f.sending) {
                check(MCA_PML_CALL(
                          irecv(&f.ack_byte, 1, &ompi_mpi_byte.dt, f.peer, kAckTag, comm_, &f.ack)),
                      "probe irecv");
                f.start = Clock::now();
                check(MCA_PML_CALL(isend(data_.data(), int(bytes_), &ompi_mpi_byte.dt, f.peer,
                                         kDataTag, MCA_PML_BASE_SEND_STANDARD, comm_, &f.data)),
                      "probe isend");
            } else {
                f.buffer.resize(bytes_);
                check(MCA_PML_CALL(irecv(f.buffer.data(), int(bytes_), &ompi_mpi_byte.dt, f.peer,
                                         kDataTag, comm_, &f.data)),
                      "probe irecv");
            }
        }
        bool error = false;
        // Short sleeps between polls: the kernel's socket buffers move the data meanwhile, and
        // the CPU stays with the network's own work (busy-polling ranks on a crowded machine
        // make a host that receives two flows look like a shared link).
        for (size_t left = mine.size(); left > 0;) {
            opal_progress();
            usleep(useconds_t(poll_sleep_us_));
            for (Flow &f : mine) {
                if (f.done) continue;
                if (f.data && REQUEST_COMPLETE(f.data)) {
                    error |= f.data->req_status.MPI_ERROR != OMPI_SUCCESS;
                    ompi_request_free(&f.data);
                    f.data = nullptr;
                    if (!f.sending) { // the data are in: acknowledge them (also after an error,
                                      // so that the sender never waits forever)
                        check(MCA_PML_CALL(isend(&f.ack_byte, 1, &ompi_mpi_byte.dt, f.peer, kAckTag,
                                                 MCA_PML_BASE_SEND_STANDARD, comm_, &f.ack)),
                              "probe isend");
                    }
                }
                if (f.ack && REQUEST_COMPLETE(f.ack)) {
                    error |= f.ack->req_status.MPI_ERROR != OMPI_SUCCESS;
                    ompi_request_free(&f.ack);
                    f.ack = nullptr;
                    f.acked = true;
                    if (f.sending) rates[f.index] = double(bytes_) / since(f.start);
                }
                if (f.acked && f.data == nullptr) {
                    f.done = true;
                    --left;
                }
            }
        }
        if (error) throw std::runtime_error("a probe's transfer failed");
    }

    mca_coll_themis_module_t *m_;
    ompi_communicator_t *comm_;
    std::vector<int> leader_;
    int me_;
    size_t bytes_ = kMinBytes;
    double poll_sleep_us_ = kFirstPollSleepMicroseconds;
    std::vector<char> data_;
};

// agree_max() on the set-up's private duplicate `dup`, waiting with short sleeps between
// polls: a rank whose flows are done (or that has none) leaves the CPU to those still
// moving data. Busy-polling ranks on a crowded machine slow a host receiving two flows down
// as a shared link would.
void agree_max_patiently(ompi_communicator_t *dup, std::vector<double> &values,
                         double poll_sleep_us) {
    std::vector<double> all(values.size());
    ompi_request_t *request = nullptr;
    if (dup->c_coll->coll_iallreduce(values.data(), all.data(), int(values.size()),
                                     &ompi_mpi_double.dt, &ompi_mpi_op_max.op, dup, &request,
                                     dup->c_coll->coll_iallreduce_module) != OMPI_SUCCESS)
        throw std::runtime_error("a probe's agreement failed to start");
    while (!REQUEST_COMPLETE(request)) {
        opal_progress();
        if (!REQUEST_COMPLETE(request)) usleep(useconds_t(poll_sleep_us));
    }
    const int rc = request->req_status.MPI_ERROR;
    ompi_request_free(&request);
    if (rc != OMPI_SUCCESS) throw std::runtime_error("a probe's agreement failed");
    values = all;
}

// Answers GridSearch's probes by measuring: kRepetitions steps per measurement, medians
// kept; a sharing answer near the threshold is measured again before it is given.
class Measurer {
  public:
    Measurer(Prober &prober, ompi_communicator_t *comm) : prober_(prober), comm_(comm) {}

    double alone(int from, int to) {
        if (!sized_) { // the transfer's size from the first pair's rate, then measured at it
            sized_ = true;
            prober_.size_for(median(sample({{from, to}})[0]));
        }
        std::vector<double> &known = alone_[{from, to}];
        if (known.empty()) known = sample({{from, to}})[0];
        return median(known);
    }

    bool shared(const GridProbe &p) {
        // Out: node -> peer and node -> other; In: peer -> node and other -> node.
        const bool out = p.kind == GridProbe::Kind::Out;
        const std::pair<int, int> a = out ? std::make_pair(p.node, p.peer)
                                          : std::make_pair(p.peer, p.node),
                                  b = out ? std::make_pair(p.node, p.other)
                                          : std::make_pair(p.other, p.node);
        alone(a.first, a.second);
        alone(b.first, b.second);
        SharingSamples s;
        add_together(s, a, b);
        Sharing verdict = judge_sharing(with_alone(s, a, b), kSharingMargin);
        const bool again = verdict == Sharing::Unclear;
        if (again) { // noise decides here: each flow alone and the two together once more
            append(alone_[a], sample({a})[0]);
            append(alone_[b], sample({b})[0]);
            add_together(s, a, b);
            verdict = judge_sharing(with_alone(s, a, b), 0);
        }
        const bool slowed = verdict == Sharing::Yes;
        char line[240];
        snprintf(
            line, sizeof line, "grid probe %s: alone %.1f, %.1f Mbit/s; together %.1f, %.1f: %s%s",
            describe(p).c_str(), median(alone_[a]) * 8e-6, median(alone_[b]) * 8e-6,
            median(s.together_a) * 8e-6, median(s.together_b) * 8e-6,
            slowed ? "shared" : "not shared", again ? " (near the threshold: measured twice)" : "");
        say(10, comm_, line);
        return slowed;
    }

  private:
    // kRepetitions samples of each of `flows` run together (the first transfer of a pair
    // connects and opens TCP's window: not timed).
    std::vector<std::vector<double>> sample(const std::vector<std::pair<int, int>> &flows) {
        for (const auto &f : flows)
            if (warm_.insert(f).second) prober_.step({f}, false);
        std::vector<std::vector<double>> samples(flows.size());
        for (int r = 0; r < kRepetitions; ++r) {
            const std::vector<double> got = prober_.step(flows, true);
            for (size_t i = 0; i < flows.size(); ++i) samples[i].push_back(got[i]);
        }
        return samples;
    }

    static void append(std::vector<double> &to, const std::vector<double> &more) {
        to.insert(to.end(), more.begin(), more.end());
    }

    void add_together(SharingSamples &s, std::pair<int, int> a, std::pair<int, int> b) {
        const std::vector<std::vector<double>> got = sample({a, b});
        append(s.together_a, got[0]);
        append(s.together_b, got[1]);
    }

    SharingSamples with_alone(SharingSamples s, std::pair<int, int> a, std::pair<int, int> b) {
        s.alone_a = alone_[a];
        s.alone_b = alone_[b];
        return s;
    }

    Prober &prober_;
    ompi_communicator_t *comm_;
    std::set<std::pair<int, int>> warm_;
    std::map<std::pair<int, int>, std::vector<double>> alone_; // each pair's samples alone
    bool sized_ = false;
};

// True on every rank when every rank holds the same `text`.
bool all_hold(mca_coll_themis_module_t *m, ompi_communicator_t *comm, const std::string &text,
              bool have) {
    Fnv1a h;
    h.bytes(text.data(), text.size());
    const uint64_t print = have ? h.digest() : 0;
    std::vector<double> v = {double(print >> 32), double(print & 0xffffffffu), have ? 0.0 : 1.0};
    std::vector<double> neg = {-v[0], -v[1]};
    v.push_back(neg[0]);
    v.push_back(neg[1]);
    agree_max(m, comm, v);
    return v[2] == 0 && v[0] == -v[3] && v[1] == -v[4];
}

bool file_named() { return params().calibration_file && params().calibration_file[0]; }

// The grid an earlier job kept for these hosts in coll_themis_calibration_file; nothing
// when none (a file that cannot be read is said by the calibration, which reads it next).
std::optional<GridResult> grid_in_file(const std::vector<std::string> &hosts) {
    if (!file_named()) return std::nullopt;
    try {
        std::optional<GridResult> kept = cached_grid(
            read_calibration_file(params().calibration_file), grid_key(hosts), int(hosts.size()));
        if (kept && !kept->found)
            kept->reason = "so kept by an earlier job (coll_themis_calibration_file)";
        return kept;
    } catch (const CalibrationFileError &) {
        return std::nullopt;
    }
}

// True on every rank when every rank holds the same grid, or the same "none" and why.
bool all_hold(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
              const std::optional<GridResult> &grid) {
    return all_hold(m, comm, grid ? grid_text(*grid) + ' ' + grid->reason : std::string(),
                    grid.has_value());
}

// A finished search's grid (found or not) into the file, by one rank per node.
void keep_in_file(ompi_communicator_t *comm, const std::vector<std::string> &hosts,
                  const GridResult &grid) {
    if (!file_named() || !writes_for_node(comm)) return;
    try {
        write_grid_entry(params().calibration_file, grid_key(hosts), grid);
    } catch (const CalibrationFileError &e) {
        report_calibration_file_problem(e.what());
    }
}

} // namespace

ProbeOutcome probe_grid(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                        const std::vector<std::string> &host_of, double budget_seconds) {
    const Clock::time_point start = Clock::now();
    // The hosts in name order (GridSearch's keys), each measured by its lowest rank.
    std::map<std::string, int> leader_of;
    for (int r = int(host_of.size()) - 1; r >= 0; --r) leader_of[host_of[r]] = r;
    std::vector<std::string> hosts;
    std::vector<int> leader;
    std::string key;
    for (const auto &[host, rank] : leader_of) {
        hosts.push_back(host);
        leader.push_back(rank);
        key += host + '\n';
    }
    const int nodes = int(hosts.size());
    ProbeOutcome outcome;
    const std::optional<GridResult> known = probed_grids.find(key);
    if (all_hold(m, comm, known)) {
        outcome.grid = *known;
        outcome.kept = ProbeOutcome::Kept::Process;
        return outcome;
    }
    const std::optional<GridResult> filed = grid_in_file(hosts);
    if (all_hold(m, comm, filed)) {
        outcome.grid = *filed;
        outcome.kept = ProbeOutcome::Kept::File;
        probed_grids.store(key, filed);
        return outcome;
    }
    GridSearch search(nodes, hosts);
    Prober prober(m, comm, leader);
    Measurer measurer(prober, comm);
    std::string stopped;
    try {
        while (const std::optional<GridProbe> p = search.next()) {
            // Every rank's time so far, agreed: all stop at the same probe.
            std::vector<double> elapsed = {since(start)};
            agree_max_patiently(comm, elapsed);
            if (elapsed[0] > budget_seconds) {
                std::ostringstream why;
                why << "the probe's budget (coll_themis_grid_probe_seconds=" << budget_seconds
                    << ") ran out after " << search.result().probes << " probes";
                stopped = why.str();
                break;
            }
            if (p->kind == GridProbe::Kind::Rate)
                search.answer_rate(measurer.alone(p->node, p->peer));
            else
                search.answer_shared(measurer.shared(*p));
        }
    } catch (const std::exception &e) {
        stopped = e.what(); // the same on every rank: failures are agreed in each step
    }
    outcome.seconds = since(start);
    if (stopped.empty()) {
        outcome.grid = search.result();
        keep_in_file(comm, hosts, outcome.grid); // not a failure or a budget run out
    } else {
        outcome.grid = GridResult();
        outcome.grid.reason = stopped;
    }
    // No grid is remembered too: every communicator over these hosts would pay again.
    probed_grids.store(key, outcome.grid);
    return outcome;
}

} // namespace themis
