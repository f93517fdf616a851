// coll_themis_barrier.cpp: MPI_Barrier. Themis has no barrier of its own; the slot is
// where a communicator that only nonblocking or persistent calls have used gets set up
// (they cannot set it up themselves: see coll_themis_entry.h). A barrier is blocking and
// every rank enters a communicator's barriers in the same order as its other collectives,
// so all ranks find the same wish here and set up together; their later nonblocking calls
// run on themis. OSU's nonblocking benchmarks, and codes that overlap with MPI_Iallreduce
// only, call a barrier between phases.
#include "coll_themis_context.h"

extern "C" int mca_coll_themis_barrier(struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module) {
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    if (!m->in_setup && m->setup_wanted && m->setup_state == THEMIS_SETUP_PENDING)
        (void)themis::context_for(m, comm, m->setup_wanted_device);
    return m->previous_barrier(comm, m->previous_barrier_module);
}
