// Fuzzing the four parsers that read what a user (or another job, or the batch system)
// wrote: the dimension spec (coll_themis_dims), the topology file (coll_themis_topo_file),
// the calibration file (coll_themis_calibration_file) and Slurm's SLURM_TOPOLOGY_ADDR with
// its SLURM_TOPOLOGY_ADDR_PATTERN. Each input is a seeded mutation of valid examples;
// every parser must either accept it, with a result that keeps its own invariants, or
// reject it with its documented error (SpecError, CalibrationFileError) and a message.
// Any other exception, a crash or a hang is a bug (CTest's timeout catches a hang; the
// slowest input is also bounded here).
//
// Budget, from the environment: THEMIS_FUZZ_SECONDS (per parser; default 0: count
// only), THEMIS_FUZZ_INPUTS (per parser; default 20000, 2000 for the calibration file
// whose inputs go through the file system; unbounded when seconds are given), THEMIS_FUZZ_SEED
// (default 1; 0 takes the clock). A failure prints the seed, the input's number and the input, so
// `THEMIS_FUZZ_SEED=S` replays it.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "calibration_file.h"
#include "slurm_topology.h"
#include "topo_file.h"
#include "topology.h"

using namespace themis;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// No single input may take this long (the longest valid one parses in microseconds).
const double slowest_allowed_seconds = 1.0;

long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, nullptr, 10) : fallback;
}

struct Budget {
    double seconds;
    long inputs;
    uint64_t seed;
};

Budget budget_from_env(long default_inputs = 20000) {
    Budget b;
    b.seconds = static_cast<double>(env_long("THEMIS_FUZZ_SECONDS", 0));
    b.inputs = env_long("THEMIS_FUZZ_INPUTS", b.seconds > 0 ? -1 : default_inputs);
    b.seed = static_cast<uint64_t>(env_long("THEMIS_FUZZ_SEED", 1));
    if (b.seed == 0) b.seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    return b;
}

// Printable form of an input for a failure message.
std::string escaped(const std::string &s) {
    std::ostringstream out;
    for (unsigned char c : s) {
        if (c == '\\' || c == '"')
            out << '\\' << c;
        else if (c >= 32 && c < 127)
            out << c;
        else
            out << "\\x" << std::hex << (c >> 4) << (c & 15) << std::dec;
    }
    return out.str();
}

// Mutates valid examples with byte edits, grammar tokens and splices of two examples.
class Mutator {
  public:
    Mutator(uint64_t seed, std::vector<std::string> corpus, std::vector<std::string> tokens)
        : rng_(seed), corpus_(std::move(corpus)), tokens_(std::move(tokens)) {}

    std::string next() {
        std::string s = pick(corpus_);
        const int edits = 1 + static_cast<int>(rng_() % 6);
        for (int i = 0; i < edits; ++i) edit(s);
        return s;
    }

  private:
    const std::string &pick(const std::vector<std::string> &v) { return v[rng_() % v.size()]; }
    size_t at(const std::string &s) { return rng_() % (s.size() + 1); }

    void edit(std::string &s) {
        switch (rng_() % 7) {
        case 0: // any byte, NUL and high bytes included
            if (!s.empty()) s[rng_() % s.size()] = static_cast<char>(rng_() % 256);
            break;
        case 1:
        case 2: s.insert(at(s), pick(tokens_)); break;
        case 3: { // erase a range
            const size_t from = at(s);
            s.erase(from, rng_() % 8);
            break;
        }
        case 4: { // repeat a range, up to a few times
            const size_t from = at(s), n = rng_() % 16;
            const std::string part = s.substr(from, n);
            for (unsigned k = rng_() % 4; k > 0; --k) s.insert(at(s), part);
            break;
        }
        case 5: { // splice: this input's head, another example's tail
            const std::string &other = pick(corpus_);
            s = s.substr(0, at(s)) + other.substr(at(other) % (other.size() + 1));
            break;
        }
        default: // a long run of one token (numbers with many digits, many dimensions)
            s.insert(at(s), std::string(1 + rng_() % 40, "x9,.:e\n "[rng_() % 8]));
        }
    }

    std::mt19937_64 rng_;
    std::vector<std::string> corpus_;
    std::vector<std::string> tokens_;
};

// Runs `check` on the budget's inputs; the first failing input stops the run.
void fuzz(const char *what, Mutator mutator, const Budget &b,
          const std::function<void(const std::string &)> &check) {
    const auto start = Clock::now();
    double slowest = 0;
    long n = 0;
    for (; b.inputs < 0 || n < b.inputs; ++n) {
        if (b.seconds > 0 &&
            std::chrono::duration<double>(Clock::now() - start).count() >= b.seconds)
            break;
        const std::string input = mutator.next();
        const auto t0 = Clock::now();
        check(input);
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        slowest = std::max(slowest, took);
        if (::testing::Test::HasFailure() || took > slowest_allowed_seconds) {
            ADD_FAILURE() << what << ": input " << n << " (THEMIS_FUZZ_SEED=" << b.seed << ", took "
                          << took << " s): \"" << escaped(input) << "\"";
            return;
        }
    }
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("fuzz %s: %ld inputs in %.1f s, seed %llu, slowest %.1f us\n", what, n, total,
                static_cast<unsigned long long>(b.seed), slowest * 1e6);
}

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// An accepted spec: sizes, rates and algorithms a plan can use, and a canonical form that
// parses back to the same topology.
void check_topology(const Topology &t, const std::string &input) {
    long long product = 1;
    for (const Dimension &d : t.dims()) {
        product *= d.peers;
        EXPECT_GE(d.peers, 1) << input;
        EXPECT_TRUE(std::isfinite(d.bandwidth) && d.bandwidth > 0) << d.bandwidth;
        EXPECT_TRUE(std::isfinite(d.latency) && d.latency >= 0) << d.latency;
        if (d.algorithm == Algorithm::HalvingDoubling) {
            EXPECT_TRUE(is_power_of_two(d.peers));
        }
        EXPECT_LE(d.fill.size(), kMaxFillPoints);
        for (double f : d.fill) EXPECT_TRUE(f > 0 && f <= 1) << f;
        EXPECT_TRUE(d.fill == canonical_fill(d.fill)) << input;
    }
    EXPECT_EQ(product, t.size());
    EXPECT_LE(product, 1 << 24);
    try {
        EXPECT_TRUE(parse_topology(t.to_spec()) == t) << "to_spec " << t.to_spec();
    } catch (const SpecError &e) {
        ADD_FAILURE() << "to_spec \"" << t.to_spec() << "\" does not parse back: " << e.what();
    }
}

void check_spec(const std::string &input) {
    try {
        check_topology(parse_topology(input), input);
    } catch (const SpecError &e) {
        EXPECT_GT(std::string(e.what()).size(), 10u) << "too short to say what is wrong";
    }
}

// The line an error names ("fuzz.topo:LINE: ...") lies within the file.
void check_topo_file(const std::string &input) {
    std::istringstream in(input);
    try {
        const HostGrid g = parse_topo_file(in, "fuzz.topo");
        long long cells = 1;
        for (int n : g.sizes) {
            EXPECT_GE(n, 1);
            cells *= n;
        }
        EXPECT_FALSE(g.sizes.empty());
        EXPECT_LE(cells, INT32_MAX);
        std::set<std::vector<int>> taken;
        for (const auto &[host, c] : g.coords) {
            ASSERT_EQ(c.size(), g.sizes.size()) << host;
            for (size_t d = 0; d < c.size(); ++d) EXPECT_TRUE(c[d] >= 0 && c[d] < g.sizes[d]);
            EXPECT_TRUE(taken.insert(c).second) << "two hosts in one cell";
        }
    } catch (const SpecError &e) {
        const std::string what = e.what();
        const long lines = std::count(input.begin(), input.end(), '\n') + 1;
        ASSERT_EQ(what.rfind("fuzz.topo:", 0), 0u) << what;
        const long line = strtol(what.c_str() + 10, nullptr, 10);
        EXPECT_TRUE(line >= 1 && line <= lines) << what;
    }
}

// An input is "ADDR\nPATTERN". Accepted: the switches and the node join back into ADDR,
// none empty, none holding a separator or a host list; refused: a SpecError naming one of
// the two variables.
void check_slurm_topology(const std::string &input) {
    const size_t cut = input.find('\n');
    const std::string addr = input.substr(0, cut);
    const std::string pattern = cut == std::string::npos ? "" : input.substr(cut + 1);
    try {
        const SlurmAddress a = parse_slurm_topology(addr, pattern);
        std::string joined;
        for (const std::string &s : a.switches) {
            EXPECT_FALSE(s.empty());
            EXPECT_EQ(s.find_first_of(".,["), std::string::npos) << s;
            joined += s + ".";
        }
        EXPECT_FALSE(a.node.empty());
        EXPECT_EQ(joined + a.node, addr);
        const GridResult g = grid_from_slurm({a, a});
        EXPECT_FALSE(g.found) << "one node twice";
    } catch (const SpecError &e) {
        EXPECT_EQ(std::string(e.what()).rfind("SLURM_TOPOLOGY_ADDR", 0), 0u) << e.what();
    }
}

// Reading a file never throws anything but CalibrationFileError naming the file, every
// entry it accepts holds a spec that parses, and writing an entry over whatever is there
// (a damaged file is replaced) always leaves a file that reads back with that entry.
class CalibrationFuzz {
  public:
    CalibrationFuzz() {
        std::string pattern = (fs::temp_directory_path() / "themis-fuzz-XXXXXX").string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
        dir_ = pattern;
        path_ = (dir_ / "calibration").string();
    }
    ~CalibrationFuzz() { fs::remove_all(dir_); }

    void check(const std::string &input) {
        std::ofstream(path_, std::ios::binary | std::ios::trunc) << input;
        try {
            const CalibrationEntries entries = read_calibration_file(path_);
            for (const auto &[key, entry] : entries) {
                EXPECT_FALSE(key.empty());
                if (key.rfind("hosts", 0) == 0)
                    EXPECT_NO_THROW(cached_grid(entries, key, 4)) << entry.spec;
                else
                    EXPECT_NO_THROW(parse_topology(entry.spec)) << entry.spec;
            }
        } catch (const CalibrationFileError &e) {
            EXPECT_EQ(std::string(e.what()).rfind(path_, 0), 0u) << e.what();
        }
        if (++checked_ % 64) return; // writing costs an fsync: one input in 64
        write_calibration_entry(path_, "2x2-0123456789abcdef", parse_topology("2x2:bw=1,2"));
        EXPECT_EQ(read_calibration_file(path_).count("2x2-0123456789abcdef"), 1u);
    }

  private:
    fs::path dir_;
    std::string path_;
    long checked_ = 0;
};

} // namespace

TEST(FuzzParsers, DimensionSpec) {
    fuzz("dimension spec",
         Mutator(budget_from_env().seed,
                 {"2x4", "2x2x2:alg=direct,hd,ring", "auto:bw=400Gbps,100Gbps",
                  "16x8x8:bw=1600Gbps,800Gbps,400Gbps:lat=700ns,700ns,1.7us:alg=hd",
                  "3x5:bw=12.5GB/s:lat=2ms", "2x2:bw=50Mbit,1e2kbps:lat=1e-3s,0",
                  "2x4:bw=100Mbps,200Mbps:fill=1,0.56/0.78/0.94"},
                 {"x",
                  ":",
                  ",",
                  "=",
                  "bw=",
                  "lat=",
                  "alg=",
                  "fill=",
                  "/",
                  "0.5",
                  "1",
                  "Gbps",
                  "TB/s",
                  "bps",
                  "ns",
                  "s",
                  "hd",
                  "ring",
                  "direct",
                  "1e308",
                  "1e-320",
                  "nan",
                  "inf",
                  "-1",
                  "0",
                  "0x10",
                  "16777216",
                  "4294967297",
                  " ",
                  "\t",
                  std::string("\0", 1)}),
         budget_from_env(), check_spec);
}

TEST(FuzzParsers, TopologyFile) {
    fuzz("topology file",
         Mutator(budget_from_env().seed + 1,
                 {"# 4 hosts\ndims 2x2\nhost a 0 0\nhost b 1 0\nhost c 0 1\nhost d 1 1\n",
                  "dims 3\nhost n-1.example 2 # comment\n\n\thost n2 0\n",
                  "dims 2x2x2\nhost h 1 1 1\nhost g 0 1 0"},
                 {"dims ", "host ", "x", " ", "\t", "\n", "#", "0", "1", "2147483647", "999999999",
                  "-1", "h", "\r", std::string("\0", 1)}),
         budget_from_env(), check_topo_file);
}

TEST(FuzzParsers, SlurmTopology) {
    fuzz("Slurm topology",
         Mutator(budget_from_env().seed + 3,
                 {"s0.s3.node12\nswitch.switch.node", "node12\nnode",
                  "root_switch.CELL1.iswi1r4s0c1l1.belenos386\nswitch.switch.switch.node",
                  "s0..n1\nswitch.switch.node", "s0.s[1-2].n1\nswitch.switch.node"},
                 {".", "switch", "node", "switch.", "\n", "[", "]", ",", "-", "s1", " ", "\t",
                  std::string("\0", 1)}),
         budget_from_env(), check_slurm_topology);
}

TEST(FuzzParsers, CalibrationFile) {
    CalibrationFuzz file;
    fuzz("calibration file",
         Mutator(budget_from_env().seed + 2,
                 {"themis-calibration 2\n"
                  "2x4-0011223344556677 2x4:bw=100Gbps,25GB/s:lat=2us,700ns:alg=ring,hd "
                  "2024-05-01T12:34:56Z\n",
                  "themis-calibration 2\n"
                  "2x4-0011223344556677 2x4:bw=100Mbps:lat=2us:alg=ring,hd:fill=0.5/0.9 "
                  "2024-05-01T12:34:56Z\n",
                  "themis-calibration 3\n"
                  "hosts4-0011223344556677 grid=2x2:0.0,1.0,0.1,1.1 2024-05-01T12:34:56Z\n"
                  "hosts8-0011223344556677 grid=none 2024-05-01T12:34:56Z\n",
                  "themis-calibration 2\n", "themis-calibration 1\n", ""},
                 {"themis-calibration 3\n",
                  "themis-calibration 2\n",
                  "themis-calibration 1\n",
                  " ",
                  "\n",
                  "2x2",
                  ":bw=",
                  ":fill=",
                  "/",
                  "Gbps",
                  "2024-05-01T",
                  "12:34:56Z",
                  "99:99:99Z",
                  "-",
                  "x",
                  "hosts",
                  "grid=",
                  "none",
                  ".",
                  ",",
                  ":",
                  std::string("\0", 1)}),
         budget_from_env(2000), [&](const std::string &input) { file.check(input); });
}
