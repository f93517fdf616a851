// coll_themis_agreement.h: how a set-up's ranks agree, in as few rounds as the steps'
// dependencies allow.
//
// Every decision of a set-up must be the same on every rank, so every step that depends on
// something only one rank knows (a measurement, a cache it read, a parameter it was given)
// asks all ranks. A round costs a reduction over the communicator (log P latencies), and a
// set-up of a dozen separate rounds cost more than a new communicator of the module below does
// in all. So a step does not run its own reduction: it adds the values it needs agreed to an
// Agreement, and one reduction agrees on everything the steps before it have put there; each
// step then reads its answers. Values of several kinds share that one reduction (a maximum,
// MPI_MAX over doubles): a minimum is the maximum of the negated value, "true everywhere" the
// maximum of a failure flag, "the same everywhere" a 64-bit value's halves (exact in a double)
// whose maximum and minimum are equal.
//
// gather() is the other kind of round: every rank's fixed-size record, to every rank.
//
// Both run on the set-up's private duplicate (coll_themis_setup_task.h), inside its task; each
// is one of the set-up's rounds (counted: the event setup_end, docs/log-events.md). The first
// round of every set-up, which decides whether it needs a private duplicate at all
// (coll_themis_inherit.h), runs on the communicator itself (Agreement::run_among).
// Every rank must add the same kinds of values in the same order: the reduction's length is
// theirs.
#pragma once

#include "coll_themis_prelude.h"

#include <cstdint>
#include <vector>

#include "coll_themis.h"

namespace themis {

class Agreement {
  public:
    using Slot = size_t;

    // Before run(): a value to agree on, and the slot its answer is read from.
    Slot max(double value);    // the largest over the ranks
    Slot min(double value);    // the least
    Slot all(bool value);      // true when true on every rank
    Slot same(uint64_t value); // true when every rank gave the same value

    // Collective over m's communicator: one reduction agrees on every value added, on the
    // set-up's private duplicate.
    void run(mca_coll_themis_module_t *m);
    // The same over `comm` itself, before the private duplicate exists: point-to-point
    // messages (recursive doubling) with a tag of the set-up's own, which neither the program
    // (negative) nor the collective components (far above it) use. Once per communicator.
    void run_among(ompi_communicator_t *comm);

    // After run().
    double value(Slot slot) const; // of max() or min()
    bool holds(Slot slot) const;   // of all() or same()

  private:
    enum class Kind : uint8_t { Max, Min, All, Same };
    Slot add(Kind kind, std::initializer_list<double> values);

    std::vector<Kind> kinds_;
    std::vector<size_t> first_; // per slot: its first value
    std::vector<double> mine_, agreed_;
};

// One round's shortcuts.
// True on every rank when `ok` is true on every rank.
bool all_agree(mca_coll_themis_module_t *m, bool ok);
// Every element replaced by its maximum over the ranks.
void agree_max(mca_coll_themis_module_t *m, std::vector<double> &values);

// Collective: every rank's `bytes` bytes at `mine`, in rank order, into `all`.
void gather_bytes(mca_coll_themis_module_t *m, const void *mine, void *all, int bytes);
// Every rank's record (a trivially copyable T), in rank order.
template <typename T> std::vector<T> gather(mca_coll_themis_module_t *m, const T &mine) {
    std::vector<T> all(size_t(ompi_comm_size(m->comm)));
    gather_bytes(m, &mine, all.data(), int(sizeof(T)));
    return all;
}

// Inside a set-up: polls the progress loop until `request` completes (the task steps
// aside at each poll), frees it and throws `what` if it failed (a round).
void setup_wait(ompi_request_t *request, const char *what);
// The set-up's exchanges, on the private duplicate (the module below's nonblocking
// collectives there): throw on failure. The helpers above are made of them.
void setup_allreduce(mca_coll_themis_module_t *m, const void *in, void *out, int count,
                     ompi_datatype_t *type, ompi_op_t *op);
void setup_allgather(mca_coll_themis_module_t *m, const void *mine, void *all, int bytes);

} // namespace themis
