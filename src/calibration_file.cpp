// calibration_file: measured rates kept in a file (see calibration_file.h).
#include "calibration_file.h"

#include "fnv1a.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <sstream>

namespace themis {

namespace {

const char *const header = "themis-calibration 4";
// Formats 2 (topology entries only) and 3 (and grids, no node transport choices) are read as
// they are and written back as format 4.
const char *const header_without_grids = "themis-calibration 2";
const char *const header_without_node_choices = "themis-calibration 3";
// Format 1 kept rates measured without the fill curve: such a file holds no entry this
// version uses (measured again, then replaced whole), and is no error.
const char *const header_without_fill = "themis-calibration 1";
const char *const time_format = "%Y-%m-%dT%H:%M:%SZ";
// Entries are about a hundred bytes: anything larger is no calibration file (and a
// device such as /dev/zero never ends).
const size_t max_file_bytes = 16 << 20;

// FNV-1a over whole fields. This key must stay stable across builds, so it hashes text,
// never binary values.
class FieldHash {
  public:
    void add(const std::string &field) {
        hash_.bytes(field.data(), field.size());
        hash_.value('\0'); // a terminator, so that "ab","c" and "a","bc" differ
    }
    uint64_t value() const { return hash_.digest(); }

  private:
    Fnv1a hash_;
};

std::string sizes_text(const Topology &topo) {
    std::string text;
    for (int d = 0; d < topo.num_dims(); ++d)
        text += (d ? "x" : "") + std::to_string(topo.dim(d).peers);
    return text;
}

bool same_sizes_and_algorithms(const Topology &a, const Topology &b) {
    if (a.num_dims() != b.num_dims()) return false;
    for (int d = 0; d < a.num_dims(); ++d)
        if (a.dim(d).peers != b.dim(d).peers || a.dim(d).algorithm != b.dim(d).algorithm)
            return false;
    return true;
}

std::string utc_text(std::time_t t) {
    std::tm utc{};
    char text[32];
    if (!gmtime_r(&t, &utc) || std::strftime(text, sizeof text, time_format, &utc) == 0)
        throw CalibrationFileError("cannot format the time " + std::to_string(t));
    return text;
}

bool is_utc_text(const std::string &text) {
    std::tm utc{};
    const char *end = strptime(text.c_str(), time_format, &utc);
    return end && *end == '\0';
}

bool is_grid_key(const std::string &key) { return key.rfind("hosts", 0) == 0; }
const char *const node_key_part = "-node-";
bool is_node_key(const std::string &key) { return key.find(node_key_part) != std::string::npos; }

// Splits `text` at every `separator` (empty fields kept).
std::vector<std::string> split(const std::string &text, char separator) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at; (at = text.find(separator, start)) != std::string::npos; start = at + 1)
        parts.push_back(text.substr(start, at - start));
    parts.push_back(text.substr(start));
    return parts;
}

// A whole non-negative decimal number below 2^20; throws std::invalid_argument.
int small_number(const std::string &text) {
    if (text.empty() || text.size() > 7 ||
        text.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument("\"" + text + "\" is no number");
    const int n = std::stoi(text);
    if (n >= 1 << 20) throw std::invalid_argument(text + " is too large");
    return n;
}

// GRID: "grid=none" (a finished search found no grid) or "grid=SIZES:COORDS", e.g.
// "grid=2x2:0.0,1.0,0.1,1.1": the sizes, then every node's coordinate (nodes in the order
// of their host names). Throws std::invalid_argument.
GridResult parse_grid_text(const std::string &text) {
    const std::string prefix = "grid=";
    if (text.rfind(prefix, 0) != 0) throw std::invalid_argument("expected grid=...");
    GridResult grid;
    const std::string body = text.substr(prefix.size());
    if (body == "none") return grid;
    const std::vector<std::string> halves = split(body, ':');
    if (halves.size() != 2) throw std::invalid_argument("expected grid=SIZES:COORDS");
    size_t nodes = 1;
    for (const std::string &size : split(halves[0], 'x')) {
        grid.sizes.push_back(small_number(size));
        if (grid.sizes.back() < 2) throw std::invalid_argument("a dimension of fewer than 2");
        nodes *= size_t(grid.sizes.back());
        if (nodes > 1 << 20) throw std::invalid_argument("too many nodes");
    }
    std::set<std::vector<int>> seen;
    for (const std::string &node : split(halves[1], ',')) {
        std::vector<int> coord;
        for (const std::string &c : split(node, '.')) coord.push_back(small_number(c));
        if (coord.size() != grid.sizes.size())
            throw std::invalid_argument("coordinate " + node + " has not one number per dimension");
        for (size_t d = 0; d < coord.size(); ++d)
            if (coord[d] >= grid.sizes[d])
                throw std::invalid_argument("coordinate " + node + " outside the grid");
        if (!seen.insert(coord).second)
            throw std::invalid_argument("coordinate " + node + " given twice");
        grid.coords.push_back(coord);
    }
    if (grid.coords.size() != nodes)
        throw std::invalid_argument(std::to_string(grid.coords.size()) + " coordinates for " +
                                    std::to_string(nodes) + " nodes");
    grid.found = true;
    return grid;
}

// NODE: "cma=none" or "cma=0,2": the dimensions that run single-copy. Throws
// std::invalid_argument.
std::vector<int> parse_node_text(const std::string &text) {
    const std::string prefix = "cma=";
    if (text.rfind(prefix, 0) != 0) throw std::invalid_argument("expected cma=...");
    const std::string body = text.substr(prefix.size());
    std::vector<int> dims;
    if (body == "none") return dims;
    for (const std::string &d : split(body, ',')) {
        dims.push_back(small_number(d));
        if (dims.size() > 1 && dims.back() <= dims[dims.size() - 2])
            throw std::invalid_argument("dimensions not in increasing order");
    }
    return dims;
}

std::string with_errno(const std::string &what) { return what + ": " + std::strerror(errno); }

// The file's contents; nullopt when it does not exist.
std::optional<std::string> read_text(const std::string &path) {
    std::unique_ptr<std::FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "rb"),
                                                            &std::fclose);
    if (!file) {
        if (errno == ENOENT) return std::nullopt;
        throw CalibrationFileError(with_errno(path + ": cannot open"));
    }
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
        text.append(buffer, n);
        if (text.size() > max_file_bytes)
            throw CalibrationFileError(path + ": larger than " + std::to_string(max_file_bytes) +
                                       " bytes, not a calibration file");
    }
    if (std::ferror(file.get())) throw CalibrationFileError(with_errno(path + ": cannot read"));
    return text;
}

// Every field between single spaces, empty ones included.
std::vector<std::string> split_fields(const std::string &line) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t space; (space = line.find(' ', start)) != std::string::npos; start = space + 1)
        fields.push_back(line.substr(start, space - start));
    fields.push_back(line.substr(start));
    return fields;
}

// One entry line; throws CalibrationFileError naming `where` (path:line).
std::pair<std::string, CalibrationEntry> parse_entry(const std::string &line,
                                                     const std::string &where) {
    const std::vector<std::string> fields = split_fields(line);
    if (fields.size() != 3 || std::find(fields.begin(), fields.end(), "") != fields.end())
        throw CalibrationFileError(where +
                                   ": expected \"KEY SPEC WRITTEN\" separated by single spaces");
    if (is_grid_key(fields[0])) {
        try {
            parse_grid_text(fields[1]);
        } catch (const std::invalid_argument &e) {
            throw CalibrationFileError(where + ": the grid does not parse: " + e.what());
        }
    } else if (is_node_key(fields[0])) {
        try {
            parse_node_text(fields[1]);
        } catch (const std::invalid_argument &e) {
            throw CalibrationFileError(where + ": the node transport does not parse: " + e.what());
        }
    } else {
        try {
            parse_topology(fields[1]);
        } catch (const SpecError &e) {
            throw CalibrationFileError(where + ": the spec does not parse: " + e.what());
        }
    }
    if (!is_utc_text(fields[2]))
        throw CalibrationFileError(where + ": expected a UTC time such as " +
                                   "2024-05-01T12:34:56Z, got \"" + fields[2] + "\"");
    return {fields[0], CalibrationEntry{fields[1], fields[2]}};
}

// The entries of `text`; a line that does not parse is left out and described in `damaged`
// (path:line: what is wrong), as is every line of a file of another format or version.
CalibrationEntries parse_entries(const std::string &text, const std::string &path,
                                 std::vector<std::string> &damaged) {
    CalibrationEntries entries;
    std::istringstream in(text);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        const std::string where = path + ":" + std::to_string(number);
        if (number == 1) {
            if (line == header_without_fill) return CalibrationEntries();
            if (line != header && line != header_without_grids &&
                line != header_without_node_choices) {
                damaged.push_back(where + ": expected the header \"" + header +
                                  "\" (another format or version?): the file's entries are "
                                  "not used");
                return CalibrationEntries();
            }
            continue;
        }
        try {
            auto [key, entry] = parse_entry(line, where);
            if (!entries.try_emplace(key, std::move(entry)).second)
                throw CalibrationFileError(where + ": a second entry for the key " + key);
        } catch (const CalibrationFileError &e) {
            damaged.push_back(e.what());
        }
    }
    return entries;
}

std::string format_entries(const CalibrationEntries &entries) {
    std::string text = std::string(header) + "\n";
    for (const auto &[key, entry] : entries)
        text += key + " " + entry.spec + " " + entry.written + "\n";
    return text;
}

// A new, empty file next to `path` (so that renaming it over `path` stays on one file
// system), created with O_EXCL under a name no other writer picks; its mode follows the
// umask, as the file's would.
std::pair<int, std::string> create_temporary(const std::string &path) {
    std::random_device random;
    const int attempts = 100; // O_EXCL fails only for a name taken: try another
    for (int attempt = 1;; ++attempt) {
        std::ostringstream name;
        name << path << ".tmp." << getpid() << "." << std::hex << random();
        const int fd = ::open(name.str().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) return {fd, name.str()};
        if (errno != EEXIST || attempt == attempts)
            throw CalibrationFileError(with_errno(path + ": cannot create " + name.str()));
    }
}

bool write_all(int fd, const std::string &text) {
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno != EINTR) return false;
        if (n > 0) done += static_cast<size_t>(n);
    }
    return true;
}

// Replaces the file's contents at once: readers see the old file or the new one.
void replace_file(const std::string &path, const std::string &text) {
    const auto [fd, temporary] = create_temporary(path);
    std::string failure;
    if (!write_all(fd, text)) failure = with_errno("cannot write " + temporary);
    // On disk before the rename: a crash then must not leave an empty file in its place.
    else if (::fsync(fd) != 0)
        failure = with_errno("cannot flush " + temporary);
    if (::close(fd) != 0 && failure.empty()) failure = with_errno("cannot close " + temporary);
    if (failure.empty() && std::rename(temporary.c_str(), path.c_str()) != 0)
        failure = with_errno("cannot rename " + temporary + " over it");
    if (failure.empty()) return;
    ::unlink(temporary.c_str());
    throw CalibrationFileError(path + ": " + failure);
}

// Holds an advisory lock on PATH.lock while it lives, so that writers of one file (one per
// node, on a home directory that many hosts share) take turns reading and replacing it. A
// file system that cannot lock, or a lock held too long (a writer that hangs), leaves the
// writer unlocked: the rename still keeps every reader's file whole, and a lost entry costs
// a measurement in a later job.
class FileLock {
  public:
    explicit FileLock(const std::string &path) {
        fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd_ < 0) return;
        struct flock lock {};
        lock.l_type = F_WRLCK;
        lock.l_whence = SEEK_SET;
#ifdef F_OFD_SETLK
        // Open file description locks: between threads of a process too, and not dropped when
        // the process closes another descriptor of the file.
        const int set_lock = F_OFD_SETLK;
#else
        const int set_lock = F_SETLK;
#endif
        for (int waited_ms = 0; waited_ms < kPatienceMs; waited_ms += kPollMs) {
            if (::fcntl(fd_, set_lock, &lock) == 0) return;
            if (errno != EACCES && errno != EAGAIN && errno != EINTR) break;
            ::usleep(kPollMs * 1000);
        }
        ::close(fd_);
        fd_ = -1;
    }
    ~FileLock() {
        if (fd_ >= 0) ::close(fd_); // releases the lock
    }
    FileLock(const FileLock &) = delete;
    FileLock &operator=(const FileLock &) = delete;

  private:
    static constexpr int kPatienceMs = 2000, kPollMs = 5;
    int fd_ = -1;
};

void write_entry(const std::string &path, const std::string &key, const std::string &value,
                 std::time_t written) {
    if (key.empty() || key.find_first_of(" \n") != std::string::npos)
        throw std::invalid_argument("calibration key \"" + key + "\" is empty or holds a space");
    const FileLock lock(path);
    CalibrationEntries entries;
    std::vector<std::string> damaged; // lines left out: the file written drops them
    if (const std::optional<std::string> text = read_text(path))
        entries = parse_entries(*text, path, damaged);
    const auto kept = entries.find(key);
    // Another node's writer (or an earlier job) kept the same already: nothing to write.
    if (kept != entries.end() && kept->second.spec == value && damaged.empty()) return;
    entries[key] = CalibrationEntry{value, utc_text(written)};
    replace_file(path, format_entries(entries));
}

// 16 hexadecimal digits.
std::string hex_of(uint64_t value) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(value));
    return hex;
}

} // namespace

std::string calibration_key(const Topology &layout,
                            const std::vector<std::string> &host_at_position) {
    if (host_at_position.size() != static_cast<size_t>(layout.size()))
        throw std::invalid_argument("calibration_key: " + std::to_string(host_at_position.size()) +
                                    " hostnames for " + std::to_string(layout.size()) +
                                    " positions");
    FieldHash hash;
    hash.add(sizes_text(layout));
    for (const Dimension &d : layout.dims()) hash.add(algorithm_name(d.algorithm));
    for (const std::string &host : host_at_position) hash.add(host);
    return sizes_text(layout) + "-" + hex_of(hash.value());
}

CalibrationEntries read_calibration_file(const std::string &path,
                                         std::vector<std::string> *damaged) {
    const std::optional<std::string> text = read_text(path);
    std::vector<std::string> left_out;
    CalibrationEntries entries = text ? parse_entries(*text, path, left_out) : CalibrationEntries();
    if (damaged) *damaged = std::move(left_out);
    return entries;
}

void write_calibration_entry(const std::string &path, const std::string &key,
                             const Topology &measured, std::time_t written) {
    if (is_grid_key(key)) throw std::invalid_argument("\"" + key + "\" is a grid's key");
    write_entry(path, key, measured.to_spec(), written);
}

std::string node_choice_key(const std::string &layout_key, const std::string &transport_name) {
    return layout_key + node_key_part + transport_name;
}

void write_node_choice(const std::string &path, const std::string &key,
                       const std::vector<bool> &single_copy, std::time_t written) {
    if (!is_node_key(key)) throw std::invalid_argument("\"" + key + "\" is no node choice's key");
    std::string dims;
    for (size_t d = 0; d < single_copy.size(); ++d)
        if (single_copy[d]) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    write_entry(path, key, "cma=" + (dims.empty() ? std::string("none") : dims), written);
}

std::optional<std::vector<bool>> cached_node_choice(const CalibrationEntries &entries,
                                                    const std::string &key, int dimensions) {
    const auto found = entries.find(key);
    if (found == entries.end()) return std::nullopt;
    std::vector<bool> single_copy(size_t(dimensions), false);
    for (int d : parse_node_text(found->second.spec)) {
        if (d >= dimensions) return std::nullopt; // another layout's
        single_copy[size_t(d)] = true;
    }
    return single_copy;
}

std::string default_cache_path(const std::string &xdg_cache_home, const std::string &home) {
    // The XDG Base Directory convention: $XDG_CACHE_HOME when it is an absolute path, else
    // ~/.cache.
    if (!xdg_cache_home.empty() && xdg_cache_home[0] == '/')
        return xdg_cache_home + "/coll-themis/calibration";
    if (!home.empty() && home[0] == '/') return home + "/.cache/coll-themis/calibration";
    return "";
}

void make_parent_directories(const std::string &path) {
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
        const std::string dir = path.substr(0, slash);
        if (::mkdir(dir.c_str(), 0700) == 0) continue;
        struct stat there {};
        if (errno != EEXIST || ::stat(dir.c_str(), &there) != 0 || !S_ISDIR(there.st_mode))
            throw CalibrationFileError(with_errno(path + ": cannot create the directory " + dir));
    }
}

std::string grid_key(std::vector<std::string> hosts) {
    std::sort(hosts.begin(), hosts.end());
    FieldHash hash;
    for (const std::string &host : hosts) hash.add(host);
    return "hosts" + std::to_string(hosts.size()) + "-" + hex_of(hash.value());
}

void write_grid_entry(const std::string &path, const std::string &key, const GridResult &grid,
                      std::time_t written) {
    if (!is_grid_key(key)) throw std::invalid_argument("\"" + key + "\" is no grid's key");
    write_entry(path, key, grid_text(grid), written);
}

std::optional<GridResult> cached_grid(const CalibrationEntries &entries, const std::string &key,
                                      int nodes) {
    const auto found = entries.find(key);
    if (found == entries.end()) return std::nullopt;
    GridResult grid = parse_grid_text(found->second.spec);
    if (grid.found && grid.coords.size() != size_t(nodes)) return std::nullopt;
    return grid;
}

std::optional<Topology> cached_topology(const CalibrationEntries &entries, const std::string &key,
                                        const Topology &layout) {
    const auto found = entries.find(key);
    if (found == entries.end()) return std::nullopt;
    const Topology cached = parse_topology(found->second.spec);
    if (!same_sizes_and_algorithms(cached, layout)) return std::nullopt;
    // The file gives the rates; what the planner may run is the layout's (a file written
    // before alternatives were printed holds none).
    std::vector<Dimension> dims = layout.dims();
    for (size_t d = 0; d < dims.size(); ++d) {
        dims[d].bandwidth = cached.dim(int(d)).bandwidth;
        dims[d].latency = cached.dim(int(d)).latency;
        dims[d].fill = cached.dim(int(d)).fill;
    }
    return Topology(std::move(dims));
}

std::string grid_text(const GridResult &grid) {
    if (!grid.found) return "grid=none";
    std::string text = "grid=";
    for (size_t d = 0; d < grid.sizes.size(); ++d)
        text += (d ? "x" : "") + std::to_string(grid.sizes[d]);
    for (size_t n = 0; n < grid.coords.size(); ++n) {
        text += n ? ',' : ':';
        for (size_t d = 0; d < grid.coords[n].size(); ++d)
            text += (d ? "." : "") + std::to_string(grid.coords[n][d]);
    }
    return text;
}

} // namespace themis
