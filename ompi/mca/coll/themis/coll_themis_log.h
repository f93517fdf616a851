/* coll_themis_log.h: coll/themis's verbose output. Two kinds of lines, both through
 * Open MPI's output stream of the component, at coll_themis_verbose >= their level:
 *
 *  - events, which tests and tools read: an interface, documented here and in
 *    docs/log-events.md (keep the two alike). Every one is written by one function,
 *    themis::LogEvent::emit (C: mca_coll_themis_log_event, which calls it);
 *  - human lines, "coll:themis: comm NAME (cid N) rank R: TEXT" (themis::say): free text
 *    that may change at any time; nothing may parse them.
 *
 * EVENT LINES
 *
 *   coll:themis:<event> key=value key=value ...
 *
 * (Open MPI may put "[host:pid] " before it.) A key is [a-z0-9_]+. A value is written as
 * it is unless it is empty or holds a blank, a double quote, a backslash or a control
 * character; then it is written in double quotes, with \" \\ \n \t inside. Lists are
 * comma-separated ("0,1"); "none" is the empty list. Events about a communicator begin
 * with comm (its name, MPI_Comm_set_name's), cid (its context id) and rank (this
 * process's rank in it). An event's keys listed here are always there unless marked
 * [optional]; others may be added to an event later: look keys up by name, ignore the
 * unknown ones. A key's meaning never changes; an event or key that would change gets a
 * new name instead.
 *
 * Level 1, once per communicator, when Open MPI enables themis on it (before any call):
 *   below           allreduce=COMPONENT ... allgather_init=COMPONENT
 *                                                 the component running each of themis's
 *                                                 twelve collectives below it (where a
 *                                                 call themis does not take goes)
 *
 * Level 1, once per communicator, while it is set up (its first eligible call):
 *   setup           buffers=host|device           the set-up starts
 *   grid            source=given|topo_file|slurm|probe|none dims=NxN...|SPEC|none seconds=S
 *                   [probes=N] [kept=process|file] [coords=HOST:C0.C1...,...] [why=TEXT]
 *                                                 where the hosts' grid comes from, first
 *                                                 that applies: coll_themis_dims given (dims:
 *                                                 the spec), coll_themis_topo_file, Slurm's
 *                                                 switch tree, probing (probes measured, 0:
 *                                                 remembered, kept: where, this process or
 *                                                 coll_themis_calibration_file); none: node
 *                                                 level x nodes, and why; coords: each host's
 *                                                 coordinates
 *   declined        reason=... [why=TEXT]         themis leaves the communicator to the
 *                                                 module below it (previous module), on
 *                                                 every rank alike:
 *       intercommunicator | negative_priority | single_rank   (when Open MPI asks, before
 *                                                 any call; the others at the set-up)
 *       nothing_below   slots=LIST                (when Open MPI enables themis) the listed
 *                                                 slots have no module below
 *       bad_dims        dims=SPEC why=TEXT        coll_themis_dims is malformed
 *       layout          why=TEXT                  the spec does not fit the communicator
 *       other_rank                                another rank declined
 *       one_dimension   topology=SPEC why=TEXT    dims=auto found one dimension
 *       setup_failed    where=here|other_rank [why=TEXT (where=here)]
 *   held            calls=N on=themis|below       N calls issued while the set-up ran
 *                                                 start now, on themis or the module below
 *   transport       transport=pml|ucx asked=auto|pml|ucx asked_by=coll_themis_transport|info
 *                   [ucx_unusable=TEXT|other_rank] why UCX was asked for and not taken
 *                   [device_memory=moved|staged]  (ucx) whether it moves device memory
 *                   [parts=D:BYTES,...|whole]     (pml) largest message part per dimension
 *   mismatch        param=NAME fallback=whole_messages|transport|no_refinement
 *                                                 a parameter differs between the ranks;
 *                                                 all take the fallback
 *   node_transport  cma=LIST|none source=asked|measured|remembered|unusable|failed
 *                   node-local dimensions run by single copy (cma), and why:
 *                   asked for; measured now (with, per node dimension D, dimD=cma|transport
 *                   dimD_cma_ms=T dimD_transport_ms=T of an allreduce_mib=M All-Reduce);
 *                   as measured before for these processes; unusable (node_dims=LIST
 *                   why=TEXT); failed (where=here|other_rank [why=TEXT]). No event where
 *                   the node dimensions simply stay on the transport (asked for, or none).
 *   device_direct   ipc=LIST|none [others=pinned|transport] [why=TEXT|other_rank (none)]
 *                                                 node dimensions by CUDA IPC; the others
 *                                                 through pinned host memory or by the
 *                                                 transport (CUDA builds, device buffers)
 *   calibration     seconds=S connect_seconds=S mb_sent=MB
 *                                                 the rates were measured, at this cost
 *   selected        dims=SPEC bw_source=LIST lat_source=LIST levels=LIST
 *                                                 themis runs the communicator: its
 *                                                 dimensions with the rates it plans with
 *                                                 (SPEC as coll_themis_dims writes it), where
 *                                                 each came from (given, measured, cached,
 *                                                 default; one per dimension), the levels'
 *                                                 names
 *   setup_end       state=ready|declined source=new|inherited|spare rounds=N seconds=S
 *                                                 the set-up ended: where it came from (made
 *                                                 now, an earlier communicator's of the same
 *                                                 processes, a freed one's context taken
 *                                                 over: coll_themis_inherit.h), its rounds
 *                                                 (collective exchanges, the private
 *                                                 duplicate's id agreement not counted) and
 *                                                 this rank's seconds from its start
 * Level 1, while a communicator runs:
 *   rates           dims=SPEC factors=F0,F1,... calls=N why=TEXT
 *                                                 the measured rates were revised (the new
 *                                                 ones in SPEC, coll_themis_refine.h) after
 *                                                 N blocking calls on themis
 *   (coll_themis_min_bytes unset, coll_themis_crossover.h:)
 *   crossover       coll=allreduce|reduce_scatter|reduce_scatter_block|allgather bytes=B
 *                   themis_ms=T below_ms=T runs=themis|below decided_by=trial|bound
 *                   [below_bound_ms=T]
 *                                                 a size bin is decided (B: its smallest
 *                                                 size): the agreed times, where its calls
 *                                                 run from now on, and whether a trial or
 *                                                 the module below's least time (known where
 *                                                 the rates are) decided it
 * Level 2:
 *   stats           coll=SLOT calls=N themis=M    when the communicator is freed (or at
 *                                                 MPI_Finalize): of N calls of SLOT
 *                                                 (allreduce ... allgather_init) on it, M
 *                                                 ran on themis; only slots called
 * Level 5:
 *   staging         budget=B peak_bytes=B loads=N load_bytes=B evictions=N eviction_bytes=B
 *                   stored_bytes=B                a staged device-buffer call's use of
 *                                                 pinned host memory (no comm, cid, rank)
 *
 * Not an event yet: the plan line of every call at level 5 ("coll:themis: comm ... rank R:
 * allreduce 16777216 B: 64 chunks, policy themis/scf K=4, ..."), written by
 * Context::begin (coll_themis_context.cpp) and still read by three test tools; it is to
 * become an event "plan" (docs/log-events.md, "Not events").
 */
#ifndef MCA_COLL_THEMIS_LOG_H
#define MCA_COLL_THEMIS_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

struct ompi_communicator_t;

/* Writes the event line "coll:themis:EVENT [comm= cid= rank=] key=value ..." at verbosity
 * LEVEL: after COMM (NULL: no comm, cid, rank), pairs of strings KEY, VALUE ended by a
 * NULL key. */
void mca_coll_themis_log_event(int level, const char *event, struct ompi_communicator_t *comm, ...);

#ifdef __cplusplus
}

#include <string>
#include <utility>
#include <vector>

namespace themis {

// One event line, built key by key, then written by emit().
class LogEvent {
  public:
    explicit LogEvent(const char *event) : event_(event) {}
    LogEvent &add(const char *key, const std::string &value);
    LogEvent &add(const char *key, const char *value) { return add(key, std::string(value)); }
    LogEvent &add(const char *key, long long value);
    LogEvent &add(const char *key, unsigned long long value);
    LogEvent &add(const char *key, int value) { return add(key, (long long)value); }
    LogEvent &add(const char *key, size_t value) { return add(key, (unsigned long long)value); }
    // A number in printf's FORMAT (for one double).
    LogEvent &add(const char *key, double value, const char *format);
    const std::string &name() const { return event_; }
    // The line: "coll:themis:EVENT" and the keys (comm, cid, rank first where comm is given).
    std::string line(struct ompi_communicator_t *comm) const;
    // Writes the line at verbosity `level`: the one place every event line comes from.
    void emit(int level, struct ompi_communicator_t *comm) const;

  private:
    std::string event_;
    std::vector<std::pair<std::string, std::string>> keys_;
};

// A human line about `comm` from this rank, at verbosity `level` (free text: see above).
void say(int level, struct ompi_communicator_t *comm, const std::string &text);

// Whether lines of `level` are written (for callers that would compute a line's values).
bool log_enabled(int level);

} // namespace themis
#endif

#endif
