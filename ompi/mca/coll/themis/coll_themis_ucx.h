// coll_themis_ucx.h: the process's UCX worker (created on first use, destroyed at
// component close) and the per-communicator UCX transport built over it.
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "rank_layout.h"
#include "transports/ucx_transport.h"

namespace themis {

// The process's worker; nullptr (reason in `why`) when UCX cannot start here.
UcxWorker *process_ucx_worker(std::string &why);

// Connects to the peers of this rank's dimension groups at their workers' addresses
// (`address_of`: every communicator rank's). Local (the worker keeps one endpoint per remote
// address, so communicators of the same processes share them); throws on a UCX error.
std::unique_ptr<UcxTransport> connect_ucx(ompi_communicator_t *comm, UcxWorker &worker,
                                          const RankLayout &layout, int position,
                                          const std::vector<std::vector<char>> &address_of);

} // namespace themis
