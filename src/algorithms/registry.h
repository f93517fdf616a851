// registry: every per-dimension algorithm, one row each, and the look-ups the rest of
// themis makes through it (names, parsing, validation, cost-model steps, calibration's
// step pattern, the stage factory).
//
//   row      id, name, other spellings, steps(n), accepts(n), the peers of one step, factory
//   table    registry.cpp, in the order of enum Algorithm
//   adding   one file in src/algorithms/ (the stage's state machine and its make_ function)
//            and one row in registry.cpp, with its value in enum Algorithm below
//
// Nothing outside this file and registry.cpp names an algorithm's spelling or its rules.
//
// Phases. The rows of algorithms() run the exchange phases (Reduce-Scatter, All-Gather): a
// dimension runs one of them, chosen by the spec or the planner. The rooted phases (a
// tree's group casts: Cast, Collect) run the group cast (its own row, outside
// algorithms()), whatever the dimension's: a cast's source and targets are the tree's.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace themis {

class StageContext;   // stage.h
class StageAlgorithm; // stage.h
enum class Phase;     // cost_model.h

// How one stage runs on a dimension: one value per row of the table in registry.cpp, in
// the same order (Dimension::alternatives holds 1 << value); the exchange algorithms, then
// the rooted one.
enum class Algorithm { Ring, HalvingDoubling, Direct, GroupCast };
constexpr int kAlgorithmKinds = 4;

// The peers a rank talks to in one step of the algorithm: what calibration measures.
struct StepPeers {
    std::vector<int> to, from;
};

struct AlgorithmInfo {
    Algorithm id;
    std::string name;                 // canonical: specs, to_spec, calibration keys, output
    std::string long_name;            // spelled out in messages ("hd (halving-doubling)"), or ""
    std::vector<std::string> aliases; // other spellings the spec accepts (lower case)
    int (*steps)(int peers);          // latency-bound steps of one stage (0 on one peer)
    bool (*accepts)(int peers);       // whether it runs on a dimension of `peers`
    std::string needs;                // what accepts() asks for, in messages ("" when any)
    StepPeers (*step_peers)(int me, int peers);
    std::unique_ptr<StageAlgorithm> (*make)(const StageContext &ctx);
};

// Every exchange algorithm's row, in enum order: what a dimension may run.
const std::vector<AlgorithmInfo> &algorithms();
// Any row, the rooted one's too.
const AlgorithmInfo &algorithm_info(Algorithm a);

const char *algorithm_name(Algorithm a);
// "hd (halving-doubling)": the name, with its long name where it has one.
std::string algorithm_label(Algorithm a);
// The algorithm `text` (already trimmed and lower case) names, by name or alias.
std::optional<Algorithm> find_algorithm(const std::string &text);
// Every name, for a message: "ring, hd (halving-doubling) or direct".
std::string algorithm_choices();

// What a stage of `phase` runs on a dimension whose algorithm is `dimension`: that, or
// the group cast for a rooted phase.
Algorithm stage_algorithm_for(Algorithm dimension, Phase phase);

// Creates the stage the algorithm runs (the row's factory).
std::unique_ptr<StageAlgorithm> make_stage_algorithm(Algorithm algorithm, const StageContext &ctx);

} // namespace themis
