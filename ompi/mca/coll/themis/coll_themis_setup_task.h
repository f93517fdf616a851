// coll_themis_setup_task.h: a communicator's set-up as a task of nonblocking steps.
//
// Setting a communicator up (private duplicate, placement agreement, transports,
// calibration, device-direct probe: coll_themis_setup.cpp) is a sequence of collective
// steps. It runs as a task on a stack of its own, started by the communicator's first
// eligible call, blocking or not, and advanced from Open MPI's progress loop: every
// step starts nonblocking operations and waits by polling that loop, and a poll made
// inside the task hands the thread back to whoever resumed it. So a nonblocking call that
// starts a set-up returns at once, and a rank never waits inside one set-up while a peer
// needs it in another.
//
// Why ranks that start communicators in different orders cannot deadlock: a set-up's
// steps run on matching spaces no other traffic uses (its private duplicate, created first
// over the parent with a tag of its own), in the same order on every rank; whenever a rank is
// anywhere in MPI it polls the progress loop, which advances every set-up of that thread to its
// next wait. A set-up of communicator A therefore advances as soon as A's peers have started it,
// whatever other set-ups are under way: no rank waits on another set-up for it. Blocking calls wait
// for their own set-up the same way.
//
// Calls that come while a set-up runs (coll_themis_entry.h): blocking ones wait for it;
// eligible nonblocking and persistent ones are held in MPI order and started when it ends,
// on themis, or, when the communicator is declined, on the private duplicate's collectives
// (the module below, in a matching space of its own: starting them later on the user's
// communicator could reorder them against its other nonblocking collectives, which
// differ between ranks in time). Ineligible calls go to the module below at once.
#pragma once

#include "coll_themis_prelude.h"

#include <functional>
#include <memory>

#include "coll_themis.h"
#include "coll_themis_call.h"

namespace themis {

// Starts the set-up of m's communicator if it has not started (returns at once, the
// task advancing from the progress loop); `device_buffers`: the call carries device
// buffers (coll_themis_context.h).
void begin_setup(mca_coll_themis_module_t *m, ompi_communicator_t *comm, bool device_buffers);
// Polls the progress loop until m's set-up has ended (READY or DECLINED).
void finish_setup(mca_coll_themis_module_t *m);
inline bool setup_running(const mca_coll_themis_module_t *m) {
    return m->setup_state == THEMIS_SETUP_RUNNING;
}

// Holds `call` until m's set-up ends; then `launch` fills it in (Call::hold), calls in the
// order they came. A launch that throws completes the request with an error. Launched at
// once if the set-up ended meanwhile (another thread).
using Launch = std::function<void(Call &)>;
void hold_until_setup(mca_coll_themis_module_t *m, Call &call, Launch launch);

// Inside a set-up: counts one of its rounds (a collective exchange; the event setup_end says
// how many). setup_wait() counts the exchanges below; a step that waits otherwise counts its own.
void count_setup_round();

} // namespace themis
