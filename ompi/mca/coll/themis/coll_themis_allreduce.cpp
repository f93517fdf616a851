// coll_themis_allreduce.cpp: MPI_Allreduce.
//
// The result is built in place in rbuf (after copying sbuf there): every chunk is
// reduce-scattered and all-gathered over the dimensions in its own order. A datatype
// with gaps (e.g. MPI_SHORT_INT, MPI_DOUBLE_INT) runs in a temporary buffer, so themis
// never writes into rbuf's gaps or past the end of the user's buffer.
#include "coll_themis_entry.h"
#include "coll_themis_op.h"

#include <memory>

#include "opal/util/output.h"

using namespace themis;

namespace {

Prepared prepare_allreduce(Context &ctx, const void *sbuf, void *rbuf, int count,
                           ompi_datatype_t *dtype, ompi_op_t *op) {
    const size_t extent = element_extent(dtype);
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    if (sbuf != MPI_IN_PLACE) ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, sbuf);

    Prepared p;
    p.request = ctx.request(Collective::AllReduce, extent, {static_cast<uint64_t>(count)});
    p.reducer = std::make_unique<OpReducer>(op, dtype, extent);
    p.work = static_cast<char *>(rbuf);
    // Gaps between the fields (MPI_SHORT_INT) or after them (MPI_DOUBLE_INT): work in a
    // temporary buffer, so rbuf's gaps are never written, nor the bytes past its end.
    if (type_size < extent) {
        const size_t bytes = extent * static_cast<size_t>(count);
        HostMemory *memory = &ctx.memory();
        char *work = p.work = static_cast<char *>(memory->acquire(bytes));
        ompi_datatype_copy_content_same_ddt(dtype, count, work, rbuf);
        p.finish = [=] {
            ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, work);
            memory->release(work, bytes);
        };
    }
    return p;
}

void allreduce(Context &ctx, const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
               ompi_op_t *op) {
    run_prepared(ctx, prepare_allreduce(ctx, sbuf, rbuf, count, dtype, op));
}

#if THEMIS_HAVE_CUDA
// MPI_Allreduce with a device buffer (coll_themis_cuda.h). Predefined datatypes only (the
// eligibility above); past the first test, without gaps: count x extent bytes of data.
Prepared prepare_allreduce_device(Context &ctx, const void *sbuf, void *rbuf, int count,
                                  ompi_datatype_t *dtype, ompi_op_t *op) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const size_t extent = element_extent(dtype);
    if (!cuda::on_device(rbuf) || type_size < extent) {
        // Only the input is on the device, or a pair type with gaps (reduced on the host
        // anyway, and rbuf's gaps must stay as they are): the path above on host copies.
        auto s = std::make_shared<cuda::HostView>(sbuf, dtype, static_cast<size_t>(count), true);
        auto r = std::make_shared<cuda::HostView>(rbuf, dtype, static_cast<size_t>(count), true);
        Prepared p = prepare_allreduce(ctx, s->get(), r->get(), count, dtype, op);
        p.then([s, r, count] { r->copy_back(static_cast<size_t>(count)); });
        return p;
    }
    const void *input = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    ptrdiff_t lo = 0, span = 0;
    cuda::span_of(dtype, static_cast<size_t>(count), lo, span);
    const size_t bytes = extent * static_cast<size_t>(count);
    if (static_cast<size_t>(span) != bytes)
        throw std::logic_error("datatype with gaps on the device path");
    Prepared p;
    p.request = ctx.request(Collective::AllReduce, extent, {static_cast<uint64_t>(count)});
    if (cuda::direct(ctx)) { // the transport moves device memory: run on it
        cuda::copy(rbuf, input, bytes);
        p.work = static_cast<char *>(rbuf);
        p.reducer = std::make_unique<cuda::DeviceReducer>(op, dtype, extent);
        p.options.memory = &cuda::device_memory();
        return p;
    }
    // Staged: chunks come in from the input, results go out to rbuf, which also holds
    // chunks evicted meanwhile.
    const StagingRegion source{static_cast<char *>(const_cast<void *>(input)), 0, bytes};
    const StagingRegion home{static_cast<char *>(rbuf), 0, bytes};
    auto staged = std::make_shared<cuda::StagedRun>(source, home, home);
    p.reducer = std::make_unique<OpReducer>(op, dtype, extent);
    p.options = staged->options();
    p.then([staged] { staged->finish(); });
    return p;
}

// Host copies of the buffers for the module below.
HostCopies allreduce_copies(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype) {
    const size_t n = static_cast<size_t>(count);
    return HostCopies{std::make_unique<cuda::HostView>(sbuf, dtype, n, true),
                      std::make_unique<cuda::HostView>(rbuf, dtype, n, sbuf == MPI_IN_PLACE), n};
}

// With a device buffer: themis's device path, or the previous module on host copies
// (device_call: blocking when `started` is null).
int allreduce_on_device(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                        ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module,
                        int collective, const char *name, const char *unsupported,
                        std::unique_ptr<PendingCall> *started) {
    return device_call(
        module, comm, collective, name, unsupported,
        [=](Context &ctx) { return prepare_allreduce_device(ctx, sbuf, rbuf, count, dtype, op); },
        [=] { return allreduce_copies(sbuf, rbuf, count, dtype); },
        [=](mca_coll_themis_module_t *b, const void *s, void *r, ompi_request_t **request) {
            return request ? b->previous_iallreduce(s, r, count, dtype, op, b->comm, request,
                                                    b->previous_iallreduce_module)
                           : b->previous_allreduce(s, r, count, dtype, op, b->comm,
                                                   b->previous_allreduce_module);
        },
        started);
}
#endif

// Layer b's MPI_Iallreduce: what a declined communicator's eligible calls run.
auto iallreduce_below(int count, ompi_datatype_t *dtype, ompi_op_t *op) {
    return [=](mca_coll_themis_module_t *b, const void *s, void *r, ompi_request_t **request) {
        return b->previous_iallreduce(s, r, count, dtype, op, b->comm, request,
                                      b->previous_iallreduce_module);
    };
}

const char *allreduce_unsupported(int count, ompi_datatype_t *dtype, ompi_op_t *op) {
    size_t type_size = 0;
    ompi_datatype_type_size(dtype, &type_size);
    const char *unsupported = reduction_unsupported(dtype, op);
    return unsupported ? unsupported : too_small(type_size * static_cast<size_t>(count));
}

} // namespace

extern "C" int mca_coll_themis_allreduce(const void *sbuf, void *rbuf, int count,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module) {
    const char *unsupported = allreduce_unsupported(count, dtype, op);
#if THEMIS_HAVE_CUDA
    if (cuda::on_device(sbuf) || cuda::on_device(rbuf))
        return allreduce_on_device(sbuf, rbuf, count, dtype, op, comm, module,
                                   THEMIS_COLL_ALLREDUCE, "MPI_Allreduce", unsupported, nullptr);
#endif
    return run_or_delegate(
        module, comm, THEMIS_COLL_ALLREDUCE, "MPI_Allreduce", unsupported,
        [&](Context &ctx) { allreduce(ctx, sbuf, rbuf, count, dtype, op); },
        [&](mca_coll_themis_module_t *m) {
            return m->previous_allreduce(sbuf, rbuf, count, dtype, op, m->comm,
                                         m->previous_allreduce_module);
        });
}

extern "C" int mca_coll_themis_iallreduce(const void *sbuf, void *rbuf, int count,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          ompi_request_t **request,
                                          mca_coll_base_module_t *module) {
    const char *unsupported = allreduce_unsupported(count, dtype, op);
#if THEMIS_HAVE_CUDA
    if (cuda::on_device(sbuf) || cuda::on_device(rbuf))
        return start_on_device(
            [=](std::unique_ptr<PendingCall> *started) {
                return allreduce_on_device(sbuf, rbuf, count, dtype, op, comm, module,
                                           THEMIS_COLL_IALLREDUCE, "MPI_Iallreduce", unsupported,
                                           started);
            },
            comm, request);
#endif
    return start_or_delegate(
        module, comm, THEMIS_COLL_IALLREDUCE, "MPI_Iallreduce", unsupported, sbuf, rbuf, request,
        [=](Context &ctx) { return prepare_allreduce(ctx, sbuf, rbuf, count, dtype, op); },
        iallreduce_below(count, dtype, op));
}

extern "C" int mca_coll_themis_allreduce_init(const void *sbuf, void *rbuf, int count,
                                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              struct ompi_info_t *info, ompi_request_t **request,
                                              mca_coll_base_module_t *module) {
    const char *unsupported = allreduce_unsupported(count, dtype, op);
    return init_or_delegate(
        module, comm, THEMIS_COLL_ALLREDUCE_INIT, "MPIX_Allreduce_init", unsupported, sbuf, rbuf,
        request, objects(comm, dtype, op),
        [=](Context &ctx) { return prepare_allreduce(ctx, sbuf, rbuf, count, dtype, op); },
        [=](std::unique_ptr<PendingCall> *started) {
#if THEMIS_HAVE_CUDA
            return allreduce_on_device(sbuf, rbuf, count, dtype, op, comm, module,
                                       THEMIS_COLL_ALLREDUCE_INIT, "MPIX_Allreduce_init",
                                       unsupported, started);
#else
            (void)started;
            return OMPI_ERR_NOT_SUPPORTED; // no device buffers without CUDA
#endif
        },
        [&](mca_coll_themis_module_t *m, const void *s, void *r, ompi_request_t **req) {
            return m->previous_allreduce_init(s, r, count, dtype, op, m->comm, info, req,
                                              m->previous_allreduce_init_module);
        },
        iallreduce_below(count, dtype, op),
        [=] {
#if THEMIS_HAVE_CUDA
            return allreduce_copies(sbuf, rbuf, count, dtype);
#endif
        });
}
