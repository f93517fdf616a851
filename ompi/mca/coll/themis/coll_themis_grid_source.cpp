// coll_themis_grid_source.cpp: where dims=auto's grid of hosts comes from
// (coll_themis_grid_source.h).
#include "coll_themis_grid_source.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "calibration_file.h"
#include "coll_themis_log.h"
#include "coll_themis_params.h"
#include "coll_themis_test_hooks.h"
#include "fnv1a.h"
#include "slurm_topology.h"

namespace themis {

namespace {

bool is_auto(const std::string &dims) { return dims.compare(0, 4, "auto") == 0; }

// The hosts' grid of coll_themis_topo_file; nullopt when none is given or it cannot be
// used (said once: every process reads the same parameter).
std::optional<HostGrid> host_grid() {
    try {
        return read_topo_file(params().topo_file);
    } catch (const std::exception &e) {
        if (mca_coll_themis_first_time("topo-file") && mca_coll_themis_first_process())
            mca_coll_themis_show_help("topo-file", params().topo_file, e.what());
        return std::nullopt;
    }
}

// Node x nodes, with the reason, said once per process to the user where it is a problem
// of the input (a malformed variable), and always in the grid event.
void slurm_problem(GridChoice &choice, const std::string &why) {
    choice.why = why;
    if (mca_coll_themis_first_time("slurm-topology") && mca_coll_themis_first_process())
        mca_coll_themis_show_help("slurm-topology", why.c_str());
}

// The hosts' grid from every rank's SLURM_TOPOLOGY_ADDR(_PATTERN) (slurm_hosts judges them:
// any rank's bad value gives no grid, alike everywhere).
void grid_from_slurm_records(const RankPlacement &placement,
                             const std::vector<SlurmRecord> &records, GridChoice &choice) {
    std::vector<SlurmReading> readings(records.size());
    for (size_t r = 0; r < records.size(); ++r) {
        const SlurmRecord &s = records[r];
        readings[r].state = s.state == SlurmRecord::Set       ? SlurmReading::Set
                            : s.state == SlurmRecord::TooLong ? SlurmReading::TooLong
                                                              : SlurmReading::None;
        readings[r].limit = sizeof s.text - 2;
        const std::string text(s.text, strnlen(s.text, sizeof s.text));
        const size_t cut = text.find('\n');
        readings[r].addr = text.substr(0, cut);
        if (cut != std::string::npos) readings[r].pattern = text.substr(cut + 1);
    }
    const SlurmHosts places = slurm_hosts(placement.host_of, readings);
    if (!places.problem.empty()) return slurm_problem(choice, places.problem);
    if (places.hosts.size() < 2) {
        choice.why = "Slurm's switch tree places hosts, and this communicator has one host";
        return;
    }
    const GridResult found = grid_from_slurm(places.addresses);
    if (!found.found) {
        choice.why = "Slurm's switch tree: " + found.reason;
        return;
    }
    choice.source = "slurm";
    choice.grid = host_grid_of(found, places.hosts);
}

} // namespace

SlurmRecord my_slurm_record() {
    SlurmRecord mine;
    const SlurmEnv &env = slurm_env();
    if (!env.set) return mine;
    const std::string text = env.addr + '\n' + env.pattern;
    mine.state = text.size() < sizeof mine.text ? SlurmRecord::Set : SlurmRecord::TooLong;
    if (mine.state == SlurmRecord::Set) std::copy(text.begin(), text.end(), mine.text);
    return mine;
}

GridChoice choose_grid(const RankPlacement &placement, const std::vector<SlurmRecord> &slurm) {
    GridChoice choice;
    if (!is_auto(params().dims)) {
        choice.source = "given";
        return choice;
    }
    if (params().topo_file != nullptr && params().topo_file[0] != '\0') {
        choice.grid = host_grid();
        if (choice.grid)
            choice.source = "topo_file";
        else
            choice.why = "the topology file cannot be used";
        return choice;
    }
    choice.why = "no topology file, no Slurm topology";
    if (std::any_of(slurm.begin(), slurm.end(),
                    [](const SlurmRecord &r) { return r.state != SlurmRecord::None; })) {
        grid_from_slurm_records(placement, slurm, choice);
        return choice;
    }
    const std::set<std::string> hosts(placement.host_of.begin(), placement.host_of.end());
    if (hosts.size() < 4) {
        choice.why += ", " + std::to_string(hosts.size()) +
                      (hosts.size() == 1 ? " host" : " hosts") + ": fewer than 4 to probe";
        return choice;
    }
    if (params().grid_probe_seconds <= 0) {
        choice.why += ", probing off (coll_themis_grid_probe_seconds=0)";
        return choice;
    }
    choice.probe = true;
    ProbeOutcome::Kept kept = ProbeOutcome::Kept::No;
    if (const std::optional<GridResult> known = known_grid(placement.host_of, kept))
        set_probed(choice, *known, kept, placement);
    return choice;
}

void set_probed(GridChoice &choice, const GridResult &found, ProbeOutcome::Kept kept,
                const RankPlacement &placement) {
    choice.known = true;
    const std::string text = grid_text(found); // not its reason, which says where it was kept
    Fnv1a h;
    h.bytes(text.data(), text.size());
    choice.known_print = h.digest();
    choice.probes = kept == ProbeOutcome::Kept::No ? found.probes : 0;
    choice.kept = kept == ProbeOutcome::Kept::File      ? "file"
                  : kept == ProbeOutcome::Kept::Process ? "process"
                                                        : "";
    if (!found.found) {
        choice.source = "none";
        choice.grid.reset();
        choice.why = "probing found no grid: " + found.reason;
        return;
    }
    const std::set<std::string> hosts(placement.host_of.begin(), placement.host_of.end());
    choice.source = "probe";
    choice.grid = host_grid_of(found, std::vector<std::string>(hosts.begin(), hosts.end()));
}

RankLayout layout_of(const RankPlacement &placement, GridChoice &choice, std::string &note) {
    if (choice.grid) {
        try {
            return make_rank_layout(params().dims, placement, &*choice.grid,
                                    params().split_packages);
        } catch (const LayoutError &e) {
            const std::string what = choice.source == "topo_file" ? "the topology file"
                                     : choice.source == "slurm"   ? "Slurm's switch tree"
                                                                  : "the probed grid";
            note = what + " does not fit this communicator (" + e.what() + "): node level x nodes";
            choice.why = what + " does not fit this communicator: " + e.what();
            choice.source = "none";
            choice.grid.reset();
        }
    }
    return make_rank_layout(params().dims, placement, nullptr, params().split_packages);
}

void report_grid(ompi_communicator_t *comm, const GridChoice &choice) {
    LogEvent event("grid");
    event.add("source", choice.source);
    std::string dims = choice.source == "given" ? std::string(params().dims) : "none", coords;
    if (choice.grid) {
        dims.clear();
        for (int n : choice.grid->sizes) dims += (dims.empty() ? "" : "x") + std::to_string(n);
        for (const auto &[host, c] : choice.grid->coords) {
            coords += (coords.empty() ? "" : ",") + host + ":";
            for (size_t d = 0; d < c.size(); ++d) coords += (d ? "." : "") + std::to_string(c[d]);
        }
    }
    event.add("dims", dims).add("seconds", choice.seconds, "%.3f");
    if (choice.probes >= 0) event.add("probes", (long long)choice.probes);
    if (!choice.kept.empty()) event.add("kept", choice.kept);
    if (choice.grid) event.add("coords", coords);
    if (!choice.grid && !choice.why.empty()) event.add("why", choice.why);
    event.emit(1, comm);
    if (choice.source == "given") return;
    static const std::map<std::string, std::string> from = {{"topo_file", "coll_themis_topo_file"},
                                                            {"slurm", "Slurm's switch tree"},
                                                            {"probe", "probing"}};
    say(1, comm,
        choice.grid ? "grid from " + from.at(choice.source) + ": " + dims + " hosts"
                    : "grid from nothing (" + choice.why + "): node level x nodes");
}

} // namespace themis
