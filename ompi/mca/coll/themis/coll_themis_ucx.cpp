// coll_themis_ucx.cpp: the process's UCX worker and the endpoints to a communicator's peers.
#include "coll_themis_ucx.h"

#include <algorithm>
#include <stdexcept>

#include "coll_themis_compat.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"

namespace themis {

namespace {

// Owned by the component: created by the first communicator that wants UCX.
struct ProcessUcx {
    std::unique_ptr<UcxWorker> worker;
    std::string why_not; // set when creation failed: never tried again
    bool tried = false;
};
ProcessUcx process_ucx;

// Keeps our worker moving while this rank waits anywhere in Open MPI: a peer may
// need it (connection set-up, rendezvous) while we are not inside themis.
int progress_ucx() {
    if (!process_ucx.worker) return 0;
    return static_cast<int>(process_ucx.worker->progress());
}

} // namespace

UcxWorker *process_ucx_worker(std::string &why) {
    // Under MPI_THREAD_MULTIPLE, collectives on different communicators run at once and
    // every thread's opal_progress() calls progress_ucx(); the worker is single-threaded
    // (UCS_THREAD_MODE_SINGLE) and completing a request runs its transport's callback,
    // so two threads would corrupt it. The PML is thread-safe: it carries the traffic.
    if (ompi_mpi_thread_multiple) {
        why = "MPI_THREAD_MULTIPLE (themis's UCX worker serves a single thread)";
        return nullptr;
    }
    if (!process_ucx.tried) {
        process_ucx.tried = true;
        process_ucx.worker = UcxWorker::create(process_ucx.why_not);
        if (process_ucx.worker) opal_progress_register(progress_ucx);
    }
    why = process_ucx.why_not;
    return process_ucx.worker.get();
}

std::unique_ptr<UcxTransport> connect_ucx(ompi_communicator_t *comm, UcxWorker &worker,
                                          const RankLayout &layout, int position,
                                          const std::vector<std::vector<char>> &address_of) {
    // Endpoints only to the peers of this rank's dimension groups.
    const Topology &topo = layout.topology;
    std::vector<ucp_ep_h> endpoint_at(size_t(topo.size()), nullptr);
    for (int d = 0; d < topo.num_dims(); ++d) {
        for (int j = 0; j < topo.dim(d).peers; ++j) {
            const int q = topo.with_coord(position, d, j);
            if (q == position || endpoint_at[q]) continue;
            endpoint_at[q] = worker.endpoint(address_of.at(size_t(layout.rank_at[q])));
        }
    }
    // Idle: Open MPI's progress engine, which also yields the core when oversubscribed.
    return std::make_unique<UcxTransport>(worker, topo, position, std::move(endpoint_at),
                                          themis_comm_id(comm), [] { opal_progress(); });
}

} // namespace themis

extern "C" void mca_coll_themis_ucx_finalize(void) {
    if (themis::process_ucx.worker) opal_progress_unregister(themis::progress_ucx);
    themis::process_ucx.worker.reset();
}
