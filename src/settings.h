/* settings.h: the settings that the component's MCA parameters, the core's parameter
 * structs and themis-sim share, each once: its default, its range and, for a choice, the
 * names of its values. All three read them from here, so their defaults cannot disagree
 * (the unit test Settings.* checks the structs and themis-sim against this file; the
 * component's parameter table uses these names directly).
 *
 * Why each default is what it is: docs/design.md, "Why the defaults".
 *
 * Plain C as well as C++: the component's parameter table is C. */
#ifndef THEMIS_SETTINGS_H
#define THEMIS_SETTINGS_H

/* coll_themis_chunks, --chunks: chunks a collective is split into, at most; 0 = auto (the
 * planner predicts the count). */
#define THEMIS_CHUNKS_DEFAULT 0
#define THEMIS_CHUNKS_MAX 4096
/* The most chunks the planner picks when the count is auto. */
#define THEMIS_AUTO_CHUNKS_MAX 128

/* coll_themis_min_chunk_bytes, --min-chunk-bytes: no chunk smaller; 0 = no floor. */
#define THEMIS_MIN_CHUNK_BYTES_DEFAULT (128 * 1024)

/* coll_themis_max_active, --max-active: stages running at once per dimension (K). */
#define THEMIS_MAX_ACTIVE_DEFAULT 4
#define THEMIS_MAX_ACTIVE_MIN 1
#define THEMIS_MAX_ACTIVE_MAX 64

/* coll_themis_max_active_bytes, --max-active-bytes: stage bytes running at once per
 * dimension; 0 = no bound but max_active. */
#define THEMIS_MAX_ACTIVE_BYTES_DEFAULT (2 * 1024 * 1024)

/* coll_themis_threshold: the fallback to the baseline order (the paper's value). */
#define THEMIS_THRESHOLD_DEFAULT (1.0 / 16)
#define THEMIS_THRESHOLD_MIN 0.0
#define THEMIS_THRESHOLD_MAX 1.0

/* coll_themis_carry_load, --carry-load: plan a call from the load the one before left. */
#define THEMIS_CARRY_LOAD_DEFAULT 1

/* A choice's values: X(CONSTANT, number, "name"). Each user builds its own table from the
 * list (the component Open MPI's enum values, the core its name functions, themis-sim its
 * option parsing), so a value added here reaches all three. */

/* coll_themis_policy, --policy: the order of dimensions a chunk takes. */
#define THEMIS_POLICY_CHOICES(X)                                                                   \
    X(THEMIS_POLICY_BASELINE, 0, "baseline")                                                       \
    X(THEMIS_POLICY_THEMIS, 1, "themis")
#define THEMIS_POLICY_DEFAULT THEMIS_POLICY_THEMIS

/* coll_themis_intra_policy, --intra: the order of ready stages on a dimension. */
#define THEMIS_INTRA_CHOICES(X)                                                                    \
    X(THEMIS_INTRA_FIFO, 0, "fifo")                                                                \
    X(THEMIS_INTRA_SCF, 1, "scf")
/* The paper's reference code's tie rule: the core and themis-sim only (a research setting
 * to reproduce the paper's numbers, not a parameter of the component). */
#define THEMIS_INTRA_RESEARCH_CHOICES(X) X(THEMIS_INTRA_SCF_NEWEST, 2, "scf_newest")
#define THEMIS_INTRA_DEFAULT THEMIS_INTRA_SCF

/* coll_themis_load_model, --load-model: what the load tracker charges per stage. */
#define THEMIS_LOAD_CHOICES(X)                                                                     \
    X(THEMIS_LOAD_REFERENCE, 0, "reference")                                                       \
    X(THEMIS_LOAD_LATENCY, 1, "latency")
#define THEMIS_LOAD_DEFAULT THEMIS_LOAD_LATENCY

#define THEMIS_CHOICE_CONSTANT(constant, number, name) constant = number,
enum { THEMIS_POLICY_CHOICES(THEMIS_CHOICE_CONSTANT) };
enum {
    THEMIS_INTRA_CHOICES(THEMIS_CHOICE_CONSTANT)
        THEMIS_INTRA_RESEARCH_CHOICES(THEMIS_CHOICE_CONSTANT)
};
enum { THEMIS_LOAD_CHOICES(THEMIS_CHOICE_CONSTANT) };
#undef THEMIS_CHOICE_CONSTANT

/* A row {number, "name"} of a table built from a *_CHOICES list. */
#define THEMIS_CHOICE_ROW(constant, number, name) {number, name},

#ifdef __cplusplus
#include <cstddef>

namespace themis {

// A choice's value and its name: the rows of the core's and themis-sim's tables.
struct SettingChoice {
    int value;
    const char *name;
};

inline constexpr SettingChoice kPolicyChoices[] = {THEMIS_POLICY_CHOICES(THEMIS_CHOICE_ROW)};
inline constexpr SettingChoice kIntraChoices[] = {
    THEMIS_INTRA_CHOICES(THEMIS_CHOICE_ROW) THEMIS_INTRA_RESEARCH_CHOICES(THEMIS_CHOICE_ROW)};
inline constexpr SettingChoice kLoadModelChoices[] = {THEMIS_LOAD_CHOICES(THEMIS_CHOICE_ROW)};

// The name of `value` in `choices`; "?" for a value not in it.
template <std::size_t N>
constexpr const char *choice_name(const SettingChoice (&choices)[N], int value) {
    for (const SettingChoice &c : choices)
        if (c.value == value) return c.name;
    return "?";
}

} // namespace themis
#endif

#endif /* THEMIS_SETTINGS_H */
