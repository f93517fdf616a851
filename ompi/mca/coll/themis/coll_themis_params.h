// coll_themis_params.h: the component's parameters and its verbose output, for the C++
// glue (the parameters' defaults, ranges and descriptions: coll_themis_component.c).
#pragma once

#include "coll_themis_prelude.h"

#include <string>

#include "coll_themis.h"

namespace themis {

inline const mca_coll_themis_component_t &params() { return mca_coll_themis_component; }

// A verbose-output line about `comm` from this rank, at verbosity `level`.
void say(int level, ompi_communicator_t *comm, const std::string &text);

} // namespace themis
