// sim_options: themis-sim's command line: its help text, its options and their parsing
// (every error a UsageError naming the option).
#pragma once

#include <set>
#include <stdexcept>
#include <string>

#include "sim_paper.h"

namespace themis::sim {

// The help text, with the defaults of settings.h filled in.
std::string help_text();

// A bad command line: main prints it as one line and exits with status 2.
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct Options {
    bool help = false, paper = false, bandwidth_only = false;
    std::string topology; // as given: a paper name or a spec
    std::string fill;     // --fill's list, as given
    SimCase run;          // everything but the topology
    std::string timeline_path, csv_path, measured_path, measured_timeline_path;
    int orders = 8;
    long call = -1;              // of the measured trace; -1: the last
    std::set<std::string> given; // option names seen
};

// The options of argv; a run's topology resolved (a paper name or a spec).
Options parse_args(int argc, char **argv);

} // namespace themis::sim
