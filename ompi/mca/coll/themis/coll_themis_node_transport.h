// coll_themis_node_transport.h: the node-local single-copy transport, where it pays.
//
// Dimensions whose groups each sit on one node may run on src/transports/cma_transport.h
// (ranks read their peers' buffers with process_vm_readv) instead of the communicator's
// transport. coll_themis_node_transport decides: `transport` never, `cma` wherever every
// rank can read its node peers, `auto` (default) per dimension by measurement
// (src/transports/transport_choice.h: an All-Reduce confined to the dimension, on both
// transports, the same request as the communicator's own). Agreed by every rank at set-up,
// never per call.
//
// The choice takes part in the set-up's rounds (coll_themis_agreement.h) in three steps:
//   offer    before the first round (the records every rank gathers): this rank lets its
//            node peers read its memory and names a pattern they can check (CmaOffer);
//   ask      before the second (NodeTransportQuestion::ask): whether the ranks were given the
//            same choice, whether this rank read every node peer's pattern right, and the
//            choice measured before for these processes (this process's memory, else
//            coll_themis_calibration_file: an earlier job's on these hosts), if it knows one;
//   settle   after it (node_transport()): single copy where the answers allow it, measured now
//            only where the ranks do not all know the same earlier choice.
#pragma once

#include "coll_themis_prelude.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "coll_themis_agreement.h"
#include "coll_themis_log.h"
#include "plan.h"
#include "rank_layout.h"
#include "transport.h"

namespace themis {

// A pattern this rank keeps until the round after its node peers read it, and the record
// that tells them where it is.
struct CmaOffer {
    uint64_t pattern[4] = {};
    struct Record {
        uint64_t address = 0; // of `pattern` in this process
        int32_t pid = 0;
        int32_t offered = 0; // 0: this rank takes no part (coll_themis_node_transport transport)
    };
    // Fills the pattern for rank `rank` and allows the node peers' reads (offered only when
    // `wanted`: the choice is not `transport`).
    Record offer(int rank, bool wanted);
};

// What a rank's node transport choice depends on (set-up's values; the layout agreed).
struct NodeTransportSetup {
    int choice; // THEMIS_NODE_* (parameter or the communicator's info key)
    const RankLayout &layout;
    int position;
    const std::vector<int> &node_of; // per communicator rank
    std::string base_name;           // the base transport's name, for the kept choices' keys
    const std::vector<std::string> &host_at_position; // for the calibration file's key
};

class NodeTransportQuestion {
  public:
    // This rank's side: reads every node peer's pattern (records: by communicator rank).
    NodeTransportQuestion(ompi_communicator_t *comm, const NodeTransportSetup &setup,
                          const std::vector<CmaOffer::Record> &records);
    void ask(Agreement &agreement);
    // The single-copy dimensions this rank expects the agreement to give: those asked for, or
    // those chosen before, where it could read its peers (empty: none).
    std::vector<bool> expected() const;

    // After the agreement: the transport the engine runs on, wrapping `base`, or nullptr when
    // no dimension takes the single-copy path; measured now (collective, further rounds)
    // where the ranks do not all know the same earlier choice. `base_moves_device`: whether
    // some rank's base transport is handed device pointers (agreed), which process_vm_readv
    // cannot read. `said` gets the event for the verbose log (node_transport, or mismatch).
    std::unique_ptr<Transport> settle(mca_coll_themis_module_t *m, const Agreement &agreement,
                                      Transport &base, bool base_moves_device,
                                      const PlanRequest &allreduce, std::optional<LogEvent> &said);
    // The dimensions that run single-copy after settle() (empty: none).
    const std::vector<bool> &chosen() const { return chosen_; }
    // Whether settle() chose by measurement, now or before (the event's source measured or
    // remembered).
    bool measured() const { return measured_; }

  private:
    std::string file_key() const; // the choice's key in coll_themis_calibration_file

    ompi_communicator_t *comm_;
    const NodeTransportSetup &setup_;
    std::vector<bool> node_dims_, known_, chosen_;
    bool have_node_dims_ = false, readable_ = false, have_known_ = false, measured_ = false;
    std::string why_;
    Agreement::Slot same_choice_ = 0, readable_everywhere_ = 0, same_known_ = 0, all_known_ = 0;
};

// The event node_transport an inheriting communicator says (coll_themis_inherit.h): single-copy
// dimensions chosen as before, or none.
LogEvent remembered_node_event(const std::vector<bool> &cma);

} // namespace themis
