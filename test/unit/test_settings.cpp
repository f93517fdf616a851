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
    EXPECT_EQ(req.chunks, 128);
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

TEST(Settings, ThemisSimRefusesWhatTheComponentRefuses) {
    for (const char *k : {"0", "65"})
        EXPECT_THROW(sim_options({"--max-active", k}), UsageError) << k;
}

} // namespace
