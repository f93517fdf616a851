// Unit tests of src/node_packages: packages of synthetic hwloc machines, and the real
// machine's answer being one of the valid ones.
#include <gtest/gtest.h>

#include "node_packages.h"
#include "topology.h"

using namespace themis;

namespace {

// hwloc numbers a synthetic machine's PUs 0..N-1 in order (package 0's first), unless
// the description gives os indexes itself.
TEST(NodePackages, TwoPackagesOfFourCores) {
    const HwlocTopology machine = HwlocTopology::synthetic("pack:2 core:4 pu:1");
    EXPECT_EQ(machine.num_packages(), 2);
    EXPECT_EQ(machine.package_of({0, 1, 2, 3}), 0);
    EXPECT_EQ(machine.package_of({4, 5, 6, 7}), 1);
    EXPECT_EQ(machine.package_of({5}), 1);
    EXPECT_EQ(machine.package_of({3, 4}), -1); // spans both
}

TEST(NodePackages, NoPackageForNoOrUnknownPus) {
    const HwlocTopology machine = HwlocTopology::synthetic("pack:2 core:4 pu:1");
    EXPECT_EQ(machine.package_of({}), -1);
    EXPECT_EQ(machine.package_of({99}), -1);
    EXPECT_EQ(machine.package_of({0, 99}), -1);
    EXPECT_EQ(machine.package_of({-1}), -1);
    EXPECT_EQ(machine.package_of({2000000000}), -1);
}

TEST(NodePackages, OnePackageWithHyperthreads) {
    const HwlocTopology machine = HwlocTopology::synthetic("pack:1 core:2 pu:2");
    EXPECT_EQ(machine.num_packages(), 1);
    EXPECT_EQ(machine.package_of({0, 1, 2, 3}), 0);
    EXPECT_EQ(machine.package_of({4}), -1);
}

TEST(NodePackages, MalformedDescriptionIsASpecError) {
    EXPECT_THROW(HwlocTopology::synthetic("pack:two core:4"), SpecError);
    EXPECT_THROW(HwlocTopology::synthetic("bogus:2"), SpecError);
}

TEST(NodePackages, MovedTopologyKeepsItsAnswers) {
    HwlocTopology machine = HwlocTopology::synthetic("pack:2 core:1 pu:1");
    HwlocTopology moved = std::move(machine);
    EXPECT_EQ(moved.num_packages(), 2);
    EXPECT_EQ(moved.package_of({1}), 1);
    moved = HwlocTopology::synthetic("pack:1 core:1 pu:1");
    EXPECT_EQ(moved.num_packages(), 1);
}

TEST(NodePackages, ThisMachineGivesNoneOrAValidPackage) {
    const HwlocTopology machine = HwlocTopology::this_machine();
    EXPECT_GE(machine.num_packages(), 1);
    const int package = machine.package_of_current_binding();
    EXPECT_GE(package, -1);
    EXPECT_LT(package, machine.num_packages());
    EXPECT_EQ(current_package(), package);
}

} // namespace
