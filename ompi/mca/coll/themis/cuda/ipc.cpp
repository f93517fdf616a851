// cuda/ipc.cpp: whether a communicator runs device-direct node dimensions
// (see cuda/ipc.h); the transport itself is cuda/ipc_transport.cpp, the
// handles it exchanges cuda/ipc_handles.cpp.
#include "cuda/ipc.h"
#include "coll_themis_params.h"
#include "coll_themis_agreement.h"
#include "coll_themis_log.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "cuda/buffers.h"
#include "cuda/driver.h"
#include "cuda/ipc_handles.h"

namespace themis {
namespace cuda {

namespace {

bool have_ipc(const Driver &d) {
    return d.cuIpcGetMemHandle && d.cuIpcOpenMemHandle && d.cuIpcCloseMemHandle &&
           d.cuMemGetAddressRange;
}

} // namespace

bool ipc_candidate() {
    if (params().cuda != THEMIS_CUDA_AUTO || params().cuda_ipc == THEMIS_CUDA_IPC_OFF) return false;
    const Driver *d = driver();
    if (!d || !have_ipc(*d)) return false;
    CUcontext ctx = nullptr;
    return d->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr;
}

bool ipc_probe(mca_coll_themis_module_t *m, ompi_communicator_t *comm, const RankLayout &layout,
               int position, const std::vector<bool> &node_dims, bool candidate, std::string &why) {
    struct Probe {
        int32_t ok;
        int32_t pid;
        uint64_t offset;
        Export where;
    };
    constexpr size_t kBytes = 64;
    const int me = ompi_comm_rank(comm);
    Probe mine{};
    mine.pid = int32_t(getpid());
    char *buf = nullptr;
    std::string failure;
    try {
        if (candidate) {
            buf = static_cast<char *>(device_memory().acquire(kBytes));
            uint64_t pattern[kBytes / 8];
            for (auto &v : pattern) v = 0x7468656d6973ull ^ uint64_t(me);
            copy(buf, pattern, kBytes);
            mine.where = ipc_cache().exported(buf, mine.offset);
            mine.ok = 1;
        }
    } catch (const std::exception &e) {
        failure = e.what();
    }
    const std::vector<Probe> all = gather(m, mine);
    bool ok = mine.ok;
    for (const Probe &p : all) ok = ok && p.ok;
    // Read every node-dimension peer's buffer through its handle and check the pattern.
    for (int rank : peer_ranks(layout, position, node_dims)) {
        if (!ok) break;
        try {
            Mapping *map = ipc_cache().open(all[size_t(rank)].pid, all[size_t(rank)].where);
            uint64_t got[kBytes / 8];
            try {
                copy(got, reinterpret_cast<const void *>(map->base + all[size_t(rank)].offset),
                     kBytes);
            } catch (...) {
                ipc_cache().release(map);
                throw;
            }
            ipc_cache().release(map);
            for (uint64_t v : got)
                if (v != (0x7468656d6973ull ^ uint64_t(rank)))
                    throw std::runtime_error("a peer's device memory read back wrong");
        } catch (const std::exception &e) {
            ok = false;
            failure = e.what();
        }
    }
    const bool every = all_agree(m, ok);
    if (buf) device_memory().release(buf, kBytes); // every peer is done reading it
    if (every) return true;
    if (!candidate)
        why = "this rank cannot (coll_themis_cuda_ipc=off, coll_themis_cuda not auto, no CUDA "
              "context, or a driver without IPC)";
    else
        why = failure.empty() ? "another rank cannot" : failure;
    return false;
}

std::unique_ptr<Transport> device_direct_transport(mca_coll_themis_module_t *m,
                                                   ompi_communicator_t *comm,
                                                   const RankLayout &layout, int position,
                                                   const std::vector<int> &node_of, bool all_cuda,
                                                   Transport &base) {
    if (!all_cuda) return nullptr; // not a CUDA application everywhere: staged as before
    std::vector<bool> node_dims = node_local_dimensions(layout, node_of);
    if (std::find(node_dims.begin(), node_dims.end(), true) == node_dims.end()) return nullptr;
    std::string why;
    // Every rank reaches this point (all_cuda and the layout are agreed): collective.
    if (!ipc_probe(m, comm, layout, position, node_dims, ipc_candidate(), why)) {
        LogEvent("device_direct").add("ipc", "none").add("why", why).emit(1, comm);
        if (mca_coll_themis_first_time("cuda-ipc-unavailable") && mca_coll_themis_first_process() &&
            params().cuda_ipc != THEMIS_CUDA_IPC_OFF)
            mca_coll_themis_show_help("cuda-ipc-unavailable", why.c_str());
        return nullptr;
    }
    const bool moves_device = base.moves_device_memory();
    std::unique_ptr<Transport> direct;
    std::string failure;
    try {
        direct = make_ipc_transport(base, node_dims, moves_device);
    } catch (const std::exception &e) {
        failure = e.what();
    }
    if (!all_agree(m, failure.empty())) { // all ranks in the same mode, or none
        LogEvent("device_direct")
            .add("ipc", "none")
            .add("why", failure.empty() ? std::string("other_rank") : failure)
            .emit(1, comm);
        return nullptr;
    }
    std::string dims;
    for (size_t d = 0; d < node_dims.size(); ++d)
        if (node_dims[d]) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    LogEvent("device_direct")
        .add("ipc", dims)
        .add("others", moves_device ? "transport" : "pinned")
        .emit(1, comm);
    return direct;
}

} // namespace cuda
} // namespace themis

extern "C" void mca_coll_themis_cuda_ipc_finalize(void) { themis::cuda::close_ipc_cache(); }
