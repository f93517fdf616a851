// cuda/collectives.h: the collectives with device buffers (cuda/buffers.h): each one's
// preparation for the engine, and the host copies the module below runs on. Entry<C>
// (coll_themis_entry.h) calls them for C::Args, found by their type; without CUDA there are
// none, and nothing calls them.
//
// Every preparation plans as the host path does (the collective's coll_themis_<coll>.h);
// only where the bytes are differs: on the device, for a transport that moves device memory
// (cuda::direct), else staged through host memory chunk by chunk (cuda::StagedRun).
#pragma once

#include "coll_themis_prelude.h"

#if THEMIS_HAVE_CUDA

#include "coll_themis_allgather.h"
#include "coll_themis_bcast.h"
#include "coll_themis_reduce_scatter.h"
#include "coll_themis_reduction.h"
#include "cuda/host_fallback.h"

namespace themis {

// MPI_Allreduce and MPI_Reduce: predefined datatypes only (reduction_unsupported).
void prepare_on_device(Context &ctx, const VectorReductionArgs &a, Call &call);
void prepare_on_device(Context &ctx, const ReduceArgs &a, Call &call);
void prepare_on_device(Context &ctx, const ReduceScatterArgs &a, Call &call);
void prepare_on_device(Context &ctx, const AllgatherArgs &a, Call &call);
void prepare_on_device(Context &ctx, const BcastArgs &a, Call &call);

cuda::HostCopies host_copies(const VectorReductionArgs &a, ompi_communicator_t *comm);
cuda::HostCopies host_copies(const ReduceArgs &a, ompi_communicator_t *comm);
cuda::HostCopies host_copies(const ReduceScatterArgs &a, ompi_communicator_t *comm);
cuda::HostCopies host_copies(const AllgatherArgs &a, ompi_communicator_t *comm);
cuda::HostCopies host_copies(const BcastArgs &a, ompi_communicator_t *comm);

} // namespace themis

#endif // THEMIS_HAVE_CUDA
