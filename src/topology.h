// topology: the network's dimensions and the mapping rank <-> coordinates.
//
// A network of D dimensions; dimension d has `peers` ranks that differ only in
// coordinate d, a per-rank bandwidth (all links of the dimension together), a
// step latency and the algorithm that runs one stage on it. Dimension 0 varies
// fastest: rank = c0 + n0 * (c1 + n1 * (c2 + ...)), so consecutive ranks form
// dimension 0.
//
// The user spec (see docs/usage.md, "Dimension spec"):
//   PEERSxPEERSx...[:bw=LIST][:lat=LIST][:alg=LIST][:fill=LIST]
// e.g. "2x4", "16x8x8:bw=1600Gbps,800Gbps,400Gbps:lat=700ns,700ns,1.7us:alg=hd,ring,hd",
// "2x4:bw=100Mbps,200Mbps:fill=1,0.56/0.78/0.94".
// A LIST holds one value per dimension, or a single value for all of them; a fill value is
// a curve, its points separated by '/'.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "settings.h"

namespace themis {

struct Dimension {
    int peers = 1;
    double bandwidth = 12.5e9; // bytes per second per rank, all links of the dimension
    double latency = 1e-6;     // seconds per algorithm step
    Algorithm algorithm = Algorithm::Ring;
    // Other algorithms the physical dimension can run, one bit (1 << Algorithm) each, that
    // the planner may choose instead (planner.h); 0: only `algorithm` (alg= pins it).
    unsigned alternatives = 0;
    // The fill curve: fill[i] is the fraction of `bandwidth` the dimension delivers with
    // i + 1 stages moving bytes at once (all of them together), each in (0, 1]; past the
    // last point the last holds. Empty: every count fills the link (1), the model before
    // fill curves. A Topology keeps it canonical (canonical_fill).
    std::vector<double> fill;
};

// The most points a fill curve holds: one per stage in flight, up to the largest K.
constexpr size_t kMaxFillPoints = THEMIS_MAX_ACTIVE_MAX;

// `curve` without its trailing points equal to the one before them (past the last point
// the last holds), and empty when all that is left is 1 (a full link): equal curves compare
// and hash equal.
std::vector<double> canonical_fill(std::vector<double> curve);

// Whether the dimension names `a`: as its algorithm or as an alternative.
bool offers(const Dimension &dim, Algorithm a);
// Whether the planner may run `a` on the dimension: one it offers, where the algorithm
// accepts the dimension's number of peers.
bool may_run(const Dimension &dim, Algorithm a);

// A malformed spec: what() names the field and says what was expected.
class SpecError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Topology {
  public:
    Topology() = default;
    explicit Topology(std::vector<Dimension> dims);

    int num_dims() const { return static_cast<int>(dims_.size()); }
    const Dimension &dim(int d) const { return dims_[d]; }
    const std::vector<Dimension> &dims() const { return dims_; }
    int size() const { return size_; }

    std::vector<int> coords(int rank) const;
    int coord(int rank, int d) const;
    int rank_of(const std::vector<int> &coords) const;
    // The rank that equals `rank` in every coordinate but d, where it has `value`.
    int with_coord(int rank, int d, int value) const;

    double total_bandwidth() const; // sum over dimensions with more than one peer
    // The most bytes/s one rank can broadcast to all the others (or all reduce to one): the
    // least, over every non-empty set Q of active dimensions, of the rate into one sub-grid
    // the root is not in that only Q's links reach, prod_{d not in Q} n_d x sum_{d in Q}
    // bandwidth_d. Q = all is one rank's summed rates; a slow dimension of few peers cuts
    // the network in two halves joined by it alone (2x2x2 at 50/100/200: 4 x 50, not 350).
    // Packed spanning trees reach it (Edmonds: the minimum root cut; docs/design.md). Past
    // 16 active dimensions the summed rates, still a bound.
    double broadcast_rate() const;
    // The dimensions with more than one peer (those a collective's stages run on), ascending.
    std::vector<int> active_dims() const;
    // The same network with every latency set to zero (bandwidth-only model).
    Topology without_latency() const;
    // Canonical spec that parses back to this topology.
    std::string to_spec() const;
    // A stable fingerprint of every number a plan depends on.
    uint64_t fingerprint() const;

    bool operator==(const Topology &o) const;

  private:
    std::vector<Dimension> dims_;
    std::vector<int> stride_;
    int size_ = 1;
};

// Parses a user spec; throws SpecError naming the offending field.
Topology parse_topology(const std::string &spec);

// Why `text` (a spec, a line of a file) holds a control byte, e.g. "unexpected control
// byte 0x00 at column 7"; empty when it holds none. Tab and carriage return count as
// spaces, bytes from 0x80 (UTF-8 in comments) as text. Parsers refuse such text first:
// quoted in an error, a NUL would cut the message short and an escape garble a terminal.
std::string control_byte_in(const std::string &text);

// `s` cut at every `sep`, empty pieces kept ("a,,b" gives three, "" one): the spec's lists.
std::vector<std::string> split(const std::string &s, char sep);

// Quantities with units, as the spec writes them (exposed for tests and tools).
// Bandwidth: bps, kbps, Mbps, Gbps, Tbps (bits) or B/s, KB/s, MB/s, GB/s, TB/s
// (bytes, decimal); no unit means Gbps. Result in bytes per second.
double parse_bandwidth(const std::string &text);
// Latency: ns, us, ms, s; no unit means microseconds. Result in seconds.
double parse_latency(const std::string &text);
// A fill curve: fractions in (0, 1], the first for one stage in flight, separated by '/'
// ("0.56/0.78/0.94"; "1" is a full link), at most kMaxFillPoints. Result canonical.
std::vector<double> parse_fill(const std::string &text);
// The curve as the spec writes it: "1" for a full one, else its points joined by '/'.
std::string fill_text(const std::vector<double> &curve);
// A name or alias of a row of algorithms/registry.
Algorithm parse_algorithm(const std::string &text);
// One dimension's alg= value: its algorithm, then any alternatives the planner may run
// instead, separated by '/' ("ring/hd"); sets dim.algorithm and dim.alternatives.
void parse_algorithms(const std::string &text, Dimension &dim);
// The dimension's alg= value as the spec writes it: "ring", or "ring/hd" with alternatives.
std::string algorithm_text(const Dimension &dim);

} // namespace themis
