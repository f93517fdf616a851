// coll_themis_refine.h: the rate refinement's glue (src/rate_refiner.h): its settings agreed
// at set-up, and the session a running communicator's Context owns (Refinement).
//
// Rates measured at set-up (coll_themis_calibration_seconds) hold what the machine and the
// fabric did during that half second; a job's own calls then show what they do. Every
// coll_themis_refine_calls calls on themis, blocking or not (and at least 100 times the
// agreement's predicted time: rate_refiner.h), at the same call on every rank, the ranks sum
// their evidence (2 x dimensions doubles) and revise the measured rates alike where one
// dimension is off against the others by more than coll_themis_refine_threshold; the calls
// after it plan from the revised rates. A blocking call that ends a window sums through the
// module below's allreduce on the communicator; a nonblocking one, which must not wait for the
// other ranks, starts the private duplicate's nonblocking allreduce, and the communicator's
// calls that start before it completes wait for it (blocking ones in their entry point,
// nonblocking ones held in the progress loop), so that every rank plans them alike. Rates the user
// gave, and the defaults kept where nothing is measured (coll_themis_calibration_seconds 0), are
// the user's word: never revised.
#pragma once

#include "coll_themis_prelude.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "coll_themis.h"
#include "coll_themis_agreement.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_log.h"
#include "engine.h"
#include "plan.h"
#include "rate_refiner.h"
#include "scheduler.h"

namespace themis {

class Call;
class Context;

// The refinement's settings, asked in the set-up's second round (coll_themis_agreement.h):
// every rank must count the same windows and decide alike, so ranks given different values
// all go without (the event mismatch).
class RefineQuestion {
  public:
    void ask(Agreement &agreement);
    // After the agreement: the refiner of a communicator planned from `rates`, or nullptr:
    // refinement off (either parameter 0), no measured or cached rate to revise, or the ranks
    // given different settings (then `said` gets the event mismatch).
    std::unique_ptr<RateRefiner> settle(const Agreement &agreement, const CalibratedTopology &rates,
                                        std::optional<LogEvent> &said) const;

  private:
    Agreement::Slot same_calls_ = 0, same_threshold_ = 0;
};

// The refiner of a communicator whose settings were agreed before (an inheriting one).
std::unique_ptr<RateRefiner> make_refiner(const CalibratedTopology &rates);

// The rules of evidence (which calls tell the links' rates) are the core's: rate_refiner.h.

// The rate refinement of one running communicator, a session its Context owns: it counts the
// calls into windows, reads the dimensions' busy time around the calls that give evidence
// (a blocking call alone on the engine, or a nonblocking one alone and driven all along),
// has the ranks agree on the evidence at each window's end, and revises the rates alike.
// The Context calls it under its engine lock.
class Refinement {
  public:
    Refinement() = default;
    // An agreement still in flight writes into this session: every rank started it with the
    // call that ended the window, so it completes.
    ~Refinement();
    Refinement(const Refinement &) = delete;
    Refinement &operator=(const Refinement &) = delete;

    // Starts again (set-up, or a spare taken over): module `m`'s communicator, revising with
    // `refiner` (nullptr: off) the measured rates `rates`, reading `engine`'s busy time.
    void reset(mca_coll_themis_module_t *m, const CalibratedTopology &rates,
               std::unique_ptr<RateRefiner> refiner, const Engine &engine);
    bool on() const { return refiner_ != nullptr; }
    // No agreement in flight and no call waiting for one.
    bool idle() const { return !agreement_ && !pending_ && waiting_.empty(); }

    // ---- Blocking calls.
    // Before a blocking call; `alone`: nothing else in flight on the engine.
    void before_blocking(bool alone);
    // After it (its plan `plan` on `topo`): counted; true when it ended a window, and then
    // the caller has the ranks agree on evidence() and hands the sums to the Context's
    // revise_rates() (refine_rates()).
    bool after_blocking(bool alone, const Topology &topo, const Plan &plan);
    // This rank's evidence of the window that just ended (rate_refiner.h).
    const std::vector<double> &evidence() { return refiner_->evidence(); }

    // ---- Nonblocking calls.
    // Any call began on the engine: a call in flight beside another gives no evidence.
    void call_began() { sole_ = nullptr; }
    // `call` (planned as `plan`) began, `alone` on the engine: counted, watched for
    // evidence while alone; when it ends a window, the ranks' agreement starts.
    void nonblocking_began(const Call *call, const Plan &plan, bool alone);
    // At each drive of `call`; `done`: complete, its evidence then added.
    void driven(const Call *call, const Topology &topo, const Plan &plan, bool done) {
        if (sole_ == call) watch_sole(topo, plan, done);
    }
    // `call` leaves the engine (complete or not).
    void left(const Call *call);
    // Whether the agreement of a window is in flight: the calls that start meanwhile wait.
    bool agreeing() const { return agreement_ != nullptr || pending_; }
    // The calls waiting for it, in the order they came (the Context's).
    std::vector<Call *> &waiting() { return waiting_; }
    // The agreed sums once the agreement is complete (then no longer agreeing); nullptr while
    // it runs or when there is none. An agreement that failed, or could not start, sums to
    // nothing: nothing is revised.
    const std::vector<double> *poll();

    // The revised topology of `current` from the ranks' summed evidence, if any dimension is
    // off (verbose 1: event "rates"); kept where the measured rates were kept.
    std::optional<Topology> revise(const std::vector<double> &agreed, const Topology &current,
                                   ompi_communicator_t *comm);

  private:
    // Every dimension's busy seconds so far; those since `before`.
    const std::vector<double> &busy_now();
    const std::vector<double> &busy_since(const std::vector<double> &before);
    static double seconds_since(std::chrono::steady_clock::time_point then);
    void watch_sole(const Topology &topo, const Plan &plan, bool done);

    mca_coll_themis_module_t *module_ = nullptr;
    std::unique_ptr<RateRefiner> refiner_;
    RatesKept rates_kept_; // where the revised rates replace the measured ones
    const Engine *engine_ = nullptr;
    // Per dimension: the factor busy readings are taken at; 1 but in tests
    // (THEMIS_TEST_BUSY_SCALE, read at reset: a dimension slower than its rates).
    std::vector<double> busy_scale_;
    long calls_ = 0;                      // calls counted
    ompi_request_t *agreement_ = nullptr; // in flight
    bool pending_ = false;                // ended a window whose agreement could not start
    std::vector<double> agreement_in_, agreement_out_;
    std::vector<Call *> waiting_;
    // Per dimension: busy seconds before a blocking call, the latest reading, since a call;
    // when the blocking call began.
    std::vector<double> busy_before_, busy_now_, busy_measured_;
    std::chrono::steady_clock::time_point began_;
    // The nonblocking call alone on the engine since it began, if any: the busy seconds then,
    // when it began, its last drive, the longest gap between two drives so far.
    const Call *sole_ = nullptr;
    std::vector<double> sole_busy_before_;
    std::chrono::steady_clock::time_point sole_began_, sole_last_drive_;
    double sole_longest_gap_ = 0;
};

// Collective, after a blocking call whose Context::run() ended a window: the ranks sum their
// evidence and revise the rates alike.
void refine_rates(mca_coll_themis_module_t *m, Context &ctx);

} // namespace themis
