// coll_themis_params.h: the component's parameters and its verbose output, for the C++
// glue (the parameters' defaults, ranges and descriptions: coll_themis_component.c; the
// verbose output: coll_themis_log.h).
#pragma once

#include "coll_themis_prelude.h"

#include <string>

#include "coll_themis.h"
#include "coll_themis_log.h"

namespace themis {

inline const mca_coll_themis_component_t &params() { return mca_coll_themis_component; }

} // namespace themis
