// coll_themis_reduce_scatter.cpp: MPI_Reduce_scatter and MPI_Reduce_scatter_block.
//
// The input is copied into a temporary work buffer (the reductions happen there, and
// MPI forbids touching sbuf); rank r's block of the result lies where MPI puts it,
// at the sum of the counts of the ranks before r, whatever order each chunk visits
// the dimensions in. At the end the rank's own block is copied to rbuf.
#include "coll_themis_entry.h"
#include "coll_themis_op.h"

#include <functional>
#include <numeric>
#include <vector>

#include "opal/util/output.h"

using namespace themis;

namespace {

// The request, with `displ` (communicator rank order, elements) where each block starts.
PlanRequest request_for(Context &ctx, const std::vector<int> &rcounts, size_t extent,
                        std::vector<uint64_t> &displ) {
    const RankLayout &layout = ctx.layout();
    const int n = static_cast<int>(rcounts.size());
    displ.assign(n + 1, 0); // in communicator rank order
    for (int r = 0; r < n; ++r) displ[r + 1] = displ[r] + static_cast<uint64_t>(rcounts[r]);
    std::vector<uint64_t> counts(n), displs(n); // in topology position order
    for (int p = 0; p < n; ++p) {
        counts[p] = static_cast<uint64_t>(rcounts[layout.rank_at[p]]);
        displs[p] = displ[layout.rank_at[p]];
    }
    PlanRequest req = ctx.request(Collective::ReduceScatter, extent, counts);
    req.block_displs = displs;
    return req;
}

Prepared prepare_reduce_scatter(Context &ctx, const void *sbuf, void *rbuf,
                                const std::vector<int> &rcounts, ompi_datatype_t *dtype,
                                ompi_op_t *op) {
    const int n = static_cast<int>(rcounts.size());
    std::vector<uint64_t> displ;
    const size_t extent = element_extent(dtype);
    Prepared p;
    p.request = request_for(ctx, rcounts, extent, displ);
    const size_t bytes = displ[n] * extent;
    HostMemory *memory = &ctx.memory();
    char *work = p.work = static_cast<char *>(memory->acquire(bytes));
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    ompi_datatype_copy_content_same_ddt(dtype, displ[n], work, input);
    p.reducer = std::make_unique<OpReducer>(op, dtype, extent);
    const int me = ctx.layout().rank_at[ctx.position()];
    const int own = rcounts[me];
    char *result = work + displ[me] * extent;
    p.finish = [=] {
        ompi_datatype_copy_content_same_ddt(dtype, own, static_cast<char *>(rbuf), result);
        memory->release(work, bytes);
    };
    return p;
}

void reduce_scatter(Context &ctx, const void *sbuf, void *rbuf, const std::vector<int> &rcounts,
                    ompi_datatype_t *dtype, ompi_op_t *op) {
    run_prepared(ctx, prepare_reduce_scatter(ctx, sbuf, rbuf, rcounts, dtype, op));
}

// The module below, given host buffers; `request` null: the blocking form, else the
// nonblocking one.
using PreviousOnHost =
    std::function<int(mca_coll_themis_module_t *, const void *, void *, ompi_request_t **)>;

#if THEMIS_HAVE_CUDA
// With device buffers (coll_themis_cuda.h): the work buffer is a device temporary that
// the plan runs on (direct), or that holds evicted chunks while the input is staged.
Prepared prepare_reduce_scatter_device(Context &ctx, const void *sbuf, void *rbuf,
                                       const std::vector<int> &rcounts, ompi_datatype_t *dtype,
                                       ompi_op_t *op) {
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const size_t extent = element_extent(dtype);
    const int me = ctx.layout().rank_at[ctx.position()];
    if (!cuda::on_device(input) || type_size < extent) {
        // Only the result is on the device, or a pair type with gaps (reduced on the host
        // anyway, and rbuf's gaps must stay as they are): the path above on host copies.
        const size_t total = std::accumulate(rcounts.begin(), rcounts.end(), size_t(0));
        const size_t own = static_cast<size_t>(rcounts[me]);
        auto s = std::make_shared<cuda::HostView>(sbuf, dtype, total, true);
        auto r =
            std::make_shared<cuda::HostView>(rbuf, dtype, sbuf == MPI_IN_PLACE ? total : own, true);
        Prepared p = prepare_reduce_scatter(ctx, s->get(), r->get(), rcounts, dtype, op);
        p.then([s, r, own] { r->copy_back(own); });
        return p;
    }
    const int n = static_cast<int>(rcounts.size());
    std::vector<uint64_t> displ;
    Prepared p;
    p.request = request_for(ctx, rcounts, extent, displ);
    ptrdiff_t lo = 0, in_span = 0, out_span = 0;
    cuda::span_of(dtype, displ[n], lo, in_span);
    cuda::span_of(dtype, static_cast<size_t>(rcounts[me]), lo, out_span);
    const uint64_t mine = displ[me] * extent;
    auto work = std::make_shared<cuda::DeviceBuffer>(displ[n] * extent);
    if (cuda::direct(ctx)) {
        cuda::copy(work->get(), input, static_cast<size_t>(in_span));
        p.work = work->get();
        p.reducer = std::make_unique<cuda::DeviceReducer>(op, dtype, extent);
        p.options.memory = &cuda::device_memory();
        p.then([work, rbuf, mine, out_span] {
            cuda::copy(rbuf, work->get() + mine, static_cast<size_t>(out_span));
        });
        return p;
    }
    // In place, results written to rbuf would overwrite input not yet staged: stage from
    // a copy then.
    const char *source = static_cast<const char *>(input);
    if (sbuf == MPI_IN_PLACE) {
        cuda::copy(work->get(), input, static_cast<size_t>(in_span));
        source = work->get();
    }
    auto staged = std::make_shared<cuda::StagedRun>(
        StagingRegion{const_cast<char *>(source), 0, uint64_t(in_span)},
        StagingRegion{work->get(), 0, displ[n] * extent},
        StagingRegion{static_cast<char *>(rbuf), mine, mine + uint64_t(out_span)});
    p.reducer = std::make_unique<OpReducer>(op, dtype, extent);
    p.options = staged->options();
    p.then([work, staged] { staged->finish(); });
    return p;
}

// Host copies of the buffers for the module below.
HostCopies reduce_scatter_copies(const void *sbuf, void *rbuf, const std::vector<int> &counts,
                                 ompi_datatype_t *dtype, ompi_communicator_t *comm) {
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    const size_t own = static_cast<size_t>(counts[ompi_comm_rank(comm)]);
    const bool in_place = sbuf == MPI_IN_PLACE;
    return HostCopies{
        std::make_unique<cuda::HostView>(sbuf, dtype, total, true),
        std::make_unique<cuda::HostView>(rbuf, dtype, in_place ? total : own, in_place), own};
}

// With a device buffer: themis's device path, or `previous` on host copies (device_call:
// blocking when `started` is null).
int reduce_scatter_on_device(const void *sbuf, void *rbuf, const std::vector<int> &counts,
                             ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm,
                             mca_coll_base_module_t *module, int collective, const char *name,
                             const char *unsupported, std::unique_ptr<PendingCall> *started,
                             const PreviousOnHost &previous) {
    return device_call(
        module, comm, collective, name, unsupported,
        [=](Context &ctx) {
            return prepare_reduce_scatter_device(ctx, sbuf, rbuf, counts, dtype, op);
        },
        [=] { return reduce_scatter_copies(sbuf, rbuf, counts, dtype, comm); }, previous, started);
}
#endif

size_t total_of(const std::vector<int> &counts) {
    return std::accumulate(counts.begin(), counts.end(), size_t(0));
}

const char *unsupported_for(ompi_datatype_t *dtype, ompi_op_t *op, size_t elements) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const char *why = reduction_unsupported(dtype, op);
    return why ? why : too_small(type_size * elements);
}

} // namespace

extern "C" int mca_coll_themis_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              mca_coll_base_module_t *module) {
    const std::vector<int> counts(rcounts, rcounts + ompi_comm_size(comm));
    const char *unsupported = unsupported_for(dtype, op, total_of(counts));
#if THEMIS_HAVE_CUDA
    if (cuda::on_device(sbuf) || cuda::on_device(rbuf))
        return reduce_scatter_on_device(
            sbuf, rbuf, counts, dtype, op, comm, module, THEMIS_COLL_REDUCE_SCATTER,
            "MPI_Reduce_scatter", unsupported, nullptr,
            [&](mca_coll_themis_module_t *m, const void *s, void *r, ompi_request_t **) {
                return m->previous_reduce_scatter(s, r, rcounts, dtype, op, m->comm,
                                                  m->previous_reduce_scatter_module);
            });
#endif
    return run_or_delegate(
        module, comm, THEMIS_COLL_REDUCE_SCATTER, "MPI_Reduce_scatter", unsupported,
        [&](Context &ctx) { reduce_scatter(ctx, sbuf, rbuf, counts, dtype, op); },
        [&](mca_coll_themis_module_t *m) {
            return m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, m->comm,
                                              m->previous_reduce_scatter_module);
        });
}

extern "C" int mca_coll_themis_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                                    struct ompi_datatype_t *dtype,
                                                    struct ompi_op_t *op,
                                                    struct ompi_communicator_t *comm,
                                                    mca_coll_base_module_t *module) {
    const std::vector<int> counts(ompi_comm_size(comm), rcount);
    const char *unsupported = unsupported_for(dtype, op, total_of(counts));
#if THEMIS_HAVE_CUDA
    if (cuda::on_device(sbuf) || cuda::on_device(rbuf))
        return reduce_scatter_on_device(
            sbuf, rbuf, counts, dtype, op, comm, module, THEMIS_COLL_REDUCE_SCATTER_BLOCK,
            "MPI_Reduce_scatter_block", unsupported, nullptr,
            [&](mca_coll_themis_module_t *m, const void *s, void *r, ompi_request_t **) {
                return m->previous_reduce_scatter_block(s, r, rcount, dtype, op, m->comm,
                                                        m->previous_reduce_scatter_block_module);
            });
#endif
    return run_or_delegate(
        module, comm, THEMIS_COLL_REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block", unsupported,
        [&](Context &ctx) { reduce_scatter(ctx, sbuf, rbuf, counts, dtype, op); },
        [&](mca_coll_themis_module_t *m) {
            return m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, m->comm,
                                                    m->previous_reduce_scatter_block_module);
        });
}

namespace {

// The nonblocking forms of both: MPI_Ireduce_scatter_block is MPI_Ireduce_scatter with
// equal counts. `previous_nonblocking(m, sbuf, rbuf, request)`: the module below's form.
int ireduce_scatter(const void *sbuf, void *rbuf, const std::vector<int> &counts,
                    ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm,
                    ompi_request_t **request, mca_coll_base_module_t *module, int collective,
                    const char *name, const PreviousOnHost &previous_nonblocking) {
    const char *unsupported = unsupported_for(dtype, op, total_of(counts));
#if THEMIS_HAVE_CUDA
    if (cuda::on_device(sbuf) || cuda::on_device(rbuf))
        return start_on_device(
            [=](std::unique_ptr<PendingCall> *started) {
                return reduce_scatter_on_device(sbuf, rbuf, counts, dtype, op, comm, module,
                                                collective, name, unsupported, started,
                                                previous_nonblocking);
            },
            comm, request);
#endif
    return start_or_delegate(
        module, comm, collective, name, unsupported, sbuf, rbuf, request,
        [=](Context &ctx) { return prepare_reduce_scatter(ctx, sbuf, rbuf, counts, dtype, op); },
        previous_nonblocking);
}

} // namespace

extern "C" int mca_coll_themis_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                               struct ompi_communicator_t *comm,
                                               ompi_request_t **request,
                                               mca_coll_base_module_t *module) {
    // The call may be held until set-up ends: it keeps its own copy of the counts.
    const std::vector<int> counts(rcounts, rcounts + ompi_comm_size(comm));
    return ireduce_scatter(
        sbuf, rbuf, counts, dtype, op, comm, request, module, THEMIS_COLL_IREDUCE_SCATTER,
        "MPI_Ireduce_scatter",
        [=](mca_coll_themis_module_t *b, const void *s, void *r, ompi_request_t **req) {
            return b->previous_ireduce_scatter(s, r, counts.data(), dtype, op, b->comm, req,
                                               b->previous_ireduce_scatter_module);
        });
}

extern "C" int mca_coll_themis_ireduce_scatter_block(
    const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
    struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module) {
    return ireduce_scatter(
        sbuf, rbuf, std::vector<int>(ompi_comm_size(comm), rcount), dtype, op, comm, request,
        module, THEMIS_COLL_IREDUCE_SCATTER_BLOCK, "MPI_Ireduce_scatter_block",
        [=](mca_coll_themis_module_t *b, const void *s, void *r, ompi_request_t **req) {
            return b->previous_ireduce_scatter_block(s, r, rcount, dtype, op, b->comm, req,
                                                     b->previous_ireduce_scatter_block_module);
        });
}

namespace {

// The persistent forms of both: MPI_Reduce_scatter_block is MPI_Reduce_scatter with equal
// counts (the counts array kept with the request). The module below's forms, given host
// buffers: `previous_init` makes the persistent request, `previous_nonblocking` starts the
// nonblocking call a device-buffer start hands down (device_call).
template <typename PreviousInit>
int reduce_scatter_init(const void *sbuf, void *rbuf, const std::vector<int> &counts,
                        ompi_datatype_t *dtype, ompi_op_t *op, ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module, int collective,
                        const char *name, PreviousInit previous_init,
                        PreviousOnHost previous_nonblocking) {
    const char *unsupported = unsupported_for(dtype, op, total_of(counts));
    return init_or_delegate(
        module, comm, collective, name, unsupported, sbuf, rbuf, request, objects(comm, dtype, op),
        [=](Context &ctx) { return prepare_reduce_scatter(ctx, sbuf, rbuf, counts, dtype, op); },
        [=](std::unique_ptr<PendingCall> *started) {
#if THEMIS_HAVE_CUDA
            return reduce_scatter_on_device(sbuf, rbuf, counts, dtype, op, comm, module, collective,
                                            name, unsupported, started, previous_nonblocking);
#else
            (void)started;
            (void)previous_nonblocking;
            return OMPI_ERR_NOT_SUPPORTED; // no device buffers without CUDA
#endif
        },
        previous_init, previous_nonblocking,
        [=] {
#if THEMIS_HAVE_CUDA
            return reduce_scatter_copies(sbuf, rbuf, counts, dtype, comm);
#endif
        });
}

} // namespace

extern "C" int
mca_coll_themis_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module) {
    const std::vector<int> counts(rcounts, rcounts + ompi_comm_size(comm));
    return reduce_scatter_init(
        sbuf, rbuf, counts, dtype, op, comm, request, module, THEMIS_COLL_REDUCE_SCATTER_INIT,
        "MPIX_Reduce_scatter_init",
        [&](mca_coll_themis_module_t *m, const void *s, void *r, ompi_request_t **req) {
            return m->previous_reduce_scatter_init(s, r, rcounts, dtype, op, m->comm, info, req,
                                                   m->previous_reduce_scatter_init_module);
        },
        [=](mca_coll_themis_module_t *b, const void *s, void *r, ompi_request_t **req) {
            return b->previous_ireduce_scatter(s, r, counts.data(), dtype, op, b->comm, req,
                                               b->previous_ireduce_scatter_module);
        });
}

extern "C" int mca_coll_themis_reduce_scatter_block_init(
    const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
    struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
    mca_coll_base_module_t *module) {
    return reduce_scatter_init(
        sbuf, rbuf, std::vector<int>(ompi_comm_size(comm), rcount), dtype, op, comm, request,
        module, THEMIS_COLL_REDUCE_SCATTER_BLOCK_INIT, "MPIX_Reduce_scatter_block_init",
        [&](mca_coll_themis_module_t *m, const void *s, void *r, ompi_request_t **req) {
            return m->previous_reduce_scatter_block_init(
                s, r, rcount, dtype, op, m->comm, info, req,
                m->previous_reduce_scatter_block_init_module);
        },
        [=](mca_coll_themis_module_t *b, const void *s, void *r, ompi_request_t **req) {
            return b->previous_ireduce_scatter_block(s, r, rcount, dtype, op, b->comm, req,
                                                     b->previous_ireduce_scatter_block_module);
        });
}
