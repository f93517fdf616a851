/* coll_themis_prelude.h: include first in every C++ file that includes Open MPI's
 * internal headers. Some inline functions in those headers are not valid C++; the
 * compatibility layer (coll_themis_compat.h) adds the casts C does implicitly, for the
 * series built against, so the headers compile cleanly as C++17. */
#ifndef COLL_THEMIS_PRELUDE_H
#define COLL_THEMIS_PRELUDE_H

#include "coll_themis_compat.h"

#endif
