// coll_themis_allgather.h: MPI_Allgather's arguments and its preparation on host memory,
// which its adapter (coll_themis_allgather.cpp) and its device preparation
// (cuda/collectives.h) share.
#pragma once

#include "coll_themis_prelude.h"

#include "coll_themis_call.h"
#include "coll_themis_context.h"

namespace themis {

struct AllgatherArgs {
    const void *sbuf;
    int scount;
    ompi_datatype_t *sdtype;
    void *rbuf;
    int rcount;
    ompi_datatype_t *rdtype;
};

// Prepares the call in place in rbuf, this rank's contribution first converted from the send
// datatype into its block (unless MPI_IN_PLACE).
void prepare_allgather(Context &ctx, const void *sbuf, int scount, ompi_datatype_t *sdtype,
                       void *rbuf, int rcount, ompi_datatype_t *rdtype, Call &call);

} // namespace themis
