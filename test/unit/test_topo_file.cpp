// Unit tests of src/topo_file: the topology file's grammar, and an error for every way a
// file can be wrong that names the file, the line and the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "topo_file.h"
#include "topology.h"

using namespace themis;

namespace {

HostGrid parse(const std::string &text) {
    std::istringstream in(text);
    return parse_topo_file(in, "net.topo");
}

// The SpecError's message for `text`, or a note that none came.
std::string error_of(const std::string &text) {
    try {
        parse(text);
    } catch (const SpecError &e) {
        return e.what();
    }
    return "no SpecError";
}

// Asserts that `text` fails at `line` on `field` with a message containing `says`.
void expect_error(const std::string &text, int line, const std::string &field,
                  const std::string &says) {
    const std::string what = error_of(text);
    const std::string where = "net.topo:" + std::to_string(line) + ": " + field + ": ";
    EXPECT_EQ(what.rfind(where, 0), 0u) << "expected \"" << where << "\" first: " << what;
    EXPECT_NE(what.find(says), std::string::npos) << "expected \"" << says << "\" in: " << what;
}

} // namespace

TEST(TopoFile, ReadsDimsAndHosts) {
    const HostGrid g = parse("dims 2x3\nhost a 0 0\nhost b 1 2\n");
    EXPECT_EQ(g.sizes, (std::vector<int>{2, 3}));
    ASSERT_EQ(g.coords.size(), 2u);
    EXPECT_EQ(g.coords.at("a"), (std::vector<int>{0, 0}));
    EXPECT_EQ(g.coords.at("b"), (std::vector<int>{1, 2}));
}

TEST(TopoFile, IgnoresCommentsBlankLinesAndSpacing) {
    const HostGrid g = parse("# a 2 x 2 network\n"
                             "\n"
                             "   dims\t2x2   # dimension 0 fastest\n"
                             "  \t \n"
                             "host node-01.example 1\t 1#no space before the comment\n"
                             "#host ghost 0 0\n"
                             "host n2 0 1");
    EXPECT_EQ(g.sizes, (std::vector<int>{2, 2}));
    ASSERT_EQ(g.coords.size(), 2u);
    EXPECT_EQ(g.coords.at("node-01.example"), (std::vector<int>{1, 1}));
    EXPECT_EQ(g.coords.at("n2"), (std::vector<int>{0, 1}));
}

TEST(TopoFile, OneDimensionAndCellsLeftEmpty) {
    const HostGrid g = parse("dims 8\nhost x 5\n");
    EXPECT_EQ(g.sizes, std::vector<int>{8});
    EXPECT_EQ(g.coords.at("x"), std::vector<int>{5});
}

TEST(TopoFile, RefusesUnknownKeywords) {
    expect_error("dims 2\nhots a 0\n", 2, "keyword 'hots'", "expected 'dims' or 'host'");
}

TEST(TopoFile, RefusesMissingRepeatedOrLateDims) {
    expect_error("# nothing\n\n", 2, "dims", "got none");
    expect_error("", 1, "dims", "got none");
    expect_error("host a 0\ndims 2\n", 1, "host", "expected the 'dims' line before the first host");
    expect_error("dims 2\nhost a 0\ndims 2\n", 3, "dims", "given twice (first on line 1)");
    expect_error("dims 2x2\n", 1, "host", "expected at least one host line");
}

TEST(TopoFile, RefusesMalformedSizes) {
    expect_error("dims\n", 1, "dims", "expected sizes such as 2x4, got nothing");
    expect_error("dims 2xa\n", 1, "dims", "size 1 of '2xa': expected a positive integer, got 'a'");
    expect_error("dims 2x0\n", 1, "dims", "size 1 of '2x0': expected a positive integer, got '0'");
    expect_error("dims 2x\n", 1, "dims", "got ''");
    expect_error("dims -2\n", 1, "dims", "got '-2'");
    expect_error("dims 65536x65536\n", 1, "dims", "more cells than an int holds");
    expect_error("dims 2x2 4\n", 1, "dims",
                 "expected the end of the line after the sizes, got '4'");
}

TEST(TopoFile, RefusesMalformedHosts) {
    const std::string dims = "dims 2x2\n";
    expect_error(dims + "host\n", 2, "host", "expected a name and its coordinates");
    expect_error(dims + "host a 0\n", 2, "host a", "expected 2 coordinates (dims 2x2), got 1");
    expect_error(dims + "host a 0 1 1\n", 2, "host a", "expected 2 coordinates (dims 2x2), got 3");
    expect_error(dims + "host a 0 x\n", 2, "coordinate 1 of host a",
                 "expected a non-negative integer, got 'x'");
    expect_error(dims + "host a -1 0\n", 2, "coordinate 0 of host a", "got '-1'");
    expect_error(dims + "host a 0 2\n", 2, "coordinate 1 of host a",
                 "expected 0..1 (dims 2x2), got 2");
}

TEST(TopoFile, RefusesControlBytesByColumn) {
    expect_error(std::string("dims 2\nhost a\0b 0\n", 19), 2, "text",
                 "unexpected control byte 0x00 at column 7");
    EXPECT_NO_THROW(parse("dims 2\r\nhost a 0 # caf\xc3\xa9\r\n"));
}

TEST(TopoFile, RefusesDuplicateHostsAndCells) {
    const std::string two = "dims 2x2\nhost a 0 0\n\nhost b 1 0\n";
    expect_error(two + "host a 1 1\n", 5, "host a", "given twice (first on line 2)");
    expect_error(two + "host c 1 0\n", 5, "host c", "cell (1 0) already holds host b (line 4)");
}

TEST(TopoFile, ReadsAFileAndNamesAnUnreadableOne) {
    const std::string path = testing::TempDir() + "themis_test.topo";
    std::ofstream(path) << "dims 2\nhost a 1\nhost b x\n";
    try {
        read_topo_file(path);
        ADD_FAILURE() << "a bad coordinate accepted";
    } catch (const SpecError &e) {
        const std::string where = path + ":3: coordinate 0 of host b: ";
        EXPECT_EQ(std::string(e.what()).rfind(where, 0), 0u) << e.what();
    }
    std::remove(path.c_str());
    try {
        read_topo_file("/nonexistent/themis.topo");
        ADD_FAILURE() << "a missing file accepted";
    } catch (const SpecError &e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/themis.topo"), std::string::npos);
    }
}
