// coll_themis_entry.h: the pattern every collective entry point follows.
//
//   1. calls that come back while themis sets a communicator up, and calls themis
//      does not accelerate, go to the previous module unchanged;
//   2. the communicator's context is set up on its first eligible call;
//   3. the collective runs; a failure is reported with a help message.
//
// With CUDA (coll_themis_cuda.h) each entry point first asks whether its buffers are
// device memory; if so the same decision is taken with device-aware `run` and `previous`
// (the memory kind changes how this rank's bytes move, never whether themis runs).
#pragma once

#include "coll_themis_context.h"
#include "coll_themis_cuda.h"

namespace themis {

template <typename Run, typename Previous>
int run_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm, int collective,
                    const char *name, const char *unsupported, Run run, Previous previous) {
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    if (m->in_setup) return previous(m);
    ++m->calls[collective];
    Context *ctx = unsupported ? nullptr : context_for(m, comm);
    if (ctx == nullptr) {
        if (unsupported)
            opal_output_verbose(5, mca_coll_themis_component.output,
                                "coll:themis: %s to the previous module: %s", name, unsupported);
        return previous(m);
    }
    try {
        run(*ctx);
    } catch (const std::exception &e) {
        return report_failure(name, e);
    }
    ++m->accelerated[collective];
    return OMPI_SUCCESS;
}

#if THEMIS_HAVE_CUDA
// run_or_delegate for a call with device buffers. Whether a communicator runs its node
// dimensions device-direct is decided once, at set-up, by every rank together: only a
// communicator whose first call carries device buffers everywhere (a GPU application's
// gradient communicator, say) pays the device-memory path for host buffers later;
// one set up by host buffers keeps the plain transport.
template <typename Run, typename Previous>
int run_device_or_delegate(mca_coll_base_module_t *module, ompi_communicator_t *comm,
                           int collective, const char *name, const char *unsupported, Run run,
                           Previous previous) {
    auto *m = reinterpret_cast<mca_coll_themis_module_t *>(module);
    m->device_call = true;
    const int rc = run_or_delegate(module, comm, collective, name, unsupported, run, previous);
    m->device_call = false;
    return rc;
}

// The previous module for a call with device buffers: `call` runs it on host copies
// (cuda::HostView); a CUDA failure becomes an MPI error, as inside themis.
template <typename Call> int previous_through_host(const char *name, Call call) {
    try {
        return call();
    } catch (const std::exception &e) {
        return report_failure(name, e);
    }
}
#endif

// Whether a message of `bytes` is worth themis's set-up (else: the previous module).
inline const char *too_small(size_t bytes) {
    return bytes < mca_coll_themis_component.min_bytes ? "below coll_themis_min_bytes" : nullptr;
}

} // namespace themis
