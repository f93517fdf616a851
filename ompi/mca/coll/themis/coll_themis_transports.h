// coll_themis_transports.h: the base transports a communicator's traffic can run on, one
// table row each (coll_themis_transports.cpp).
//
// Every rank of a communicator runs on the same base transport: the first row of the table
// that every rank wants and can start (coll_themis_transport=auto, or the info key
// themis_transport=auto, wants every row; a named choice that row alone). The last row, the
// PML, always connects: the fallback when a chosen one cannot run here, or when the ranks were
// given different choices.
//
// The choice takes part in the set-up's second round (coll_themis_agreement.h):
// TransportQuestion::ask adds, per row, whether this rank wants it and can start it, and
// what its connection needs agreed (the PML's message parts per dimension, the UCX worker
// address's length); settle() then connects the row chosen (UCX: one more round exchanges the
// workers' addresses, one more agrees that every endpoint was made). What it found is a
// BaseTransportChoice, from which a later communicator of the same processes connects again
// with no round at all (connect_chosen, coll_themis_inherit.h).
//
// Wrappers over the base transport are chosen later, per dimension: node-local single copy
// (coll_themis_node_transport.h) and CUDA IPC (cuda/ipc.h).
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "coll_themis_agreement.h"
#include "coll_themis_log.h"
#include "rank_layout.h"
#include "transport.h"

namespace themis {

// Where a transport is connected: the module (whose private duplicate the PML's traffic
// runs on), the user's communicator, its layout and this rank's position in it.
struct TransportSite {
    mca_coll_themis_module_t *m;
    ompi_communicator_t *comm;
    const RankLayout &layout;
    int position;
};

// What a set-up connected: enough to connect again, locally, for the same processes.
struct BaseTransportChoice {
    int row = 0;                              // its THEMIS_TRANSPORT_* value (PML or UCX)
    std::vector<size_t> parts;                // PML: per dimension the largest message (0: whole)
    std::vector<std::vector<char>> addresses; // UCX: every communicator rank's worker address
};

class TransportQuestion {
  public:
    // `choice`: a THEMIS_TRANSPORT_* value; `source` names where it came from
    // (coll_themis_transport or info).
    TransportQuestion(const TransportSite &site, int choice, const char *source);
    // The row this rank expects the agreement to choose (its name): what it wants first and can
    // start here.
    const char *expected_row_name() const;
    // `dimensions`: per-dimension values take this many slots (at least the layout's
    // dimensions), the same on every rank whatever layout each one found.
    void ask(Agreement &agreement, int dimensions);

    // After the agreement: the base transport, the same row on every rank, connected for
    // `at` (the layout it keeps: the context's); collective where UCX is chosen (two more
    // rounds); nullptr when UCX was chosen and failed on some rank (then on every rank, and
    // `why` says this rank's reason or other_rank). The event transport (docs/log-events.md), and
    // mismatch where the ranks were given different pml_message_bytes, are in said().
    std::unique_ptr<Transport> settle(const Agreement &agreement, const TransportSite &at,
                                      std::string &why);
    const BaseTransportChoice &chosen() const { return chosen_; }
    // After settle(): whether the transport is handed device pointers on some rank (UCX with
    // CUDA support), which the node-local single copy cannot read.
    bool moves_device(const Agreement &agreement) const;
    // The events settle() said (transport, and mismatch if any), for inheriting communicators.
    const std::vector<LogEvent> &said() const { return said_; }

  private:
    std::unique_ptr<Transport> connect_ucx_everywhere(const TransportSite &at, std::string &why);

    TransportSite site_;
    int choice_;
    const char *source_;
    bool wants_ucx_ = false;
    std::string ucx_why_; // why this rank cannot run UCX ("": it can, or does not want it)
    std::vector<char> ucx_address_;
    bool ucx_moves_device_ = false;
    size_t ucx_longest_ = 0;
    Agreement::Slot ucx_everywhere_ = 0, ucx_no_device_ = 0, ucx_address_bytes_ = 0,
                    same_message_bytes_ = 0;
    std::vector<Agreement::Slot> least_eager_; // per dimension
    BaseTransportChoice chosen_;
    std::vector<LogEvent> said_;
};

// Connects `choice` again for `site` (a communicator of the same processes in the same order):
// local, no round. Throws when it cannot (a UCX error).
std::unique_ptr<Transport> connect_chosen(const TransportSite &site,
                                          const BaseTransportChoice &choice);
// Throws where connect_chosen() would, before the private duplicate exists (site.m's is not
// used): UCX makes its endpoints here (the worker keeps them for connect_chosen).
void check_connect(const TransportSite &site, const BaseTransportChoice &choice);

// The name of a row (as coll_themis_transport spells it).
const char *transport_row_name(int row);

} // namespace themis
