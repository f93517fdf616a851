// Unit tests of src/calibration_file: the key, the file format (written, read back,
// rejected with the line named), stale entries, and replacement by rename.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "calibration_file.h"

using namespace themis;
namespace fs = std::filesystem;

namespace {

// 2024-05-01T12:34:56Z
const std::time_t may_first = 1714566896;

// A fresh directory per test, removed with everything in it afterwards.
class CalibrationFile : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "themis-calibration-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
        path_ = (dir_ / "calibration").string();
    }
    void TearDown() override { fs::remove_all(dir_); }

    void write_text(const std::string &text) { std::ofstream(path_) << text; }
    std::string read_text() const {
        std::ifstream in(path_);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    std::vector<std::string> names_in_dir() const {
        std::vector<std::string> names;
        for (const auto &entry : fs::directory_iterator(dir_))
            names.push_back(entry.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }
    // What reading says is wrong: the CalibrationFileError thrown, else the damaged lines
    // left out, one a line ("" when nothing).
    std::string read_error() const {
        std::vector<std::string> damaged;
        try {
            read_calibration_file(path_, &damaged);
        } catch (const CalibrationFileError &e) {
            return e.what();
        }
        std::string said;
        for (const std::string &d : damaged) said += d + "\n";
        return said;
    }

    fs::path dir_;
    std::string path_;
};

// What a written file leaves in its directory: itself and the writers' lock.
const std::vector<std::string> kFileAndLock = {"calibration", "calibration.lock"};

const Topology measured_2x4 = parse_topology("2x4:bw=100Gbps,25GB/s:lat=2us,700ns:alg=ring,hd");
const Topology measured_2x2x2 = parse_topology("2x2x2:bw=40Gbps:lat=1us:alg=ring,hd,direct");

// ---------------------------------------------------------------------------------------
// Writing and reading back

TEST_F(CalibrationFile, WritesTheDocumentedFormatSortedByKey) {
    write_calibration_entry(path_, "b-key", measured_2x4, may_first);
    write_calibration_entry(path_, "a-key", measured_2x2x2, may_first + 60);
    EXPECT_EQ(read_text(), "themis-calibration 4\n"
                           "a-key " +
                               measured_2x2x2.to_spec() +
                               " 2024-05-01T12:35:56Z\n"
                               "b-key " +
                               measured_2x4.to_spec() + " 2024-05-01T12:34:56Z\n");
}

TEST_F(CalibrationFile, RoundTripsTwoKeysAndReplacesOne) {
    write_calibration_entry(path_, "k1", measured_2x4, may_first);
    write_calibration_entry(path_, "k2", measured_2x2x2, may_first);
    CalibrationEntries entries = read_calibration_file(path_);
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(parse_topology(entries.at("k1").spec), measured_2x4);
    EXPECT_EQ(parse_topology(entries.at("k2").spec), measured_2x2x2);
    EXPECT_EQ(entries.at("k1").written, "2024-05-01T12:34:56Z");

    const Topology remeasured = parse_topology("2x4:bw=50Gbps,10GB/s:lat=3us,1us:alg=ring,hd");
    write_calibration_entry(path_, "k1", remeasured, may_first + 3600);
    entries = read_calibration_file(path_);
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(parse_topology(entries.at("k1").spec), remeasured);
    EXPECT_EQ(entries.at("k1").written, "2024-05-01T13:34:56Z");
    EXPECT_EQ(parse_topology(entries.at("k2").spec), measured_2x2x2);
}

TEST_F(CalibrationFile, MissingFileHasNoEntries) {
    EXPECT_TRUE(read_calibration_file(path_).empty());
    EXPECT_TRUE(read_calibration_file((dir_ / "no-such-dir" / "calibration").string()).empty());
}

TEST_F(CalibrationFile, EmptyFileHasNoEntries) {
    write_text("");
    EXPECT_TRUE(read_calibration_file(path_).empty());
    write_text("themis-calibration 2\n");
    EXPECT_TRUE(read_calibration_file(path_).empty());
}

TEST_F(CalibrationFile, AcceptsALastLineWithoutNewline) {
    write_text("themis-calibration 2\nk " + measured_2x4.to_spec() + " 2024-05-01T12:34:56Z");
    EXPECT_EQ(read_calibration_file(path_).size(), 1u);
}

TEST_F(CalibrationFile, FillCurvesRoundTrip) {
    // A measured curve is part of the spec the file keeps, and reads back exactly.
    const Topology filled =
        parse_topology("2x4:bw=49.63Mbps,205.9Mbps:lat=141.8us,113.3us:alg=direct,hd:"
                       "fill=1,0.56/0.78/0.86/0.94");
    write_calibration_entry(path_, "k", filled, may_first);
    EXPECT_NE(read_text().find(":fill=1,0.56/0.78/0.86/0.94 "), std::string::npos) << read_text();
    const CalibrationEntries entries = read_calibration_file(path_);
    const std::optional<Topology> cached =
        cached_topology(entries, "k", parse_topology("2x4:alg=direct,hd"));
    ASSERT_TRUE(cached);
    EXPECT_EQ(*cached, filled);
    EXPECT_EQ(cached->dim(1).fill, (std::vector<double>{0.56, 0.78, 0.86, 0.94}));
    EXPECT_EQ(cached->fingerprint(), filled.fingerprint());
}

TEST_F(CalibrationFile, AFileOfFormatOneHasNoEntriesAndIsReplaced) {
    // Format 1 kept rates measured without fill curves: no entry is used (so the layout is
    // measured again), it is no error, and writing replaces the file whole.
    write_text("themis-calibration 1\nk " + measured_2x4.to_spec() + " 2024-05-01T12:34:56Z\n");
    EXPECT_EQ(read_error(), "");
    EXPECT_TRUE(read_calibration_file(path_).empty());
    write_calibration_entry(path_, "other", measured_2x2x2, may_first);
    EXPECT_EQ(read_text(), "themis-calibration 4\nother " + measured_2x2x2.to_spec() +
                               " 2024-05-01T12:34:56Z\n");
}

// ---------------------------------------------------------------------------------------
// Damaged files: lines left out, each named by the path and the line

TEST_F(CalibrationFile, AnotherHeaderOrVersionLeavesEveryEntryOut) {
    for (const char *first : {"themis-calibration 9", "themis-calibration", "k 2x2 x"}) {
        write_text(std::string(first) + "\nk " + measured_2x4.to_spec() +
                   " 2024-05-01T12:34:56Z\n");
        std::vector<std::string> damaged;
        EXPECT_TRUE(read_calibration_file(path_, &damaged).empty()) << first;
        ASSERT_EQ(damaged.size(), 1u) << first;
        EXPECT_NE(damaged[0].find(path_ + ":1: expected the header"), std::string::npos)
            << first << ": " << damaged[0];
    }
}

TEST_F(CalibrationFile, ADamagedLineIsLeftOutAndNamedTheOthersKept) {
    const std::string good = "k1 " + measured_2x4.to_spec() + " 2024-05-01T12:34:56Z";
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"", "expected \"KEY SPEC WRITTEN\""},
        {"k2 " + measured_2x4.to_spec(), "expected \"KEY SPEC WRITTEN\""},
        {"k2  " + measured_2x4.to_spec() + " 2024-05-01T12:34:56Z", "expected \"KEY SPEC"},
        {"k2 " + measured_2x4.to_spec() + " 2024-05-01T12:34:56Z extra", "expected \"KEY SPEC"},
        {"k2 " + measured_2x4.to_spec() + " 2024-05-01T12:34:56Z ", "expected \"KEY SPEC"},
        {"k2 2x:bw=1Gbps 2024-05-01T12:34:56Z", "the spec does not parse: dimension 1 peers"},
        {"k2 2x2:bw=fast 2024-05-01T12:34:56Z", "the spec does not parse"},
        {"k2 2x2:fill=1,1.5 2024-05-01T12:34:56Z", "the spec does not parse: dimension 1 fill"},
        {"k2 2x2 yesterday", "expected a UTC time"},
        {"k2 2x2 2024-05-01T12:34:56", "expected a UTC time"},
        {"hosts4-x grid=2x2:0.0 2024-05-01T12:34:56Z", "the grid does not parse"},
        {"k-node-pml cma=1,0 2024-05-01T12:34:56Z", "the node transport does not parse"},
        {"k-node-pml dims=0 2024-05-01T12:34:56Z", "the node transport does not parse"},
        {good, "a second entry for the key k1"},
    };
    for (const auto &[line, message] : bad) {
        write_text("themis-calibration 4\n" + good + "\n" + line +
                   "\nk3 2x2 2024-05-01T12:34:56Z\n");
        std::vector<std::string> damaged;
        const CalibrationEntries entries = read_calibration_file(path_, &damaged);
        ASSERT_EQ(damaged.size(), 1u) << "line \"" << line << "\"";
        EXPECT_NE(damaged[0].find(path_ + ":3: " + message), std::string::npos)
            << "line \"" << line << "\": " << damaged[0];
        EXPECT_EQ(entries.size(), 2u) << "line \"" << line << "\"";
        EXPECT_EQ(entries.count("k1") + entries.count("k3"), 2u) << "line \"" << line << "\"";
    }
}

TEST_F(CalibrationFile, UnreadableFileIsAnError) {
    fs::create_directory(path_); // opens, but cannot be read
    EXPECT_NE(read_error().find(path_ + ": cannot read"), std::string::npos) << read_error();
}

// ---------------------------------------------------------------------------------------
// Replacement by rename

TEST_F(CalibrationFile, WritingDropsWhatDoesNotParse) {
    write_text("themis-calibration 0\nold entry\n");
    write_calibration_entry(path_, "k", measured_2x4, may_first);
    const CalibrationEntries entries = read_calibration_file(path_);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(parse_topology(entries.at("k").spec), measured_2x4);
}

TEST_F(CalibrationFile, LeavesNoTemporaryFiles) {
    for (int i = 0; i < 5; ++i)
        write_calibration_entry(path_, "k" + std::to_string(i % 2), measured_2x4, may_first);
    EXPECT_EQ(names_in_dir(), kFileAndLock);
}

TEST_F(CalibrationFile, FailedWriteThrowsAndLeavesNothing) {
    const std::string in_missing_dir = (dir_ / "no-such-dir" / "calibration").string();
    try {
        write_calibration_entry(in_missing_dir, "k", measured_2x4);
        FAIL() << "no error";
    } catch (const CalibrationFileError &e) {
        EXPECT_NE(std::string(e.what()).find(in_missing_dir + ": cannot create"), std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(names_in_dir().empty());

    // Renaming over a directory fails after the temporary file was written.
    fs::create_directory(path_);
    fs::create_directory(dir_ / "calibration" / "occupied");
    EXPECT_THROW(write_calibration_entry(path_, "k", measured_2x4), CalibrationFileError);
    EXPECT_EQ(names_in_dir(), kFileAndLock);
}

TEST_F(CalibrationFile, AWriterFindingItsEntryThereWritesNothing) {
    write_calibration_entry(path_, "k", measured_2x4, may_first);
    const auto before = fs::last_write_time(path_);
    struct stat first {};
    ASSERT_EQ(::stat(path_.c_str(), &first), 0);
    write_calibration_entry(path_, "k", measured_2x4, may_first + 60);
    struct stat second {};
    ASSERT_EQ(::stat(path_.c_str(), &second), 0);
    EXPECT_EQ(first.st_ino, second.st_ino) << "the file was replaced";
    EXPECT_EQ(fs::last_write_time(path_), before);
    EXPECT_EQ(read_calibration_file(path_).at("k").written, "2024-05-01T12:34:56Z");
}

TEST_F(CalibrationFile, WritersInManyProcessesKeepEachOthersEntries) {
    // One writer per host on a shared home: each writes its own key again and again; with
    // the lock no read-modify-write loses another's entry.
    const int writers = 4, rounds = 25;
    std::vector<pid_t> children;
    for (int w = 0; w < writers; ++w) {
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            for (int i = 0; i < rounds; ++i)
                write_calibration_entry(path_, "writer" + std::to_string(w),
                                        i % 2 ? measured_2x4 : measured_2x2x2, may_first + i);
            _exit(0);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    const CalibrationEntries entries = read_calibration_file(path_);
    EXPECT_EQ(entries.size(), size_t(writers));
    const Topology &last = (rounds - 1) % 2 ? measured_2x4 : measured_2x2x2;
    for (int w = 0; w < writers; ++w)
        EXPECT_EQ(entries.at("writer" + std::to_string(w)).spec, last.to_spec()) << w;
    const std::vector<std::string> names = names_in_dir();
    EXPECT_EQ(
        std::count_if(names.begin(), names.end(),
                      [](const std::string &n) { return n.find(".tmp.") != std::string::npos; }),
        0);
}

TEST_F(CalibrationFile, NodeChoicesRoundTripAndFitTheirLayout) {
    const std::string key = node_choice_key("2x4-0123456789abcdef", "pml");
    EXPECT_EQ(key, "2x4-0123456789abcdef-node-pml");
    write_node_choice(path_, key, {true, false, true}, may_first);
    write_node_choice(path_, node_choice_key("2x4-0123456789abcdef", "ucx"), {false, false},
                      may_first);
    EXPECT_NE(read_text().find(key + " cma=0,2 2024-05-01T12:34:56Z\n"), std::string::npos)
        << read_text();
    const CalibrationEntries entries = read_calibration_file(path_);
    EXPECT_EQ(cached_node_choice(entries, key, 3), (std::vector<bool>{true, false, true}));
    EXPECT_EQ(cached_node_choice(entries, key, 4), (std::vector<bool>{true, false, true, false}));
    EXPECT_FALSE(cached_node_choice(entries, key, 2)) << "names dimension 2 of two";
    EXPECT_EQ(cached_node_choice(entries, "2x4-0123456789abcdef-node-ucx", 2),
              (std::vector<bool>{false, false}));
    EXPECT_FALSE(cached_node_choice(entries, "2x4-0123456789abcdef-node-cuda", 2));
    EXPECT_THROW(write_node_choice(path_, "hosts4-x", {true}), std::invalid_argument);
}

TEST(CalibrationFileDefault, TheCacheFollowsTheXdgConvention) {
    EXPECT_EQ(default_cache_path("/x/cache", "/home/u"), "/x/cache/coll-themis/calibration");
    EXPECT_EQ(default_cache_path("", "/home/u"), "/home/u/.cache/coll-themis/calibration");
    // A relative XDG_CACHE_HOME is invalid by the convention: ignored.
    EXPECT_EQ(default_cache_path("cache", "/home/u"), "/home/u/.cache/coll-themis/calibration");
    EXPECT_EQ(default_cache_path("", ""), "");
    EXPECT_EQ(default_cache_path("", "relative"), "");
}

TEST_F(CalibrationFile, ItsDirectoriesAreMadeForTheUserAlone) {
    const std::string deep = (dir_ / "a" / "b" / "calibration").string();
    make_parent_directories(deep);
    EXPECT_TRUE(fs::is_directory(dir_ / "a" / "b"));
    EXPECT_EQ(fs::status(dir_ / "a").permissions() & fs::perms::all, fs::perms::owner_all);
    make_parent_directories(deep); // existing: fine
    write_calibration_entry(deep, "k", measured_2x4, may_first);
    EXPECT_EQ(read_calibration_file(deep).size(), 1u);
    std::ofstream(dir_ / "file") << "x";
    EXPECT_THROW(make_parent_directories((dir_ / "file" / "calibration").string()),
                 CalibrationFileError);
}

TEST_F(CalibrationFile, RejectsAKeyThatWouldBreakTheFormat) {
    EXPECT_THROW(write_calibration_entry(path_, "", measured_2x4), std::invalid_argument);
    EXPECT_THROW(write_calibration_entry(path_, "a b", measured_2x4), std::invalid_argument);
    EXPECT_TRUE(names_in_dir().empty());
}

TEST_F(CalibrationFile, ConcurrentWritersNeverShowATornFile) {
    // One writer per node writes the same entry; a reader meanwhile sees a whole file.
    const int num_writers = 4;
    std::atomic<int> finished{0};
    std::vector<std::thread> writers;
    for (int w = 0; w < num_writers; ++w)
        writers.emplace_back([&] {
            for (int i = 0; i < 50; ++i)
                write_calibration_entry(path_, "k", measured_2x2x2, may_first);
            ++finished;
        });
    while (finished < num_writers) {
        const CalibrationEntries entries = read_calibration_file(path_);
        if (!entries.empty()) {
            EXPECT_EQ(entries.at("k").spec, measured_2x2x2.to_spec());
        }
    }
    for (auto &t : writers) t.join();
    EXPECT_EQ(read_calibration_file(path_).size(), 1u);
    EXPECT_EQ(names_in_dir(), kFileAndLock);
}

// ---------------------------------------------------------------------------------------
// The key

const std::vector<std::string> hosts_2x4 = {"n0", "n0", "n1", "n1", "n2", "n2", "n3", "n3"};

// ---------------------------------------------------------------------------------------
// Grids found by probing

GridResult grid_of(std::vector<int> sizes, std::vector<std::vector<int>> coords) {
    GridResult grid;
    grid.found = true;
    grid.sizes = std::move(sizes);
    grid.coords = std::move(coords);
    return grid;
}

const std::vector<std::string> four_hosts = {"n0", "n1", "n2", "n3"};

// 64-bit FNV-1a of the fields, each ended by a zero byte, in hexadecimal (written here from
// the published constants, not src/fnv1a.h).
std::string fnv1a_hex(const std::vector<std::string> &fields) {
    uint64_t h = 14695981039346656037ull;
    for (const std::string &field : fields) {
        for (const char c : field + std::string(1, '\0')) {
            h ^= static_cast<unsigned char>(c);
            h *= 1099511628211ull;
        }
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

TEST_F(CalibrationFile, GridEntriesAreWrittenAsDocumentedAndReadBack) {
    const std::string key = grid_key(four_hosts);
    write_grid_entry(path_, key, grid_of({2, 2}, {{0, 0}, {1, 0}, {0, 1}, {1, 1}}), may_first);
    write_calibration_entry(path_, "2x4-k", measured_2x4, may_first);
    EXPECT_EQ(read_text(), "themis-calibration 4\n"
                           "2x4-k " +
                               measured_2x4.to_spec() + " 2024-05-01T12:34:56Z\n" + key +
                               " grid=2x2:0.0,1.0,0.1,1.1 2024-05-01T12:34:56Z\n");
    const std::optional<GridResult> kept = cached_grid(read_calibration_file(path_), key, 4);
    ASSERT_TRUE(kept);
    EXPECT_TRUE(kept->found);
    EXPECT_EQ(kept->sizes, (std::vector<int>{2, 2}));
    EXPECT_EQ(kept->coords, (std::vector<std::vector<int>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
    // Another number of hosts under the key (a collision, or a hand edit): not used.
    EXPECT_FALSE(cached_grid(read_calibration_file(path_), key, 8));
    EXPECT_FALSE(cached_grid(read_calibration_file(path_), grid_key({"a", "b", "c", "d"}), 4));
}

TEST_F(CalibrationFile, NoGridIsKeptToo) {
    const std::string key = grid_key(four_hosts);
    GridResult flat;
    flat.reason = "a flat network";
    write_grid_entry(path_, key, flat, may_first);
    EXPECT_EQ(read_text(), "themis-calibration 4\n" + key + " grid=none 2024-05-01T12:34:56Z\n");
    const std::optional<GridResult> kept = cached_grid(read_calibration_file(path_), key, 4);
    ASSERT_TRUE(kept);
    EXPECT_FALSE(kept->found);
    // A found grid replaces it.
    write_grid_entry(path_, key, grid_of({4}, {{0}, {1}, {2}, {3}}), may_first);
    EXPECT_TRUE(cached_grid(read_calibration_file(path_), key, 4)->found);
}

TEST_F(CalibrationFile, AFileOfFormatTwoIsReadAsItIs) {
    write_text("themis-calibration 2\nk " + measured_2x4.to_spec() + " 2024-05-01T12:34:56Z\n");
    const CalibrationEntries entries = read_calibration_file(path_);
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries.at("k").spec, measured_2x4.to_spec());
}

TEST_F(CalibrationFile, MalformedGridNamesItsLine) {
    const std::string when = " 2024-05-01T12:34:56Z";
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"hosts4-a 2x2:bw=1Gbps" + when, "the grid does not parse: expected grid="},
        {"hosts4-a grid=" + when, "the grid does not parse: expected grid=SIZES:COORDS"},
        {"hosts4-a grid=2x2" + when, "the grid does not parse: expected grid=SIZES:COORDS"},
        {"hosts4-a grid=2x1:0.0,1.0" + when, "the grid does not parse: a dimension of fewer"},
        {"hosts4-a grid=2x2:0.0,1.0,0.1" + when, "the grid does not parse: 3 coordinates for 4"},
        {"hosts4-a grid=2x2:0.0,1.0,0.1,1.1,0.0" + when,
         "the grid does not parse: coordinate 0.0 given twice"},
        {"hosts4-a grid=2x2:0.0,1.0,0.1,2.1" + when,
         "the grid does not parse: coordinate 2.1 outside"},
        {"hosts4-a grid=2x2:0.0,1.0,0.1,1" + when,
         "the grid does not parse: coordinate 1 has not one"},
        {"hosts4-a grid=2x2:0.0,1.0,0.1,1.-1" + when,
         "the grid does not parse: \"-1\" is no number"},
        {"hosts4-a grid=2x99999999:0.0" + when,
         "the grid does not parse: \"99999999\" is no number"},
        {"hosts4-a grid=none:1" + when, "the grid does not parse: \"none\" is no number"},
    };
    for (const auto &[line, message] : bad) {
        write_text("themis-calibration 4\nk1 " + measured_2x4.to_spec() + when + "\n" + line +
                   "\n");
        const std::string error = read_error();
        EXPECT_NE(error.find(path_ + ":3: " + message), std::string::npos)
            << "line \"" << line << "\": " << error;
    }
}

TEST_F(CalibrationFile, GridAndTopologyKeysStayApart) {
    EXPECT_THROW(write_calibration_entry(path_, grid_key(four_hosts), measured_2x4),
                 std::invalid_argument);
    EXPECT_THROW(write_grid_entry(path_, "2x4-k", GridResult()), std::invalid_argument);
}

TEST(CalibrationFileGridKey, NamesTheHostCountAndIgnoresTheirOrder) {
    const std::string key = grid_key(four_hosts);
    EXPECT_EQ(key.rfind("hosts4-", 0), 0u) << key;
    EXPECT_EQ(key.size(), 7u + 16u) << key;
    EXPECT_EQ(grid_key({"n3", "n1", "n0", "n2"}), key);
    EXPECT_NE(grid_key({"n0", "n1", "n2", "n4"}), key);
    // Stable across builds: 64-bit FNV-1a of the sorted names, each ended by a zero byte.
    EXPECT_EQ(key, "hosts4-" + fnv1a_hex({"n0", "n1", "n2", "n3"}));
}

TEST(CalibrationFileKey, StartsWithTheSizesAndIsStable) {
    const std::string key = calibration_key(measured_2x4, hosts_2x4);
    EXPECT_EQ(key.rfind("2x4-", 0), 0u) << key;
    EXPECT_EQ(key.size(), 4u + 16u) << key;
    EXPECT_EQ(key.find_first_not_of("0123456789abcdef", 4), std::string::npos) << key;
    EXPECT_EQ(calibration_key(measured_2x4, hosts_2x4), key);
    // The same in every build and release (a change orphans every file's entries): 64-bit
    // FNV-1a of "2x4", "ring", "hd", the eight hostnames, each ended by a zero byte.
    std::vector<std::string> fields = {"2x4", "ring", "hd"};
    fields.insert(fields.end(), hosts_2x4.begin(), hosts_2x4.end());
    EXPECT_EQ(key, "2x4-" + fnv1a_hex(fields));
}

TEST(CalibrationFileKey, ChangesWithAnyHostnameOrTheirOrder) {
    const std::string key = calibration_key(measured_2x4, hosts_2x4);
    for (size_t p = 0; p < hosts_2x4.size(); ++p) {
        auto hosts = hosts_2x4;
        hosts[p] = "n9";
        EXPECT_NE(calibration_key(measured_2x4, hosts), key) << "position " << p;
    }
    auto swapped = hosts_2x4;
    std::swap(swapped[1], swapped[2]);
    EXPECT_NE(calibration_key(measured_2x4, swapped), key);
    // Field boundaries count: "n0","n0n1" is not "n0n0","n1".
    auto joined = hosts_2x4;
    joined[0] = "n0n0";
    joined[1] = "";
    EXPECT_NE(calibration_key(measured_2x4, joined), key);
}

TEST(CalibrationFileKey, ChangesWithSizesAndAlgorithmsNotRates) {
    const std::string key = calibration_key(measured_2x4, hosts_2x4);
    EXPECT_NE(calibration_key(parse_topology("4x2:alg=ring,hd"), hosts_2x4), key);
    EXPECT_NE(calibration_key(parse_topology("8:alg=ring"), hosts_2x4), key);
    EXPECT_NE(calibration_key(parse_topology("2x4:alg=hd,hd"), hosts_2x4), key);
    EXPECT_NE(calibration_key(parse_topology("2x4:alg=ring,direct"), hosts_2x4), key);
    EXPECT_EQ(calibration_key(parse_topology("2x4:alg=ring,hd"), hosts_2x4), key);
    EXPECT_EQ(calibration_key(parse_topology("2x4:bw=1Gbps:lat=9ms:alg=ring,hd"), hosts_2x4), key);
}

TEST(CalibrationFileKey, NeedsOneHostnamePerPosition) {
    EXPECT_THROW(calibration_key(measured_2x4, {"n0"}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Cached topologies

TEST(CalibrationFileCached, ReturnsTheMeasuredRatesForTheSameLayout) {
    const CalibrationEntries entries = {{"k", {measured_2x4.to_spec(), "2024-05-01T12:34:56Z"}}};
    const std::optional<Topology> cached =
        cached_topology(entries, "k", parse_topology("2x4:alg=ring,hd"));
    ASSERT_TRUE(cached);
    EXPECT_EQ(*cached, measured_2x4);
}

TEST(CalibrationFileCached, KeepsTheLayoutsAlternatives) {
    // The entry holds rates and algorithms only (as a file written before alternatives
    // were printed does); the planner may still run what the layout lets it.
    const CalibrationEntries entries = {{"k", {measured_2x4.to_spec(), "2024-05-01T12:34:56Z"}}};
    const std::optional<Topology> cached =
        cached_topology(entries, "k", parse_topology("2x4:alg=ring/direct,hd/ring"));
    ASSERT_TRUE(cached);
    EXPECT_EQ(*cached,
              parse_topology("2x4:bw=100Gbps,25GB/s:lat=2us,700ns:alg=ring/direct,hd/ring"));
}

TEST(CalibrationFileCached, MissingOrStaleEntryIsNone) {
    const CalibrationEntries entries = {{"k", {measured_2x4.to_spec(), "2024-05-01T12:34:56Z"}}};
    EXPECT_FALSE(cached_topology(entries, "other", parse_topology("2x4:alg=ring,hd")));
    EXPECT_FALSE(cached_topology(entries, "k", parse_topology("4x2:alg=ring,hd")));
    EXPECT_FALSE(cached_topology(entries, "k", parse_topology("2x4x1:alg=ring,hd,ring")));
    EXPECT_FALSE(cached_topology(entries, "k", parse_topology("2x4:alg=ring,ring")));
}

} // namespace
