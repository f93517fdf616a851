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
// One flow's transfer: what that flow moves in kTargetSeconds at its rate alone as measured so
// far (a pair not measured yet: the first pair's), at least kMinBytes (and then every flow of
// the step as long as that takes the slowest), at most kMaxBytes, so that the two flows of a
// probe, however their rates differ (4:1 on a network of 25 and 100 Mbit/s links), run about
// as long. A flow's transfers stream back to back (Prober::run): only its first, untimed, meets
// a shaper's burst or TCP's slow start, so the transfers may be short; kMinBytes only keeps one
// above the TCP BTL's eager limit (a rendezvous, as large messages are).
constexpr size_t kMinBytes = 128 << 10, kMaxBytes = 16 << 20;
constexpr double kTargetSeconds = 0.025;
constexpr int kRepetitions = 3; // per measurement: the median is kept
// Sleeps between polls (below): a transfer's expected time over kPollsPerTransfer, within
// these bounds. Polling ranks take the CPU from the network's own work: polling too often
// makes two flows into one node read as sharing a link (bench/HISTORY.md, the grid probe).
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

    // A flow of `rate` bytes/s (agreed): the bytes it moves in a step of `seconds`, the same on
    // every rank.
    static size_t bytes_for(double rate, double seconds) {
        return std::min(std::max(size_t(rate * seconds), kMinBytes), kMaxBytes);
    }

    // Every flow's rates (bytes/s), `repetitions` each, agreed; each flow moving `bytes` (one per
    // flow) repetitions + 1 times back to back, the first untimed; throws on a failure anywhere
    // (every rank alike).
    std::vector<std::vector<double>> measure(const std::vector<std::pair<int, int>> &flows,
                                             const std::vector<size_t> &bytes, int repetitions) {
        std::vector<double> values(flows.size() * size_t(repetitions) + 1, 0.0);
        bool failed = false;
        try {
            run(flows, bytes, repetitions, values);
        } catch (const std::exception &) {
            failed = true;
        }
        if (test_hooks().probe_fails) failed = true;
        values.back() = failed ? 1 : 0;
        agree_max_patiently(comm_, values, poll_sleep_us_);
        if (values.back() != 0) throw std::runtime_error("a probe failed on some rank");
        std::vector<std::vector<double>> rates(flows.size());
        for (size_t i = 0; i < flows.size(); ++i)
            for (int r = 0; r < repetitions; ++r) {
                const double v = values[i * size_t(repetitions) + size_t(r)];
                if (!(v > 0 && std::isfinite(v)))
                    throw std::runtime_error("a probe measured no rate");
                rates[i].push_back(v);
            }
        return rates;
    }

    // Polls transfers that take about `seconds` this often (see kPollsPerTransfer).
    void expect_seconds(double seconds) {
        poll_sleep_us_ = std::clamp(seconds / kPollsPerTransfer * 1e6, kMinPollSleepMicroseconds,
                                    kMaxPollSleepMicroseconds);
    }

  private:
    void check(int rc, const char *what) {
        if (rc != OMPI_SUCCESS) throw std::runtime_error(what);
    }

    // Each flow streams its transfers back to back, each acknowledged by one byte; the sender
    // times each from its start to the acknowledgement and starts the next at once. The first
    // of a stream connects a new pair, opens TCP's window and spends what a shaper lets through
    // in a burst after an idle moment (the emulated links' 128 KiB token bucket): not timed.
    // Without a pause between the others, no link idles long enough to refill that burst. And a
    // flow goes on streaming, untimed, until every flow of the step has had its timed
    // transfers, so that each one's are timed against the others' traffic however the link
    // shares out: decided by the node common to the step's flows (their receiver, which says
    // so in its acknowledgements; else their sender, which ends a stream with an empty
    // message). (Timed one step at a time, a 25 Mbit/s flow whose partner ran longer idled
    // meanwhile and read up to 35; with a fixed count each, a forwarded flow starved by the
    // other's TCP on their shared link took its first transfer's time to start, and the two
    // timed runs barely met: both links read as not shared.)
    void run(const std::vector<std::pair<int, int>> &flows, const std::vector<size_t> &bytes,
             int repetitions, std::vector<double> &rates) {
        struct Flow {
            size_t index = 0, bytes = 0;
            int peer = -1;
            bool sending = false;
            int done = 0; // transfers completed (the first untimed, then `repetitions` timed)
            bool ended = false;
            ompi_request_t *data = nullptr, *ack = nullptr;
            Clock::time_point start;
            std::vector<char> buffer;
            char flag = 0; // in an acknowledgement: 1 send another, 0 stop
        };
        const int transfers = repetitions + 1;
        const bool receiver_decides = std::all_of(flows.begin(), flows.end(), [&](const auto &f) {
            return f.second == flows.front().second;
        });
        std::vector<Flow> mine;
        for (size_t i = 0; i < flows.size(); ++i) {
            const int src = leader_[flows[i].first], dst = leader_[flows[i].second];
            for (const bool sending : {true, false}) {
                if ((sending ? src : dst) != me_) continue;
                Flow f;
                f.index = i;
                f.bytes = bytes[i];
                f.peer = sending ? dst : src;
                f.sending = sending;
                mine.push_back(std::move(f));
            }
        }
        if (mine.empty()) return;
        data_.resize(*std::max_element(bytes.begin(), bytes.end()), 'p');
        // Whether flow f sends another transfer (on the deciding node, which takes part in
        // every flow of the step).
        auto more = [&](const Flow &f) {
            return f.done < transfers || std::any_of(mine.begin(), mine.end(), [&](const Flow &o) {
                       return o.done < transfers;
                   });
        };
        auto send = [&](Flow &f, const void *at, size_t n, int tag, ompi_request_t **r) {
            check(MCA_PML_CALL(isend(at, int(n), &ompi_mpi_byte.dt, f.peer, tag,
                                     MCA_PML_BASE_SEND_STANDARD, comm_, r)),
                  "probe isend");
        };
        auto post = [&](Flow &f) {
            if (f.sending) {
                check(MCA_PML_CALL(
                          irecv(&f.flag, 1, &ompi_mpi_byte.dt, f.peer, kAckTag, comm_, &f.ack)),
                      "probe irecv");
                f.start = Clock::now();
                send(f, data_.data(), f.bytes, kDataTag, &f.data);
            } else {
                f.buffer.resize(f.bytes);
                check(MCA_PML_CALL(irecv(f.buffer.data(), int(f.bytes), &ompi_mpi_byte.dt, f.peer,
                                         kDataTag, comm_, &f.data)),
                      "probe irecv");
            }
        };
        bool error = false;
        auto finished = [&error](ompi_request_t *&r) {
            if (!r || !REQUEST_COMPLETE(r)) return false;
            error |= r->req_status.MPI_ERROR != OMPI_SUCCESS;
            ompi_request_free(&r);
            r = nullptr;
            return true;
        };
        auto wait = [&](ompi_request_t *&r) {
            while (r && !finished(r)) opal_progress();
        };
        for (Flow &f : mine) post(f);
        // Short sleeps between polls: the kernel's socket buffers move the data meanwhile, and
        // the CPU stays with the network's own work (busy-polling ranks on a crowded machine
        // make a host that receives two flows look like a shared link).
        for (size_t left = mine.size(); left > 0;) {
            opal_progress();
            usleep(useconds_t(poll_sleep_us_));
            for (Flow &f : mine) {
                if (f.ended) continue;
                if (f.sending) {
                    finished(f.data);
                    if (!finished(f.ack)) continue;
                    if (f.done >= 1 && f.done <= repetitions)
                        rates[f.index * size_t(repetitions) + size_t(f.done - 1)] =
                            double(f.bytes) / since(f.start);
                    wait(f.data); // acknowledged: sent
                    ++f.done;
                    if (receiver_decides ? f.flag != 0 : more(f)) {
                        post(f);
                        continue;
                    }
                    if (!receiver_decides) { // the receiver's end: an empty message
                        ompi_request_t *end = nullptr;
                        send(f, data_.data(), 0, kDataTag, &end);
                        wait(end);
                    }
                } else {
                    if (!f.data || !REQUEST_COMPLETE(f.data)) continue;
                    const size_t got = f.data->req_status._ucount;
                    finished(f.data);
                    if (!receiver_decides && got == 0) { // the sender's end
                        f.ended = true;
                        --left;
                        continue;
                    }
                    ++f.done;
                    // Acknowledged also after an error, so that the sender never waits forever.
                    f.flag = receiver_decides ? char(more(f)) : 1;
                    ompi_request_t *ack = nullptr;
                    send(f, &f.flag, 1, kAckTag, &ack);
                    wait(ack);
                    if (!receiver_decides || f.flag) { // the next transfer, or the sender's end
                        post(f);
                        continue;
                    }
                }
                f.ended = true;
                --left;
            }
        }
        if (error) throw std::runtime_error("a probe's transfer failed");
    }

    mca_coll_themis_module_t *m_;
    ompi_communicator_t *comm_;
    std::vector<int> leader_;
    int me_;
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
    count_setup_round();
    while (!REQUEST_COMPLETE(request)) {
        opal_progress();
        if (!REQUEST_COMPLETE(request)) usleep(useconds_t(poll_sleep_us));
    }
    const int rc = request->req_status.MPI_ERROR;
    ompi_request_free(&request);
    if (rc != OMPI_SUCCESS) throw std::runtime_error("a probe's agreement failed");
    values = all;
}

// Answers GridSearch's probes by measuring: kRepetitions timed transfers per flow and
// measurement, medians kept; a sharing answer near the threshold is measured again before it is
// given.
class Measurer {
  public:
    Measurer(Prober &prober, ompi_communicator_t *comm) : prober_(prober), comm_(comm) {}

    double alone(int from, int to) {
        // The first pair's rate at kMinBytes sizes every flow's transfer; measured again at
        // that size, as every pair is.
        if (typical_ == 0) typical_ = median(sample({{from, to}})[0]);
        std::vector<double> &known = alone_[{from, to}];
        if (known.empty()) {
            known = sample({{from, to}})[0]; // sized for typical_
            // Much faster than that: short transfers, a burst's rate; again, sized for itself.
            if (measure_again_sized(median(known), typical_)) known = sample({{from, to}})[0];
        }
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
    // kRepetitions samples of each of `flows` run together, each flow sized by its rate alone
    // so far (the first transfer of a pair connects and opens TCP's window: not timed).
    std::vector<std::vector<double>> sample(const std::vector<std::pair<int, int>> &flows) {
        // Every flow lasts as long as the longest needs (kTargetSeconds, or its kMinBytes at a
        // slow rate), so that the step's flows overlap for most of their time.
        double seconds = kTargetSeconds;
        for (const auto &f : flows)
            if (estimate(f) > 0) seconds = std::max(seconds, double(kMinBytes) / estimate(f));
        std::vector<size_t> bytes;
        for (const auto &f : flows)
            bytes.push_back(estimate(f) > 0 ? Prober::bytes_for(estimate(f), seconds) : kMinBytes);
        prober_.expect_seconds(seconds);
        return prober_.measure(flows, bytes, kRepetitions);
    }

    // A flow's rate alone so far: its own median, else the first pair's; 0 before any.
    double estimate(const std::pair<int, int> &flow) const {
        const auto known = alone_.find(flow);
        return known != alone_.end() && !known->second.empty() ? median(known->second) : typical_;
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
    std::map<std::pair<int, int>, std::vector<double>> alone_; // each pair's samples alone
    double typical_ = 0; // the first pair's rate alone (bytes/s): sizes pairs not yet measured
};

// The grid an earlier job kept for these hosts in the calibration file; nothing when none.
std::optional<GridResult> grid_in_file(const std::vector<std::string> &hosts) {
    if (calibration_file().empty()) return std::nullopt;
    std::optional<GridResult> kept =
        cached_grid(read_kept_entries(), grid_key(hosts), int(hosts.size()));
    if (kept && !kept->found)
        kept->reason = "so kept by an earlier job (coll_themis_calibration_file)";
    return kept;
}

// A finished search's grid (found or not) into the file, by one rank per node.
void keep_in_file(ompi_communicator_t *comm, const std::vector<std::string> &hosts,
                  const GridResult &grid) {
    if (calibration_file().empty() || !writes_for_node(comm)) return;
    try {
        write_grid_entry(calibration_file(), grid_key(hosts), grid);
    } catch (const CalibrationFileError &e) {
        report_calibration_file_problem(e.what());
    }
}

} // namespace

namespace {

// The hosts in name order (GridSearch's keys) and each one's lowest rank, which measures.
struct Hosts {
    std::vector<std::string> names;
    std::vector<int> leader;
    std::string key; // the names, joined: the process memory's key
};

Hosts hosts_of(const std::vector<std::string> &host_of) {
    std::map<std::string, int> leader_of;
    for (int r = int(host_of.size()) - 1; r >= 0; --r) leader_of[host_of[r]] = r;
    Hosts hosts;
    for (const auto &[host, rank] : leader_of) {
        hosts.names.push_back(host);
        hosts.leader.push_back(rank);
        hosts.key += host + '\n';
    }
    return hosts;
}

} // namespace

std::optional<GridResult> known_grid(const std::vector<std::string> &host_of,
                                     ProbeOutcome::Kept &kept) {
    const Hosts hosts = hosts_of(host_of);
    if (std::optional<GridResult> known = probed_grids.find(hosts.key)) {
        kept = ProbeOutcome::Kept::Process;
        return known;
    }
    std::optional<GridResult> filed = grid_in_file(hosts.names);
    if (filed) kept = ProbeOutcome::Kept::File;
    return filed;
}

ProbeOutcome probe_grid(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                        const std::vector<std::string> &host_of, double budget_seconds) {
    const Clock::time_point start = Clock::now();
    const Hosts hosts = hosts_of(host_of);
    const int nodes = int(hosts.names.size());
    ProbeOutcome outcome;
    GridSearch search(nodes, hosts.names);
    Prober prober(m, comm, hosts.leader);
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
        keep_in_file(comm, hosts.names, outcome.grid); // not a failure or a budget run out
    } else {
        outcome.grid = GridResult();
        outcome.grid.reason = stopped;
    }
    // No grid is remembered too: every communicator over these hosts would pay again.
    probed_grids.store(hosts.key, outcome.grid);
    return outcome;
}

} // namespace themis
