// cuda/ipc.h: the device-direct node dimension (only with CUDA; without it no process can).
//
// Ranks of one node exchange device memory directly, through CUDA IPC: a stage's
// message on a node dimension is a rendezvous in which only a small descriptor crosses
// the host transport, and the bytes move device to device by the receiver's copy engine:
//
//   sender                                   receiver
//   export its buffer (IPC handle, cached)
//   descriptor  ---- host transport ---->    open the handle (LRU cache of mappings)
//                                            cuMemcpyAsync peer -> own buffer, event
//               <--- host transport -----    "done" once the event has passed
//   buffer free again
//
// Like UCX's cuda_ipc, a handle is exported once per allocation (not per message) and a
// peer's allocation is opened once and kept, at most coll_themis_cuda_ipc_cache of them
// per process (least recently used closed first; never one a copy still reads).
//
// IpcTransport wraps the communicator's transport and is what the engine runs on in
// device-direct mode: node dimensions by IPC (device-to-device, peer on the same GPU or
// on another GPU of the node); network dimensions through the wrapped transport, device
// bytes bounced through pinned host memory per message unless that transport moves device
// memory itself (UCX with CUDA). Both descriptor and "done" travel on the message's own
// (dimension, tag): they are the same size, so each side posts one receive per message it
// takes part in and sorts what arrives by its kind.
//
// The mode is agreed once per communicator at set-up (every rank: a driver with IPC, a
// current CUDA context, coll_themis_cuda_ipc=auto; then a probe in which every rank reads
// a peer's device memory through a handle), never per call: the messages of a node
// dimension then have one form whatever memory each rank's buffers are in (a host buffer
// is copied into a device temporary first; a host destination is written by the copy).
#pragma once

#include "coll_themis_prelude.h"

#include <memory>
#include <string>
#include <vector>

#include "coll_themis.h"
#include "rank_layout.h"
#include "transport.h"

namespace themis {
namespace cuda {

#if THEMIS_HAVE_CUDA

// Whether this process can run a device-direct node dimension: coll_themis_cuda=auto,
// coll_themis_cuda_ipc=auto, a driver with the IPC functions and a current CUDA context
// (the application has initialised CUDA). Never throws.
bool ipc_candidate();

// Collective, at set-up: the engine's transport in device-direct mode, wrapping `base`,
// where every rank can (`all_cuda`: a CUDA application on every rank, agreed; a node
// dimension; every rank's probe passed); nullptr, said at verbose level 1, where not.
std::unique_ptr<Transport> device_direct_transport(mca_coll_themis_module_t *m,
                                                   ompi_communicator_t *comm,
                                                   const RankLayout &layout, int position,
                                                   const std::vector<int> &node_of, bool all_cuda,
                                                   Transport &base);

// Collective over `comm` (the previous module's collectives): every rank exports a small
// device buffer, reads its peers' on the node dimensions through their handles, and all
// agree. False (with `why`) on every rank when any rank cannot.
bool ipc_probe(mca_coll_themis_module_t *m, ompi_communicator_t *comm, const RankLayout &layout,
               int position, const std::vector<bool> &node_dims, bool candidate, std::string &why);

// The engine's transport in device-direct mode (see above).
std::unique_ptr<Transport> make_ipc_transport(Transport &base, std::vector<bool> node_dims,
                                              bool base_moves_device);

#else // Without CUDA no process can.

inline bool ipc_candidate() { return false; }
inline std::unique_ptr<Transport> device_direct_transport(mca_coll_themis_module_t *,
                                                          ompi_communicator_t *, const RankLayout &,
                                                          int, const std::vector<int> &, bool,
                                                          Transport &) {
    return nullptr;
}

#endif // THEMIS_HAVE_CUDA

} // namespace cuda
} // namespace themis

#if THEMIS_HAVE_CUDA
// Closes the peers' allocations still open (component close, before the contexts go).
extern "C" void mca_coll_themis_cuda_ipc_finalize(void);
#endif
