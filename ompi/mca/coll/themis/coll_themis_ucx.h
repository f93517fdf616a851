// coll_themis_ucx.h: the process's UCX worker (created on first use, destroyed at
// component close) and the per-communicator UCX transport built over it.
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <string>

#include "coll_themis.h"
#include "rank_layout.h"
#include "transports/ucx_transport.h"

namespace themis {

// The process's worker; nullptr (reason in `why`) when UCX cannot start here.
UcxWorker *process_ucx_worker(std::string &why);

// Exchanges worker addresses over `comm` (through the previous module's allgather) and
// connects to the peers of this rank's dimension groups. Collective.
std::unique_ptr<UcxTransport> connect_ucx(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                          UcxWorker &worker, const RankLayout &layout,
                                          int position);

} // namespace themis
