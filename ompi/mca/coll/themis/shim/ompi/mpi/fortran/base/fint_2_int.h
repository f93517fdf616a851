/* Stand-in for the Fortran integer conversion header that Debian's libopenmpi-dev
 * does not ship but ompi/op/op.h includes (an install that has it comes first in the
 * include path). Open MPI's Fortran INTEGER is a C int in this build, or there is no
 * Fortran (size 0: no Fortran handle is ever converted), so the conversions are the
 * identity; refuse to build if that ever stops being true. */
#ifndef THEMIS_SHIM_FINT_2_INT_H
#define THEMIS_SHIM_FINT_2_INT_H

#include "opal_config.h"

#if OMPI_SIZEOF_FORTRAN_INTEGER != 0 && OMPI_SIZEOF_FORTRAN_INTEGER != SIZEOF_INT
#error "Fortran INTEGER differs from C int: this shim does not apply to this Open MPI build"
#endif

#define OMPI_INT_2_FINT(a) (a)
#define OMPI_FINT_2_INT(a) (a)
#define OMPI_PFINT_2_PINT(a) (a)

#endif
