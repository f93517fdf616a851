dnl themis_ompi.m4 -- locate Open MPI (public + internal "devel" headers),
dnl mpirun, and the directory Open MPI loads components from.
dnl
dnl Substitutes:
dnl   OMPI_CFLAGS, OMPI_LIBS      (pkg-config ompi)
dnl   OMPI_VERSION
dnl   OMPI_INCLUDEDIR             `pkg-config --variable=includedir ompi`
dnl   OMPI_LIBDIR                 `pkg-config --variable=libdir ompi`
dnl   OMPI_CPPFLAGS               --cflags plus -I$OMPI_INCLUDEDIR/openmpi
dnl                               (internal headers: ompi/mca/coll/coll.h ...)
dnl   OMPI_COMPONENT_LIBS         what an MCA component links with under
dnl                               -Wl,--no-undefined: -L... -lmpi -lopen-pal
dnl   OMPI_DEFAULT_COMPONENT_DIR  Open MPI's own component dir (pkglibdir),
dnl                               needed in mca_base_component_path
dnl   MPIRUN                      absolute path of mpirun
dnl   ompicomponentdir            --with-ompi-component-dir=DIR
AC_DEFUN([THEMIS_CHECK_OMPI], [
  THEMIS_REQUIRE_PKG([OMPI], [ompi], [Open MPI development files],
                     [libopenmpi-dev])

  OMPI_INCLUDEDIR=`$PKG_CONFIG --variable=includedir ompi`
  OMPI_LIBDIR=`$PKG_CONFIG --variable=libdir ompi`
  OMPI_CPPFLAGS="$OMPI_CFLAGS -I$OMPI_INCLUDEDIR/openmpi"
  OMPI_COMPONENT_LIBS="-L$OMPI_LIBDIR -lmpi -lopen-pal"

  AC_MSG_CHECKING([for Open MPI internal headers])
  AS_IF([test -f "$OMPI_INCLUDEDIR/openmpi/ompi/mca/coll/coll.h"],
    [AC_MSG_RESULT([$OMPI_INCLUDEDIR/openmpi])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([Open MPI internal headers (ompi/mca/coll/coll.h) not found under $OMPI_INCLUDEDIR/openmpi: install the Debian package libopenmpi-dev])])

  AC_PATH_PROG([MPIRUN], [mpirun], [], [$OMPI_LIBDIR/../bin$PATH_SEPARATOR$PATH])
  AS_IF([test -z "$MPIRUN"],
    [AC_MSG_ERROR([mpirun not found: install the Debian package openmpi-bin])])

  dnl Open MPI's own component directory (pkglibdir).  Debian: .../lib/openmpi3
  AS_IF([test -d "$OMPI_LIBDIR/openmpi3"],
    [OMPI_DEFAULT_COMPONENT_DIR="$OMPI_LIBDIR/openmpi3"],
    [OMPI_DEFAULT_COMPONENT_DIR="$OMPI_LIBDIR/openmpi"])

  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
      [install the coll/themis MCA component into DIR
       (default: `pkg-config --variable=libdir ompi`/openmpi3 if it exists,
       else $libdir/openmpi)])],
    [AS_CASE([$withval],
       [yes|no|""], [AC_MSG_ERROR([--with-ompi-component-dir needs a directory argument])],
       [ompicomponentdir="$withval"])],
    [AS_IF([test -d "$OMPI_LIBDIR/openmpi3"],
       [ompicomponentdir="$OMPI_LIBDIR/openmpi3"],
       [ompicomponentdir='${libdir}/openmpi'])])
  AC_MSG_CHECKING([where to install the coll/themis component])
  AC_MSG_RESULT([$ompicomponentdir])

  AC_SUBST([OMPI_INCLUDEDIR])
  AC_SUBST([OMPI_LIBDIR])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_COMPONENT_LIBS])
  AC_SUBST([OMPI_DEFAULT_COMPONENT_DIR])
  AC_SUBST([ompicomponentdir])
])
