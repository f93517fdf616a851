// coll_themis_inherit.h: a communicator whose processes were set up before inherits that
// set-up.
//
// Programs, libraries and test suites make communicators of the same processes again and again:
// MPI_Comm_dup of the world communicator per library or per test, a split that keeps every
// rank. A set-up (coll_themis_setup.cpp) decides everything from the processes, where they run
// and the choices given: the layout and its rates, the base transport and its message parts
// (UCX: every worker's address), the single-copy node dimensions, whether the refinement runs.
// What it decided is kept in the process under the group's key: the processes in rank order,
// the communicator's info choices that the set-up reads (themis_transport,
// themis_node_transport) and whether its first call carried device buffers. A later
// communicator with the same key connects again from it, locally, and one round checks that
// every rank holds the same (a fingerprint of all of it) and connected: then it runs, having
// measured and exchanged nothing. Only what belongs to the communicator is its own: its
// private duplicate (its context id) and the engine's tags on it. It also starts with the
// crossover's decisions taken on earlier communicators of the group (coll_themis_crossover.h),
// which are part of the fingerprint.
//
// Rates revised at run time are kept for the group too (keep_group_rates). A set-up in
// device-direct mode (CUDA IPC) is not kept: its probe belongs to the device buffers of the call
// that started it.
//
// Spares. A communicator freed with nothing in flight leaves its context (engine, transports,
// buffers, plans) and its private duplicate behind for the next communicator of its group
// (keep_spare, from its destructor): then the next one makes no private duplicate either, and
// its first call runs as warm as the freed one's last. A spare is taken only where every rank
// holds the same one (the same private duplicate, found in the same round), and the engine's
// tags go on from where they were, so no message of the freed communicator's calls can meet
// the new one's. At most kSparesPerGroup per group and kSpares in all are kept (the oldest
// goes), none once MPI_Finalize has begun, and all are released as it begins (an attribute of
// MPI_COMM_SELF, whose deletion MPI runs first in MPI_Finalize).
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "coll_themis_calibrate.h"
#include "coll_themis_grid_source.h"
#include "coll_themis_log.h"
#include "coll_themis_transports.h"
#include "crossover.h"
#include "host_memory.h"
#include "rank_layout.h"

namespace themis {

class Context;

// The processes of `comm` in rank order and the set-up's choices (see the top).
using GroupKey = std::string;
GroupKey group_key(ompi_communicator_t *comm, bool device_buffers);

// What a set-up decided, the same on every rank.
struct GroupSetup {
    RankPlacement placement;
    GridChoice grid;
    std::string note;  // the layout's, for the verbose log ("" if none)
    RankLayout layout; // its topology with the rates in force
    BaseTransportChoice transport;
    std::vector<LogEvent> said;         // the events transport, mismatch: said again by inheritors
    std::vector<bool> cma;              // the single-copy node dimensions
    CalibratedTopology rates;           // their sources and where they are kept
    bool refine = true;                 // the refinement's settings were alike on every rank
    std::shared_ptr<HostMemory> memory; // temporaries, shared by the group's communicators
};

// Keeps what the set-up of a communicator with `key` decided.
void remember_setup(const GroupKey &key, GroupSetup setup);

// Rates revised at run time (coll_themis_refine.h) on a communicator of `key`: later ones
// start from them.
void keep_group_rates(const GroupKey &key, const Topology &revised);

// A bin the crossover decided on a communicator of `key`: later ones start with it.
void keep_group_decision(const GroupKey &key, int collective, size_t bytes,
                         Crossover::Runner runner);

enum class Inheritance {
    Ready,  // `ctx` runs the communicator, set up as before
    Failed, // every rank held the set-up, some could not connect: declined, said
    None    // not every rank holds the same: set it up anew
};

// Collective over m's communicator, one round on the communicator itself (not the private
// duplicate, which it makes where no spare serves: m->context->dup is set after it unless
// it returns None).
Inheritance inherit(mca_coll_themis_module_t *m, ompi_communicator_t *comm, const GroupKey &key,
                    std::unique_ptr<Context> &ctx);

constexpr size_t kSparesPerGroup = 2, kSpares = 8;
// From a communicator's destructor: takes `ctx` and `dup` as a spare (both then null) when
// `ctx` is idle and may serve again; false otherwise (the caller frees them).
bool keep_spare(std::unique_ptr<Context> &ctx, ompi_communicator_t *&dup);

} // namespace themis
