// Unit tests of src/trace: stage CSV written and read back, calls picked out of a trace,
// malformed rows named, busy time with overlapping stages.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

#include "trace.h"

using namespace themis;

namespace {

std::vector<ChunkSchedule> two_chunks() {
    ChunkSchedule c;
    c.bytes = 1000;
    c.stages = {{0, Phase::ReduceScatter, 1000}, {1, Phase::AllGather, 500}};
    return {c, c};
}

StageRun run(int chunk, int stage, int dim, double ready, double start, double end) {
    return {{chunk, stage}, dim, ready, start, end};
}

} // namespace

TEST(TraceCsv, WrittenRunsReadBackInStartOrder) {
    const std::vector<StageRun> runs = {run(1, 0, 0, 0, 2e-6, 5e-6), run(0, 0, 0, 0, 0, 1.5e-6),
                                        run(0, 1, 1, 1.5e-6, 1.75e-6, 9.125e-6)};
    std::stringstream csv;
    write_stage_csv_header(csv, false);
    write_stage_csv(csv, two_chunks(), runs);
    EXPECT_NE(csv.str().find("0,1,1,AG,500.000,1.500000,1.750000,9.125000\n"), std::string::npos)
        << csv.str();
    const std::vector<StageRun> back = read_stage_csv(csv);
    ASSERT_EQ(back.size(), 3u);
    const int want_chunk[] = {0, 0, 1}, want_stage[] = {0, 1, 0};
    for (size_t i = 0; i < back.size(); ++i) {
        EXPECT_EQ(back[i].ref.chunk, want_chunk[i]);
        EXPECT_EQ(back[i].ref.stage, want_stage[i]);
    }
    EXPECT_NEAR(back[1].ready, 1.5e-6, 1e-12);
    EXPECT_NEAR(back[1].start, 1.75e-6, 1e-12);
    EXPECT_NEAR(back[1].end, 9.125e-6, 1e-12);
    EXPECT_EQ(back[1].dim, 1);
}

TEST(TraceCsv, CallsOfATraceAreKeptApart) {
    std::stringstream csv;
    write_stage_csv_header(csv, true);
    write_stage_csv(csv, two_chunks(), {run(0, 0, 0, 0, 0, 1e-3)}, 0);
    write_stage_csv(csv, two_chunks(), {run(0, 0, 0, 0, 0, 2e-3), run(1, 1, 1, 0, 0, 3e-3)}, 1);
    write_stage_csv(csv, two_chunks(), {run(1, 0, 0, 0, 0, 4e-3)}, 2);
    const std::string text = csv.str();
    std::stringstream a(text), b(text), missing(text);
    const auto last = read_stage_csv(a);
    ASSERT_EQ(last.size(), 1u);
    EXPECT_NEAR(last[0].end, 4e-3, 1e-12);
    const auto second = read_stage_csv(b, 1);
    ASSERT_EQ(second.size(), 2u);
    EXPECT_NEAR(second[1].end, 3e-3, 1e-12);
    EXPECT_THROW(read_stage_csv(missing, 7), std::runtime_error);
}

TEST(TraceCsv, MalformedInputIsNamed) {
    std::stringstream not_csv("hello\n1,2\n");
    EXPECT_THROW(read_stage_csv(not_csv), std::runtime_error);
    std::stringstream bad_row("chunk,stage,dim,phase,input_bytes,ready_us,start_us,end_us\n"
                              "0,0,0,RS,10,0,0,1\n0,1,x,AG,5,1,1,2\n");
    try {
        read_stage_csv(bad_row);
        FAIL() << "no error";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    }
}

TEST(TraceBusy, OverlappingStagesCountOncePerDimension) {
    // dim 0: [0,2] and [1,3] overlap -> 3, [2.5,2.75] inside, [5,6] -> 1: 4 in all.
    // dim 1: [0,1] -> 1. dim 2: nothing.
    const std::vector<StageRun> runs = {run(0, 0, 0, 0, 0, 2), run(1, 0, 0, 0, 1, 3),
                                        run(2, 0, 0, 0, 2.5, 2.75), run(3, 0, 0, 0, 5, 6),
                                        run(0, 1, 1, 0, 0, 1)};
    const std::vector<double> busy = busy_per_dim(runs, 3);
    EXPECT_DOUBLE_EQ(busy[0], 4.0);
    EXPECT_DOUBLE_EQ(busy[1], 1.0);
    EXPECT_DOUBLE_EQ(busy[2], 0.0);
    EXPECT_DOUBLE_EQ(makespan(runs), 6.0);
}
