// coll_themis_log.cpp: the component's verbose lines, events and human (coll_themis_log.h).
#include "coll_themis_params.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "opal/util/output.h"

namespace themis {

namespace {

// A value as the event line writes it: bare, or quoted where a reader could not tell
// where a bare one ends.
std::string quoted_if_needed(const std::string &value) {
    bool bare = !value.empty();
    for (unsigned char c : value)
        if (c <= ' ' || c == '"' || c == '\\' || c == 0x7f) bare = false;
    if (bare) return value;
    std::string out = "\"";
    for (unsigned char c : value) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < ' ' || c == 0x7f) {
            out += ' '; // no other control character in a line
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

} // namespace

bool log_enabled(int level) { return params().verbose >= level; }

LogEvent &LogEvent::add(const char *key, const std::string &value) {
    keys_.emplace_back(key, value);
    return *this;
}

LogEvent &LogEvent::add(const char *key, long long value) {
    return add(key, std::to_string(value));
}

LogEvent &LogEvent::add(const char *key, unsigned long long value) {
    return add(key, std::to_string(value));
}

LogEvent &LogEvent::add(const char *key, double value, const char *format) {
    char text[64];
    snprintf(text, sizeof text, format, value);
    return add(key, std::string(text));
}

std::string LogEvent::line(ompi_communicator_t *comm) const {
    std::string text = "coll:themis:" + event_;
    auto put = [&](const std::string &key, const std::string &value) {
        text += " " + key + "=" + quoted_if_needed(value);
    };
    if (comm != nullptr) {
        put("comm", comm->c_name);
        put("cid", std::to_string(themis_comm_id(comm)));
        put("rank", std::to_string(ompi_comm_rank(comm)));
    }
    for (const auto &kv : keys_) put(kv.first, kv.second);
    return text;
}

void LogEvent::emit(int level, ompi_communicator_t *comm) const {
    if (!log_enabled(level)) return;
    opal_output_verbose(level, params().output, "%s", line(comm).c_str());
}

void say(int level, ompi_communicator_t *comm, const std::string &text) {
    opal_output_verbose(level, params().output, "coll:themis: comm %s (cid %u) rank %d: %s",
                        comm->c_name, themis_comm_id(comm), ompi_comm_rank(comm), text.c_str());
}

} // namespace themis

extern "C" void mca_coll_themis_log_event(int level, const char *event, ompi_communicator_t *comm,
                                          ...) {
    if (!themis::log_enabled(level)) return;
    themis::LogEvent line(event);
    va_list ap;
    va_start(ap, comm);
    while (const char *key = va_arg(ap, const char *)) {
        const char *value = va_arg(ap, const char *);
        line.add(key, value ? value : "");
    }
    va_end(ap);
    line.emit(level, comm);
}

extern "C" bool mca_coll_themis_first_time(const char *topic) {
    static std::mutex lock;
    static std::set<std::string> *asked = new std::set<std::string>; // lives to the end
    std::lock_guard<std::mutex> hold(lock);
    return asked->insert(topic).second;
}
