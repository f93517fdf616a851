// calibration_file: measured dimension rates, and grids found by probing, kept in a file
// for later jobs.
//
// Calibration (calibration.h) costs about half a second per layout and communicator, and
// probing the hosts' grid (grid_finder.h) seconds per job; coll_themis_calibration_file
// names a file where both are kept, so a later job on the same hosts, laid out the same
// way, plans with those numbers and that grid at once.
//
// The file is text, one entry per line, sorted by key:
//
//   themis-calibration 4
//   KEY SPEC WRITTEN
//   HOSTKEY GRID WRITTEN
//   NODEKEY NODE WRITTEN
//   ...
//
//   KEY      calibration_key(): the dimension sizes, then a hash of the sizes, the
//            algorithms and every position's hostname, e.g. "2x2x2-3f0c9a1b5d7e2468".
//   SPEC     the measured topology in the dimension spec syntax (Topology::to_spec()),
//            e.g. "2x4:bw=100Gbps,25GB/s:lat=2us,700ns:alg=ring,hd", with the fill curves
//            where one was measured below full: "...:alg=ring,hd:fill=1,0.56/0.78/0.86/0.94".
//   HOSTKEY  grid_key(): "hosts", the number of hosts, then a hash of their names, e.g.
//            "hosts4-9b1c0e2f4a6d8c10".
//   GRID     what probing found on those hosts: "grid=2x2:0.0,1.0,0.1,1.1" (the sizes, then
//            every host's coordinate, hosts in name order), or "grid=none" (no grid: a
//            flat network, or none that fits).
//   NODEKEY  node_choice_key(): a layout's KEY, "-node-", the transport's name, e.g.
//            "2x4-3f0c9a1b5d7e2468-node-pml".
//   NODE     which node-local dimensions a measurement chose to run by single copy:
//            "cma=0,1", or "cma=none".
//   WRITTEN  when it was measured, UTC, e.g. "2024-05-01T12:34:56Z" (for people: a
//            network that changed calls for deleting the entry or the file).
//
// Fields are separated by one space and hold none. An empty file has no entries, nor has
// one of format 1 ("themis-calibration 1": rates without fill curves, which this version
// measures again); formats 2 (topologies only) and 3 (no node choices) are read as they
// are. A line that does not parse (a damaged entry) is left out, and so is every line of a
// file whose header differs otherwise (another format or version); read_calibration_file()
// says which, and writing an entry writes the file without them.
//
// Writers replace the file by renaming a complete temporary file over it, so a reader never
// sees a torn file, and take turns through an advisory lock on the file's name with ".lock"
// appended (fcntl: held on NFS too), so that the writers of many hosts sharing one home
// directory keep each other's entries. A writer that finds its entry there already writes
// nothing. Where the file system cannot lock, two writers of different keys at the same
// moment may lose one of the two; that layout is measured again next time.
#pragma once

#include <ctime>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "grid_finder.h"
#include "topology.h"

namespace themis {

// A file that cannot be read, written or understood: what() names the path, the line
// where there is one, and what is wrong.
class CalibrationFileError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct CalibrationEntry {
    std::string spec;    // the measured topology (parses with parse_topology)
    std::string written; // e.g. "2024-05-01T12:34:56Z"
};

// key -> entry
using CalibrationEntries = std::map<std::string, CalibrationEntry>;

// The key of `layout` (its sizes and algorithms; not its rates, which are what the file
// keeps) on these hosts: host_at_position[p] is the hostname of the rank at topology
// position p. Throws std::invalid_argument when there is not one hostname per position.
std::string calibration_key(const Topology &layout,
                            const std::vector<std::string> &host_at_position);

// The entries of the file at `path`; none when the file does not exist. Lines that do not
// parse (see the format above) are left out, each described in `damaged` (path:line: what)
// where given. Throws CalibrationFileError when the file cannot be read.
CalibrationEntries read_calibration_file(const std::string &path,
                                         std::vector<std::string> *damaged = nullptr);

// Sets `key`'s entry to `measured`, written at `written`, keeping the other entries (those
// that do not parse dropped); nothing is written where the entry holds that already. Throws
// CalibrationFileError when the existing file cannot be read or the new one cannot be
// written.
void write_calibration_entry(const std::string &path, const std::string &key,
                             const Topology &measured, std::time_t written = std::time(nullptr));

// `layout` with the rates (bandwidth, latency, fill curve) cached under `key`, when the
// entry's sizes and algorithms are those of `layout`; nullopt when there is no entry or it
// is stale.
std::optional<Topology> cached_topology(const CalibrationEntries &entries, const std::string &key,
                                        const Topology &layout);

// The key of a node transport choice for the layout of key `layout_key` (calibration_key())
// with the base transport `transport_name`.
std::string node_choice_key(const std::string &layout_key, const std::string &transport_name);
// Sets the node choice entry `key` to `single_copy` (per dimension), as
// write_calibration_entry() does.
void write_node_choice(const std::string &path, const std::string &key,
                       const std::vector<bool> &single_copy,
                       std::time_t written = std::time(nullptr));
// The choice kept under `key` for a layout of `dimensions` dimensions; nullopt when there is
// none or it names a dimension the layout lacks.
std::optional<std::vector<bool>> cached_node_choice(const CalibrationEntries &entries,
                                                    const std::string &key, int dimensions);

// Where the file is kept when nobody names one (coll_themis_calibration_file auto), by the XDG
// Base Directory convention: "$XDG_CACHE_HOME/coll-themis/calibration" where that variable is
// an absolute path, else "$HOME/.cache/coll-themis/calibration"; "" when neither is.
std::string default_cache_path(const std::string &xdg_cache_home, const std::string &home);
// Creates the directories above `path` that do not exist (mode 0700: a user's own). Throws
// CalibrationFileError when one cannot be created.
void make_parent_directories(const std::string &path);

// The key of the grid of these hosts (their names, in any order).
std::string grid_key(std::vector<std::string> hosts);

// Sets the grid entry `key` (grid_key()) to `grid` (found or not: sizes and coordinates
// only), as write_calibration_entry() does.
void write_grid_entry(const std::string &path, const std::string &key, const GridResult &grid,
                      std::time_t written = std::time(nullptr));

// A grid as the file's GRID field writes it: its sizes and every node's coordinate, or
// "grid=none"; not its reason, rates or probe count.
std::string grid_text(const GridResult &grid);

// The grid kept under `key`, found (sizes and `nodes` coordinates) or not (no reason);
// nullopt when there is no entry or its grid has another number of nodes.
std::optional<GridResult> cached_grid(const CalibrationEntries &entries, const std::string &key,
                                      int nodes);

} // namespace themis
