// node_packages: a process's package from hwloc (see node_packages.h).
#include "node_packages.h"

#include <hwloc.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "topology.h"

namespace themis {

struct HwlocTopology::Loaded {
    hwloc_topology_t topology = nullptr;

    Loaded() {
        if (hwloc_topology_init(&topology) != 0)
            throw std::runtime_error(std::string("hwloc_topology_init failed: ") +
                                     std::strerror(errno));
    }
    ~Loaded() { hwloc_topology_destroy(topology); }
    Loaded(const Loaded &) = delete;
    Loaded &operator=(const Loaded &) = delete;

    void load() {
        if (hwloc_topology_load(topology) != 0)
            throw std::runtime_error(std::string("hwloc_topology_load failed: ") +
                                     std::strerror(errno));
    }
};

namespace {

using Bitmap = std::unique_ptr<hwloc_bitmap_s, decltype(&hwloc_bitmap_free)>;

Bitmap allocated_bitmap() {
    Bitmap set(hwloc_bitmap_alloc(), &hwloc_bitmap_free);
    if (!set) throw std::bad_alloc();
    return set;
}

// The logical index of the one package that contains every PU of `cpuset`; -1 when
// the set is empty or no single package holds it all.
int package_of_cpuset(hwloc_topology_t topology, hwloc_const_cpuset_t cpuset) {
    if (hwloc_bitmap_iszero(cpuset)) return -1;
    hwloc_obj_t package = nullptr;
    while ((package = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PACKAGE, package)))
        if (hwloc_bitmap_isincluded(cpuset, package->cpuset))
            return static_cast<int>(package->logical_index);
    return -1;
}

} // namespace

HwlocTopology::HwlocTopology(std::unique_ptr<Loaded> loaded) : loaded_(std::move(loaded)) {}
HwlocTopology::HwlocTopology(HwlocTopology &&) noexcept = default;
HwlocTopology &HwlocTopology::operator=(HwlocTopology &&) noexcept = default;
HwlocTopology::~HwlocTopology() = default;

HwlocTopology HwlocTopology::synthetic(const std::string &description) {
    auto loaded = std::make_unique<Loaded>();
    if (hwloc_topology_set_synthetic(loaded->topology, description.c_str()) != 0)
        throw SpecError("hwloc rejects the synthetic topology \"" + description + "\"");
    loaded->load();
    return HwlocTopology(std::move(loaded));
}

HwlocTopology HwlocTopology::this_machine() {
    auto loaded = std::make_unique<Loaded>();
    loaded->load();
    return HwlocTopology(std::move(loaded));
}

int HwlocTopology::num_packages() const {
    return hwloc_get_nbobjs_by_type(loaded_->topology, HWLOC_OBJ_PACKAGE);
}

int HwlocTopology::package_of(const std::vector<int> &pu_os_indexes) const {
    // Checking each index against the topology first also keeps a wild index from
    // growing the bitmap to billions of bits.
    hwloc_const_cpuset_t existing = hwloc_topology_get_topology_cpuset(loaded_->topology);
    Bitmap set = allocated_bitmap();
    for (int pu : pu_os_indexes) {
        if (pu < 0 || !hwloc_bitmap_isset(existing, static_cast<unsigned>(pu))) return -1;
        hwloc_bitmap_set(set.get(), static_cast<unsigned>(pu));
    }
    return package_of_cpuset(loaded_->topology, set.get());
}

int HwlocTopology::package_of_current_binding() const {
    Bitmap set = allocated_bitmap();
    if (hwloc_get_cpubind(loaded_->topology, set.get(), HWLOC_CPUBIND_PROCESS) != 0) return -1;
    return package_of_cpuset(loaded_->topology, set.get());
}

int current_package() {
    // Loading the machine's topology reads /sys and takes milliseconds, which every new
    // communicator's set-up would pay (bench/RESULTS.md, "The start"): it is loaded once per
    // process and kept to its end, never destroyed: a static's destructor, run when Open MPI
    // unloads the component in MPI_Finalize, made processes crash there (the MPI checks). The
    // binding is read again each time, cheaply: a program may rebind.
    static const HwlocTopology *const machine = []() -> HwlocTopology * {
        try {
            return new HwlocTopology(HwlocTopology::this_machine());
        } catch (const std::exception &) {
            return nullptr; // no topology: the package is unknown, which callers handle
        }
    }();
    return machine ? machine->package_of_current_binding() : -1;
}

} // namespace themis
