// coll_themis_bcast.h: MPI_Bcast's arguments and its preparation on host memory, which its
// adapter (coll_themis_bcast.cpp) and its device preparation (cuda/collectives.h) share.
#pragma once

#include "coll_themis_prelude.h"

#include "coll_themis_call.h"
#include "coll_themis_context.h"

namespace themis {

struct BcastArgs {
    // A Bcast has one buffer, the input at the root and the result elsewhere: both.
    const void *sbuf;
    void *rbuf;
    int count;
    ompi_datatype_t *dtype;
    int root;
};

// Where the data of `count` elements of `dtype` at `buff` lie as one run of bytes, or
// nullptr if they do not.
char *contiguous_run(void *buff, int count, ompi_datatype_t *dtype);

// Prepares the call on host memory: in place where the elements lie in one run of bytes,
// else on a packed copy.
void prepare_bcast(Context &ctx, void *buff, int count, ompi_datatype_t *dtype, int root,
                   Call &call);

} // namespace themis
