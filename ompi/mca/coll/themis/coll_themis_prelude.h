/* coll_themis_prelude.h: include first in every C++ file that includes Open MPI's
 * internal headers. Two inline functions in those headers are not valid C++ (a
 * void* passed where void** / char* is expected); the macros below add the casts
 * C does implicitly, so the headers compile cleanly as C++17. */
#ifndef COLL_THEMIS_PRELUDE_H
#define COLL_THEMIS_PRELUDE_H

#include "ompi_config.h"

#include "opal/threads/thread_usage.h"
#undef OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR
#define OPAL_THREAD_COMPARE_EXCHANGE_STRONG_PTR(x, y, z)                                           \
    opal_thread_compare_exchange_strong_ptr((volatile intptr_t *)(x), (void **)(y), (void *)(z))

#include "ompi/datatype/ompi_datatype.h"
#define ompi_datatype_copy_content_same_ddt(t, c, d, s)                                            \
    (ompi_datatype_copy_content_same_ddt)((t), (c), (char *)(d), (char *)(s))

#endif
