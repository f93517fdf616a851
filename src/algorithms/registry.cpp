// registry: the table of per-dimension algorithms (see registry.h).
#include "registry.h"

#include "../cost_model.h"
#include "../stage.h"

namespace themis {

// The factories, each defined in its algorithm's file.
std::unique_ptr<StageAlgorithm> make_ring(const StageContext &ctx);
std::unique_ptr<StageAlgorithm> make_halving_doubling(const StageContext &ctx);
std::unique_ptr<StageAlgorithm> make_direct(const StageContext &ctx);
std::unique_ptr<StageAlgorithm> make_group_cast(const StageContext &ctx);

namespace {

bool any_peers(int) { return true; }

bool power_of_two(int peers) { return (peers & (peers - 1)) == 0; }

int log2_steps(int peers) {
    int steps = 0;
    for (int n = peers; n > 1; n >>= 1) ++steps;
    return steps;
}

// Ring: the right neighbour and the left one.
StepPeers neighbours(int me, int n) { return {{(me + 1) % n}, {(me + n - 1) % n}}; }

// Halving-doubling: the partner that differs in the lowest bit; any step moves data alike.
StepPeers partner(int me, int) { return {{me ^ 1}, {me ^ 1}}; }

// Group cast: the source peer (taken as peer 0) and every other.
StepPeers source_and_others(int me, int n) {
    if (me != 0) return {{0}, {0}};
    StepPeers peers;
    for (int c = 1; c < n; ++c) peers.to.push_back(c), peers.from.push_back(c);
    return peers;
}

// Direct: every peer at once.
StepPeers everyone(int me, int n) {
    StepPeers all;
    for (int c = 0; c < n; ++c)
        if (c != me) all.to.push_back(c), all.from.push_back(c);
    return all;
}

// Every row: the exchange algorithms, then the rooted one.
const std::vector<AlgorithmInfo> &all_rows() {
    // One row per algorithm, its fields laid out as the comment in it says.
    // clang-format off
    static const std::vector<AlgorithmInfo> table = {
        // id, name, long name, aliases,
        //     steps(n), accepts(n), needs, peers of one step, factory
        {Algorithm::Ring, "ring", "", {},
             [](int n) { return n - 1; }, any_peers, "", neighbours, make_ring},
        {Algorithm::HalvingDoubling, "hd", "halving-doubling", {"halving-doubling", "rhd"},
             log2_steps, power_of_two, "a power-of-two number of peers", partner,
             make_halving_doubling},
        {Algorithm::Direct, "direct", "", {"fc"},
             [](int n) { return n > 1 ? 1 : 0; }, any_peers, "", everyone, make_direct},
        {Algorithm::GroupCast, "cast", "group cast", {},
             [](int n) { return n > 1 ? 2 : 0; }, any_peers, "", source_and_others,
             make_group_cast},
    };
    // clang-format on
    return table;
}

} // namespace

const std::vector<AlgorithmInfo> &algorithms() {
    static const std::vector<AlgorithmInfo> exchange(all_rows().begin(), all_rows().end() - 1);
    return exchange;
}

const AlgorithmInfo &algorithm_info(Algorithm a) { return all_rows().at(size_t(a)); }

Algorithm stage_algorithm_for(Algorithm dimension, Phase phase) {
    return phase_info(phase).rooted ? Algorithm::GroupCast : dimension;
}

const char *algorithm_name(Algorithm a) { return algorithm_info(a).name.c_str(); }

std::string algorithm_label(Algorithm a) {
    const AlgorithmInfo &row = algorithm_info(a);
    return row.long_name.empty() ? row.name : row.name + " (" + row.long_name + ")";
}

std::optional<Algorithm> find_algorithm(const std::string &text) {
    for (const AlgorithmInfo &row : algorithms()) {
        if (text == row.name) return row.id;
        for (const std::string &alias : row.aliases)
            if (text == alias) return row.id;
    }
    return std::nullopt;
}

std::string algorithm_choices() {
    const std::vector<AlgorithmInfo> &rows = algorithms();
    std::string text;
    for (size_t i = 0; i < rows.size(); ++i)
        text += (i == 0 ? "" : i + 1 == rows.size() ? " or " : ", ") + algorithm_label(rows[i].id);
    return text;
}

std::unique_ptr<StageAlgorithm> make_stage_algorithm(Algorithm algorithm, const StageContext &ctx) {
    return algorithm_info(algorithm).make(ctx);
}

} // namespace themis
