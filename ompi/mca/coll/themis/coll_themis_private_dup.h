// coll_themis_private_dup.h: the private duplicate a set-up runs on (coll_themis_setup_task.h):
// a duplicate of a communicator whose collectives never come back to themis, made without any
// collective of the communicator (its id agreed in group mode, over a tag of its own).
#pragma once

#include "coll_themis_prelude.h"

#include "ompi/communicator/communicator.h"

namespace themis {

// Inside a set-up: the duplicate of `comm`; throws if it could not be made.
ompi_communicator_t *private_duplicate(ompi_communicator_t *comm);

} // namespace themis
