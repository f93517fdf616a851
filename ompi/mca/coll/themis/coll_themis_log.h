/* coll_themis_log.h: coll/themis's verbose output. Two kinds of lines, both through
 * Open MPI's output stream of the component, at coll_themis_verbose >= their level:
 *
 *  - events, "coll:themis:<event> key=value ...", which tests and tools read: an interface,
 *    specified in one place, docs/log-events.md (format, events, keys, levels). Every one is
 *    written by themis::LogEvent::emit (C: mca_coll_themis_log_event, which calls it), and
 *    every test that reads events checks the lines it saw against that spec
 *    (test/common/check_event_spec.py): an event or key added here is added there;
 *  - human lines, "coll:themis: comm NAME (cid N) rank R: TEXT" (themis::say): free text
 *    that may change at any time; nothing may parse them.
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
