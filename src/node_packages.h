// node_packages: which package (socket) of its node a process is bound to.
//
// `dims=auto` splits a node's level into package x ranks-of-a-package when the
// ranks of a node sit on different packages: ranks of one package share its
// memory and caches, so that pair of dimensions is cheaper than the node level.
// The answer comes from hwloc, never from parsing /proc or /sys. hwloc's types
// stay in node_packages.cpp; HwlocTopology also loads hwloc's synthetic
// topologies, so tests can model multi-package nodes on any machine.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace themis {

// A loaded hwloc topology (move-only). Package indices are 0-based, in hwloc's
// logical order; PUs are named by their OS index (what the kernel's CPU
// numbers, cpusets and synthetic descriptions use).
class HwlocTopology {
  public:
    // A synthetic machine, e.g. "pack:2 core:4 pu:1"; throws SpecError when
    // hwloc rejects the description.
    static HwlocTopology synthetic(const std::string &description);
    // The machine this process runs on; throws std::runtime_error when hwloc
    // cannot load it.
    static HwlocTopology this_machine();

    HwlocTopology(HwlocTopology &&) noexcept;
    HwlocTopology &operator=(HwlocTopology &&) noexcept;
    ~HwlocTopology();

    int num_packages() const;
    // The package that contains every PU of `pu_os_indexes`; -1 when they span
    // several packages, name a PU this topology lacks, or are empty.
    int package_of(const std::vector<int> &pu_os_indexes) const;
    // The package of this process's current CPU binding; -1 when the binding
    // cannot be read or spans several packages (as an unbound process's does
    // on a machine of several packages). Meaningful on this_machine() only:
    // a synthetic topology has no binding to read.
    int package_of_current_binding() const;

  private:
    struct Loaded; // owns the hwloc_topology_t
    explicit HwlocTopology(std::unique_ptr<Loaded> loaded);
    std::unique_ptr<Loaded> loaded_;
};

// This process's package from its current binding on the real machine (its topology
// loaded once per process, the binding read at each call); -1
// when unknown (hwloc failed), unbound on several packages, or spanning.
int current_package();

} // namespace themis
