// topology: dimensions, rank <-> coordinates, and the user spec parser.
#include "topology.h"

#include "fnv1a.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>

namespace themis {

Topology::Topology(std::vector<Dimension> dims) : dims_(std::move(dims)) {
    stride_.resize(dims_.size());
    size_ = 1;
    for (size_t d = 0; d < dims_.size(); ++d) {
        stride_[d] = size_;
        size_ *= dims_[d].peers;
        if (!dims_[d].fill.empty()) dims_[d].fill = canonical_fill(std::move(dims_[d].fill));
    }
}

std::vector<double> canonical_fill(std::vector<double> curve) {
    while (curve.size() > 1 && curve.back() == curve[curve.size() - 2]) curve.pop_back();
    if (curve.size() == 1 && curve[0] == 1) curve.clear();
    return curve;
}

std::vector<int> Topology::coords(int rank) const {
    std::vector<int> c(dims_.size());
    for (size_t d = 0; d < dims_.size(); ++d) c[d] = coord(rank, static_cast<int>(d));
    return c;
}

int Topology::coord(int rank, int d) const { return (rank / stride_[d]) % dims_[d].peers; }

int Topology::rank_of(const std::vector<int> &c) const {
    int r = 0;
    for (size_t d = 0; d < dims_.size(); ++d) r += c[d] * stride_[d];
    return r;
}

int Topology::with_coord(int rank, int d, int value) const {
    return rank + (value - coord(rank, d)) * stride_[d];
}

double Topology::total_bandwidth() const {
    double sum = 0;
    for (const auto &dim : dims_)
        if (dim.peers > 1) sum += dim.bandwidth;
    return sum;
}

double Topology::broadcast_rate() const {
    const std::vector<int> active = active_dims();
    if (active.empty() || active.size() > 16) return active.empty() ? 0 : total_bandwidth();
    double least = total_bandwidth();
    for (uint32_t q = 1; q < (1u << active.size()); ++q) {
        double rate = 0, ranks = 1;
        for (size_t i = 0; i < active.size(); ++i) {
            const Dimension &dim = dims_[size_t(active[i])];
            if (q >> i & 1)
                rate += dim.bandwidth;
            else
                ranks *= dim.peers;
        }
        least = std::min(least, ranks * rate);
    }
    return least;
}

std::vector<int> Topology::active_dims() const {
    std::vector<int> active;
    for (int d = 0; d < num_dims(); ++d)
        if (dims_[size_t(d)].peers > 1) active.push_back(d);
    return active;
}

Topology Topology::without_latency() const {
    auto dims = dims_;
    for (auto &d : dims) d.latency = 0;
    return Topology(dims);
}

namespace {

// Shortest decimal text of `number` that gives back exactly `value` through `back`;
// without an exponent where one of up to 17 digits does.
template <typename Back> std::string shortest(double number, double value, Back back) {
    char buf[64];
    std::string with_exponent;
    for (int prec = 1; prec <= 17; ++prec) {
        snprintf(buf, sizeof buf, "%.*g", prec, number);
        if (back(buf) != value) continue;
        if (!strchr(buf, 'e')) return buf;
        if (with_exponent.empty()) with_exponent = buf;
    }
    return with_exponent;
}

// A unit the spec reads: value = number x multiplier / divisor (dividing keeps "5us"
// exactly 5e-6).
struct Unit {
    const char *name;
    double multiplier, divisor;
};

// `value` in the unit (among those where it is at least 1) whose text is shortest and
// parses back to exactly `value`, the larger unit first among equals: measured rates such
// as 12987500 B/s print as "103900kbps", not "103.89999999999999Mbps".
template <typename Parse>
std::string with_unit(double value, const std::vector<Unit> &units, Parse parse) {
    std::string best;
    for (const Unit &u : units) {
        const double number = value * u.divisor / u.multiplier;
        if (number < 1) continue;
        const std::string text = shortest(
            number, value, [&](const char *digits) { return parse(std::string(digits) + u.name); });
        if (!text.empty() && (best.empty() || text.size() + strlen(u.name) < best.size()))
            best = text + u.name;
    }
    if (!best.empty()) return best;
    // No scaled unit reads back exactly: the unscaled one always does.
    const Unit &plain =
        units.front().multiplier == 1 && units.front().divisor == 1 ? units.front() : units.back();
    return shortest(value, value, [](const char *digits) { return strtod(digits, nullptr); }) +
           plain.name;
}

} // namespace

std::string Topology::to_spec() const {
    static const std::vector<Unit> bw_units = {
        {"Tbps", 1e12, 8}, {"Gbps", 1e9, 8}, {"Mbps", 1e6, 8}, {"kbps", 1e3, 8}, {"B/s", 1, 1}};
    static const std::vector<Unit> lat_units = {
        {"s", 1, 1}, {"ms", 1, 1e3}, {"us", 1, 1e6}, {"ns", 1, 1e9}};
    std::ostringstream peers, bw, lat, alg, fill;
    bool any_fill = false;
    for (size_t d = 0; d < dims_.size(); ++d) {
        const char *sep = d ? "," : "";
        peers << (d ? "x" : "") << dims_[d].peers;
        bw << sep << with_unit(dims_[d].bandwidth, bw_units, parse_bandwidth);
        lat << sep
            << (dims_[d].latency == 0 ? std::string("0us")
                                      : with_unit(dims_[d].latency, lat_units, parse_latency));
        alg << sep << algorithm_text(dims_[d]);
        fill << sep << fill_text(dims_[d].fill);
        any_fill |= !dims_[d].fill.empty();
    }
    // fill= only where a curve is known: a spec without one reads as it did before curves.
    return peers.str() + ":bw=" + bw.str() + ":lat=" + lat.str() + ":alg=" + alg.str() +
           (any_fill ? ":fill=" + fill.str() : std::string());
}

std::string fill_text(const std::vector<double> &curve) {
    if (curve.empty()) return "1";
    std::string text;
    for (size_t i = 0; i < curve.size(); ++i)
        text += (i ? "/" : "") + shortest(curve[i], curve[i], [](const char *digits) {
                    return strtod(digits, nullptr);
                });
    return text;
}

uint64_t Topology::fingerprint() const {
    // The exact bits of every field.
    Fnv1a h;
    for (const auto &d : dims_) {
        h.value(d.peers);
        h.value(d.bandwidth);
        h.value(d.latency);
        h.value(static_cast<int>(d.algorithm));
        h.value(d.alternatives);
        // Only a known curve: topologies without one keep the fingerprints they had.
        if (!d.fill.empty()) {
            h.value(d.fill.size());
            for (double f : d.fill) h.value(f);
        }
    }
    return h.digest();
}

bool Topology::operator==(const Topology &o) const {
    if (dims_.size() != o.dims_.size()) return false;
    for (size_t d = 0; d < dims_.size(); ++d) {
        const auto &a = dims_[d], &b = o.dims_[d];
        if (a.peers != b.peers || a.bandwidth != b.bandwidth || a.latency != b.latency ||
            a.algorithm != b.algorithm || a.alternatives != b.alternatives || a.fill != b.fill)
            return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------
// Spec parsing

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

namespace {

std::string trim(const std::string &s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
    for (auto &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Splits "12.5Gbps" into the number and the unit; throws if there is no number.
std::pair<double, std::string> number_and_unit(const std::string &text, const char *what) {
    std::string t = trim(text);
    const char *begin = t.c_str();
    char *end = nullptr;
    double v = strtod(begin, &end);
    if (end == begin || t.empty())
        throw SpecError(std::string(what) + ": expected a number with an optional unit, got \"" +
                        text + "\"");
    if (!std::isfinite(v) || v < 0)
        throw SpecError(std::string(what) + ": expected a finite non-negative number, got \"" +
                        text + "\"");
    return {v, lower(trim(end))};
}

double scaled(const std::string &text, const char *what, const Unit *units, size_t n,
              const char *valid) {
    auto [v, unit] = number_and_unit(text, what);
    for (size_t i = 0; i < n; ++i) {
        if (unit != units[i].name) continue;
        // A finite number can still overflow with its unit (1e300 Tbps): infinity would
        // not print back as a spec, and no plan can use it.
        const double value = v * units[i].multiplier / units[i].divisor;
        if (!std::isfinite(value))
            throw SpecError(std::string(what) + ": too large, got \"" + text + "\"");
        return value;
    }
    throw SpecError(std::string(what) + ": unknown unit \"" + unit + "\" in \"" + text +
                    "\" (valid: " + valid + ")");
}

int parse_peers(const std::string &text, int dim) {
    std::string t = trim(text);
    std::string field = "dimension " + std::to_string(dim) + " peers";
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos)
        throw SpecError(field + ": expected a whole number >= 1, got \"" + text + "\"");
    long v = t.size() > 9 ? -1 : std::stol(t);
    if (v < 1 || v > (1 << 24))
        throw SpecError(field + ": expected a whole number from 1 to 16777216, got \"" + text +
                        "\"");
    return static_cast<int>(v);
}

// A per-dimension LIST: one value per dimension, or one value for all.
std::vector<std::string> per_dim_list(const std::string &key, const std::string &value, int ndims) {
    auto items = split(value, ',');
    if (items.size() == 1) return std::vector<std::string>(ndims, items[0]);
    if (static_cast<int>(items.size()) != ndims)
        throw SpecError("'" + key + "': expected 1 or " + std::to_string(ndims) +
                        " comma-separated values (one per dimension), got " +
                        std::to_string(items.size()));
    return items;
}

} // namespace

double parse_bandwidth(const std::string &text) {
    static const Unit units[] = {
        {"", 1e9, 8},      {"bps", 1, 8},    {"kbps", 1e3, 8},  {"mbps", 1e6, 8}, {"gbps", 1e9, 8},
        {"tbps", 1e12, 8}, {"mbit", 1e6, 8}, {"gbit", 1e9, 8},  {"b/s", 1, 1},    {"kb/s", 1e3, 1},
        {"mb/s", 1e6, 1},  {"gb/s", 1e9, 1}, {"tb/s", 1e12, 1},
    };
    double v = scaled(text, "bandwidth", units, sizeof units / sizeof *units,
                      "bps, kbps, Mbps, Gbps, Tbps, Mbit, Gbit, B/s, KB/s, MB/s, GB/s, TB/s; "
                      "none means Gbps");
    if (!(v > 0)) throw SpecError("bandwidth: must be greater than zero, got \"" + text + "\"");
    return v;
}

double parse_latency(const std::string &text) {
    static const Unit units[] = {
        {"", 1, 1e6}, {"ns", 1, 1e9}, {"us", 1, 1e6}, {"ms", 1, 1e3}, {"s", 1, 1}};
    return scaled(text, "latency", units, sizeof units / sizeof *units,
                  "ns, us, ms, s; none means us");
}

std::vector<double> parse_fill(const std::string &text) {
    const auto points = split(trim(text), '/');
    const std::string expected = "fill: expected the fraction of the bandwidth reached with 1, "
                                 "2, ... stages in flight, each above 0 and at most 1, "
                                 "separated by '/' (e.g. 0.56/0.78/0.94; 1 = full), got \"" +
                                 text + "\"";
    if (points.size() > kMaxFillPoints)
        throw SpecError("fill: at most " + std::to_string(kMaxFillPoints) + " points, got " +
                        std::to_string(points.size()) + " in \"" + text + "\"");
    std::vector<double> curve;
    for (const std::string &point : points) {
        const std::string t = trim(point);
        char *end = nullptr;
        const double v = strtod(t.c_str(), &end);
        if (t.empty() || end == t.c_str() || *end != '\0' || !(v > 0 && v <= 1))
            throw SpecError(expected);
        curve.push_back(v);
    }
    return canonical_fill(std::move(curve));
}

Algorithm parse_algorithm(const std::string &text) {
    if (std::optional<Algorithm> a = find_algorithm(lower(trim(text)))) return *a;
    throw SpecError("algorithm: expected " + algorithm_choices() + ", got \"" + text + "\"");
}

void parse_algorithms(const std::string &text, Dimension &dim) {
    const std::vector<std::string> names = split(text, '/');
    dim.algorithm = parse_algorithm(names[0]);
    dim.alternatives = 0;
    for (size_t i = 1; i < names.size(); ++i) {
        const Algorithm a = parse_algorithm(names[i]);
        if (a != dim.algorithm) dim.alternatives |= 1u << int(a);
    }
}

std::string algorithm_text(const Dimension &dim) {
    std::string text = algorithm_name(dim.algorithm);
    for (const AlgorithmInfo &alg : algorithms())
        if (alg.id != dim.algorithm && offers(dim, alg.id)) text += "/" + alg.name;
    return text;
}

std::string control_byte_in(const std::string &text) {
    for (size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if ((c >= 0x20 && c != 0x7f) || c == '\t' || c == '\r') continue;
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", c);
        return std::string("unexpected control byte ") + hex + " at column " +
               std::to_string(i + 1);
    }
    return std::string();
}

Topology parse_topology(const std::string &spec) {
    const std::string control = control_byte_in(spec);
    if (!control.empty()) throw SpecError("spec: " + control);
    auto sections = split(trim(spec), ':');
    if (trim(sections[0]).empty())
        throw SpecError("peers: expected dimension sizes such as \"2x4\", got an empty spec");
    auto peer_texts = split(lower(trim(sections[0])), 'x');
    if (peer_texts.size() > 16)
        throw SpecError("peers: at most 16 dimensions, got " + std::to_string(peer_texts.size()));
    std::vector<Dimension> dims(peer_texts.size());
    uint64_t ranks = 1;
    for (size_t d = 0; d < dims.size(); ++d) {
        dims[d].peers = parse_peers(peer_texts[d], int(d));
        ranks *= static_cast<uint64_t>(dims[d].peers);
        if (ranks > (1u << 24))
            throw SpecError("peers: the product of the dimension sizes must be at most 16777216");
    }
    const int nd = static_cast<int>(dims.size());

    bool seen_bw = false, seen_lat = false, seen_alg = false, seen_fill = false;
    for (size_t s = 1; s < sections.size(); ++s) {
        auto kv = trim(sections[s]);
        auto eq = kv.find('=');
        if (eq == std::string::npos)
            throw SpecError("section \"" + kv +
                            "\": expected key=value (bw=, lat=, alg= or fill=)");
        std::string key = lower(trim(kv.substr(0, eq)));
        auto values = per_dim_list(key, kv.substr(eq + 1), nd);
        auto in_dim = [&](int d, const std::exception &e) {
            return SpecError("dimension " + std::to_string(d) + " " + e.what());
        };
        bool *seen = key == "bw"     ? &seen_bw
                     : key == "lat"  ? &seen_lat
                     : key == "alg"  ? &seen_alg
                     : key == "fill" ? &seen_fill
                                     : nullptr;
        if (!seen)
            throw SpecError("section \"" + kv + "\": unknown key \"" + key +
                            "\" (valid: bw, lat, alg, fill)");
        if (*seen) throw SpecError("key \"" + key + "\" given twice");
        *seen = true;
        for (int d = 0; d < nd; ++d) {
            try {
                if (key == "bw") dims[d].bandwidth = parse_bandwidth(values[d]);
                if (key == "lat") dims[d].latency = parse_latency(values[d]);
                if (key == "alg") parse_algorithms(values[d], dims[d]);
                if (key == "fill") dims[d].fill = parse_fill(values[d]);
            } catch (const SpecError &e) {
                throw in_dim(d, e);
            }
        }
    }
    for (int d = 0; d < nd; ++d) {
        const int n = dims[d].peers;
        for (const AlgorithmInfo &alg : algorithms()) {
            if (offers(dims[d], alg.id) && !alg.accepts(n))
                throw SpecError("dimension " + std::to_string(d) +
                                " algorithm: " + algorithm_label(alg.id) + " needs " + alg.needs +
                                ", got " + std::to_string(n));
        }
    }
    return Topology(dims);
}

bool offers(const Dimension &dim, Algorithm a) {
    return a == dim.algorithm || (dim.alternatives >> int(a) & 1u) != 0;
}

bool may_run(const Dimension &dim, Algorithm a) {
    return algorithm_info(a).accepts(dim.peers) && offers(dim, a);
}

} // namespace themis
