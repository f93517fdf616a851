// coll_themis_transports.h: the base transports a communicator's traffic can run on, one
// table row each (coll_themis_transports.cpp).
//
// Every rank of a communicator runs on the same base transport. Every rank goes through
// the rows in table order until one connects; each row agrees over all ranks first, so it
// connects on every rank or on none. With coll_themis_transport=auto (or the info key
// themis_transport=auto) a rank wants every row; with a named choice, that row alone (it
// still takes part in the others' agreement: ranks given different choices agree too).
// The last row, the PML, always connects: the fallback when a chosen one cannot run here.
//
// Wrappers over the base transport are chosen later, per dimension: node-local single copy
// (coll_themis_node_transport.h) and CUDA IPC (coll_themis_cuda_ipc.h).
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <string>

#include "coll_themis.h"
#include "rank_layout.h"
#include "transport.h"

namespace themis {

// Where a transport is connected: the module (its previous collectives agree and
// exchange), the user's communicator, its layout and this rank's position in it.
struct TransportSite {
    mca_coll_themis_module_t *m;
    ompi_communicator_t *comm;
    const RankLayout &layout;
    int position;
};

// Collective: the base transport for `choice` (a THEMIS_TRANSPORT_* value; `source`
// names where it came from: coll_themis_transport or info); says at verbose level 1 which
// and why (the event transport, coll_themis_log.h).
std::unique_ptr<Transport> connect_transport(const TransportSite &site, int choice,
                                             const char *source);

} // namespace themis
