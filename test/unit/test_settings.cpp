// Unit tests of src/settings.h: the core's parameter structs and themis-sim start from the
// settings the component's parameters use, and every choice name means the same value in
// each. (The component against themis-sim, through ompi_info: test/mpi/check_ompi_info.sh.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan.h"
#include "planner.h"
#include "settings.h"
#include "sim_options.h"
#include "sim_paper.h"

using namespace themis;
using namespace themis::sim;

namespace {

// themis-sim's options for one run: what it requires, then `more`.
Options sim_options(const std::vector<std::string> &more = {}) {
    std::vector<std::string> args = {"themis-sim", "--topology", "2x4", "--size", "1M"};
    args.insert(args.end(), more.begin(), more.end());
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    return parse_args(static_cast<int>(argv.size()), argv.data());
}

TEST(Settings, CoreParameterStructsStartFromTheSharedDefaults) {
    const PlanRequest req;
    EXPECT_EQ(req.chunks, kAutoChunks); // the planner, by default (#33)
    EXPECT_EQ(req.chunks, THEMIS_CHUNKS_DEFAULT);
    EXPECT_EQ(req.min_chunk_bytes, uint64_t(THEMIS_MIN_CHUNK_BYTES_DEFAULT));
    EXPECT_EQ(req.ordering.max_active, THEMIS_MAX_ACTIVE_DEFAULT);
    EXPECT_EQ(req.ordering.max_active_bytes, double(THEMIS_MAX_ACTIVE_BYTES_DEFAULT));
    EXPECT_EQ(static_cast<int>(req.ordering.intra), THEMIS_INTRA_DEFAULT);
    EXPECT_EQ(static_cast<int>(req.scheduler.policy), THEMIS_POLICY_DEFAULT);
    EXPECT_EQ(static_cast<int>(req.scheduler.load_model), THEMIS_LOAD_DEFAULT);
    EXPECT_EQ(req.scheduler.threshold, THEMIS_THRESHOLD_DEFAULT);
    EXPECT_EQ(kMaxAutoChunks, THEMIS_AUTO_CHUNKS_MAX);
}

TEST(Settings, ThemisSimPlansAsTheComponentsDefaultsDo) {
    const Options o = sim_options();
    const PlanRequest sim = plan_request(o.run), core;
    EXPECT_EQ(sim.chunks, core.chunks);
    EXPECT_EQ(sim.min_chunk_bytes, core.min_chunk_bytes);
    EXPECT_EQ(sim.ordering.max_active, core.ordering.max_active);
    EXPECT_EQ(sim.ordering.max_active_bytes, core.ordering.max_active_bytes);
    EXPECT_EQ(sim.ordering.intra, core.ordering.intra);
    EXPECT_EQ(sim.scheduler.policy, core.scheduler.policy);
    EXPECT_EQ(sim.scheduler.load_model, core.scheduler.load_model);
    EXPECT_EQ(sim.scheduler.threshold, core.scheduler.threshold);
    EXPECT_EQ(o.run.carry_load, bool(THEMIS_CARRY_LOAD_DEFAULT));
}

TEST(Settings, ThemisSimHelpShowsEveryDefaultFilledIn) {
    const std::string help = help_text();
    EXPECT_EQ(help.find('{'), std::string::npos) << "a {field} left unfilled";
    EXPECT_NE(help.find("(default 4, as coll_themis_max_active)"), std::string::npos);
    EXPECT_NE(help.find("(default 2097152 (2MiB), as coll_themis_max_active_bytes)"),
              std::string::npos);
    EXPECT_NE(help.find("(default scf, as coll_themis_intra_policy)"), std::string::npos);
}

// Every name of a choice parses, in themis-sim, to the value the core names by it.
TEST(Settings, ChoiceNamesMeanTheSameValueEverywhere) {
    for (const SettingChoice &c : kPolicyChoices) {
        EXPECT_STREQ(policy_name(static_cast<Policy>(c.value)), c.name);
        EXPECT_EQ(static_cast<int>(sim_options({"--policy", c.name}).run.scheduler.policy),
                  c.value);
    }
    for (const SettingChoice &c : kIntraChoices)
        EXPECT_STREQ(intra_policy_name(static_cast<IntraPolicy>(c.value)), c.name);
    for (const SettingChoice &c : kLoadModelChoices)
        EXPECT_STREQ(load_model_name(static_cast<LoadModel>(c.value)), c.name);
    EXPECT_STREQ(intra_policy_name(IntraPolicy::ScfNewest), "scf_newest");
    EXPECT_STREQ(policy_name(Policy::Baseline), "baseline");
    EXPECT_STREQ(load_model_name(LoadModel::Reference), "reference");
}

TEST(Settings, ThemisSimTakesFillCurvesAsTheSpecWritesThem) {
    // No curve by default: a full link, as the component without a measured one.
    for (const Dimension &d : sim_options().run.topology.dims()) EXPECT_TRUE(d.fill.empty());
    const Options all = sim_options({"--fill", "0.56/0.78/0.94"});
    for (const Dimension &d : all.run.topology.dims())
        EXPECT_EQ(d.fill, (std::vector<double>{0.56, 0.78, 0.94}));
    const Options each = sim_options({"--fill=1,0.5/0.9"});
    EXPECT_TRUE(each.run.topology.dim(0).fill.empty());
    EXPECT_EQ(each.run.topology.dim(1).fill, (std::vector<double>{0.5, 0.9}));
    // Over a paper topology too; in the spec as fill=.
    const char *paper[] = {"themis-sim", "--topology", "2D-SW_SW", "--size", "1M", "--fill", "0.5"};
    const Options p = parse_args(7, const_cast<char **>(paper));
    EXPECT_EQ(p.run.topology.dim(1).fill, std::vector<double>{0.5});
    const char *spec[] = {"themis-sim", "--topology", "2x4:fill=0.5", "--size", "1M"};
    EXPECT_EQ(parse_args(5, const_cast<char **>(spec)).run.topology.dim(0).fill,
              std::vector<double>{0.5});
    // Refused with the spec's message, or when both give a curve.
    try {
        sim_options({"--fill", "1.5"});
        ADD_FAILURE() << "accepted";
    } catch (const UsageError &e) {
        EXPECT_NE(std::string(e.what()).find("--fill \"1.5\": dimension 0 fill"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(sim_options({"--fill", "1,1,1"}), UsageError);
    const char *both[] = {"themis-sim", "--topology", "2x4:FILL=0.5", "--size", "1M",
                          "--fill",     "1"};
    EXPECT_THROW(parse_args(7, const_cast<char **>(both)), UsageError);
    EXPECT_NE(help_text().find("--fill LIST"), std::string::npos);
}

TEST(Settings, ThemisSimRefusesWhatTheComponentRefuses) {
    for (const char *k : {"0", "65"})
        EXPECT_THROW(sim_options({"--max-active", k}), UsageError) << k;
}

} // namespace
