// coll_themis_ucx.cpp: the process's UCX worker and address exchange.
#include "coll_themis_ucx.h"
#include "coll_themis_context.h"
#include "coll_themis_setup_task.h"

#include <algorithm>
#include <stdexcept>

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

template <typename T> std::vector<T>
allgather(mca_coll_themis_module_t *m, ompi_communicator_t *comm, const T *mine, int count) {
    std::vector<T> all(static_cast<size_t>(count) * ompi_comm_size(comm));
    setup_allgather(m, mine, all.data(), count * int(sizeof(T)));
    return all;
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

std::unique_ptr<UcxTransport> connect_ucx(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                          UcxWorker &worker, const RankLayout &layout,
                                          int position) {
    const int n = ompi_comm_size(comm);
    const int mine = static_cast<int>(worker.address().size());
    const std::vector<int> lengths = allgather(m, comm, &mine, 1);
    const int longest = *std::max_element(lengths.begin(), lengths.end());
    std::vector<char> padded(worker.address());
    padded.resize(longest);
    const std::vector<char> all = allgather(m, comm, padded.data(), longest);

    // Endpoints only to the peers of this rank's dimension groups.
    const Topology &topo = layout.topology;
    std::vector<ucp_ep_h> endpoint_at(n, nullptr);
    for (int d = 0; d < topo.num_dims(); ++d) {
        for (int j = 0; j < topo.dim(d).peers; ++j) {
            const int q = topo.with_coord(position, d, j);
            if (q == position || endpoint_at[q]) continue;
            const int rank = layout.rank_at[q];
            const char *addr = all.data() + static_cast<size_t>(rank) * longest;
            endpoint_at[q] = worker.endpoint(std::vector<char>(addr, addr + lengths[rank]));
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
