// coll_themis_node_transport.h: the node-local single-copy transport, where it pays.
//
// Dimensions whose groups each sit on one node may run on src/transports/cma_transport.h
// (ranks read their peers' buffers with process_vm_readv) instead of the communicator's
// transport. coll_themis_node_transport decides: `transport` never, `cma` wherever every
// rank can read its node peers, `auto` (default) per dimension by measurement
// (src/transports/transport_choice.h: an All-Reduce confined to the dimension, on both
// transports, the same request as the communicator's own). Agreed by every rank at set-up,
// never per call.
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "coll_themis_log.h"
#include "plan.h"
#include "rank_layout.h"
#include "transport.h"

namespace themis {

// What the choice is made for.
struct NodeTransportSetup {
    int choice; // THEMIS_NODE_* (parameter or the communicator's info key)
    const RankLayout &layout;
    int position;
    const std::vector<int> &node_of; // per communicator rank
    Transport &base;                 // the communicator's transport
    std::string base_name;           // its name, for the in-process cache of choices
    bool base_moves_device;          // handed device pointers (UCX with CUDA): nothing tried,
                                     // process_vm_readv cannot read them
    PlanRequest allreduce;           // the communicator's float All-Reduce, what auto measures
};

// Collective over `comm`: the transport the engine runs on, wrapping setup.base, or nullptr
// when no dimension takes the single-copy path. `said` gets the event for the verbose log
// (coll_themis_log.h: node_transport, or mismatch), where there is something to say: what
// was chosen and measured, or why not. A choice measured in this process for the same
// processes at the same positions is reused when every rank has it (dups and re-creations
// of a communicator measure nothing).
std::unique_ptr<Transport> node_transport(mca_coll_themis_module_t *m, ompi_communicator_t *comm,
                                          const NodeTransportSetup &setup,
                                          std::optional<LogEvent> &said);

} // namespace themis
