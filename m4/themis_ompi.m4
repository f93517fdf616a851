dnl themis_ompi.m4 -- locate Open MPI (public + internal "devel" headers),
dnl tell its series, mpirun, and the directory Open MPI loads components from.
dnl
dnl Which Open MPI: the one pkg-config finds (Debian's libopenmpi-dev), or the one
dnl installed in PREFIX with --with-ompi=PREFIX (its lib/pkgconfig/ompi.pc).
dnl Supported series: 4.1 and 5.0 (ompi/mca/coll/themis/coll_themis_compat.h holds
dnl what differs between them); any other stops configure.
dnl Internal headers a 5.0 install may lack (--with-devel-headers does not install
dnl every one a component includes) come from --with-ompi-source=DIR, the source
dnl tree (and build tree) Open MPI was built from.
dnl
dnl Substitutes:
dnl   OMPI_CFLAGS, OMPI_LIBS      (pkg-config ompi)
dnl   OMPI_VERSION                major.minor.release from mpi.h
dnl   OMPI_SERIES                 4.1 or 5.0
dnl   OMPI_PREFIX                 `pkg-config --variable=prefix ompi`
dnl   OMPI_INCLUDEDIR             `pkg-config --variable=includedir ompi`
dnl   OMPI_LIBDIR                 `pkg-config --variable=libdir ompi`
dnl   OMPI_CPPFLAGS               --cflags plus -I$OMPI_INCLUDEDIR/openmpi
dnl                               (internal headers: ompi/mca/coll/coll.h ...), plus
dnl                               the --with-ompi-source directories
dnl   OMPI_COMPONENT_LIBS         what an MCA component links with under
dnl                               -Wl,--no-undefined: -L... -lmpi -lopen-pal
dnl   OMPI_DEFAULT_COMPONENT_DIR  Open MPI's own component dir (pkglibdir),
dnl                               needed in mca_base_component_path
dnl   MPIRUN                      absolute path of mpirun
dnl   OMPI_INFO                   absolute path of the same install's ompi_info
dnl   ompicomponentdir            --with-ompi-component-dir=DIR
AC_DEFUN([THEMIS_CHECK_OMPI], [
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])

  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=PREFIX],
      [build against the Open MPI (4.1 or 5.0 series) installed in PREFIX, found
       through PREFIX/lib/pkgconfig/ompi.pc (default: the one pkg-config finds,
       Debian's libopenmpi-dev)])],
    [], [with_ompi=])
  AC_ARG_WITH([ompi-source],
    [AS_HELP_STRING([--with-ompi-source=DIR[:DIR2]],
      [Open MPI source tree (and build tree DIR2, when built outside the source)
       of the same version as the install: internal headers the install lacks are
       taken from there])],
    [], [with_ompi_source=])

  dnl ----------------------------------------------------------- which Open MPI
  themis_ompi_pcdir=
  AS_CASE([$with_ompi],
    [no], [AC_MSG_ERROR([--without-ompi: coll/themis is an Open MPI component and cannot be built without Open MPI])],
    [yes], [AC_MSG_ERROR([--with-ompi needs the prefix Open MPI is installed in, e.g. --with-ompi=/opt/openmpi-5.0.9])],
    [""], [],
    [AS_IF([test ! -d "$with_ompi"],
       [AC_MSG_ERROR([--with-ompi=$with_ompi: no such directory])])
     for themis_d in "$with_ompi/lib/pkgconfig" "$with_ompi/lib64/pkgconfig" \
                     "$with_ompi/lib/x86_64-linux-gnu/pkgconfig" "$with_ompi/share/pkgconfig"; do
       AS_IF([test -f "$themis_d/ompi.pc"], [themis_ompi_pcdir=$themis_d; break])
     done
     AS_IF([test -z "$themis_ompi_pcdir"],
       [AC_MSG_ERROR([--with-ompi=$with_ompi: no ompi.pc under $with_ompi/lib/pkgconfig or $with_ompi/lib64/pkgconfig; give the prefix Open MPI was installed into (the directory holding bin/mpirun and lib/)])])])

  dnl PKG_CONFIG_PATH points at the prefix only while Open MPI is looked up: UCX,
  dnl hwloc and the others keep coming from the system.
  themis_save_PKG_CONFIG_PATH=$PKG_CONFIG_PATH
  themis_pkg_set=${PKG_CONFIG_PATH+set}
  AS_IF([test -n "$themis_ompi_pcdir"],
    [PKG_CONFIG_PATH="$themis_ompi_pcdir${PKG_CONFIG_PATH:+$PATH_SEPARATOR$PKG_CONFIG_PATH}"
     export PKG_CONFIG_PATH])
  AS_IF([test -n "$themis_ompi_pcdir"],
    [THEMIS_REQUIRE_PKG([OMPI], [ompi], [Open MPI's ompi.pc in $themis_ompi_pcdir],
                        [libopenmpi-dev, or give --with-ompi=PREFIX an Open MPI install prefix])],
    [THEMIS_REQUIRE_PKG([OMPI], [ompi], [Open MPI development files],
                        [libopenmpi-dev (or configure --with-ompi=PREFIX for an Open MPI installed elsewhere)])])
  OMPI_PREFIX=`$PKG_CONFIG --variable=prefix ompi`
  OMPI_INCLUDEDIR=`$PKG_CONFIG --variable=includedir ompi`
  OMPI_LIBDIR=`$PKG_CONFIG --variable=libdir ompi`
  AS_IF([test "$themis_pkg_set" = set],
    [PKG_CONFIG_PATH=$themis_save_PKG_CONFIG_PATH],
    [AS_UNSET([PKG_CONFIG_PATH])])
  AS_IF([test ! -f "$OMPI_INCLUDEDIR/mpi.h"],
    [AC_MSG_ERROR([Open MPI's mpi.h is not in $OMPI_INCLUDEDIR, where its ompi.pc says: the install was moved after it was built; rebuild it for where it is now])])

  dnl ------------------------------------------------------------------ series
  dnl The version mpi.h gives is the one compiled against, whatever ompi.pc says.
  AC_LANG_PUSH([C])
  themis_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$OMPI_CFLAGS $CPPFLAGS"
  AC_COMPUTE_INT([themis_ompi_major], [OMPI_MAJOR_VERSION], [[#include <mpi.h>]],
    [AC_MSG_ERROR([cannot read OMPI_MAJOR_VERSION from $OMPI_INCLUDEDIR/mpi.h: is this Open MPI's mpi.h?])])
  AC_COMPUTE_INT([themis_ompi_minor], [OMPI_MINOR_VERSION], [[#include <mpi.h>]],
    [AC_MSG_ERROR([cannot read OMPI_MINOR_VERSION from $OMPI_INCLUDEDIR/mpi.h])])
  AC_COMPUTE_INT([themis_ompi_release], [OMPI_RELEASE_VERSION], [[#include <mpi.h>]],
    [AC_MSG_ERROR([cannot read OMPI_RELEASE_VERSION from $OMPI_INCLUDEDIR/mpi.h])])
  CPPFLAGS=$themis_save_CPPFLAGS
  AC_LANG_POP([C])
  OMPI_VERSION=$themis_ompi_major.$themis_ompi_minor.$themis_ompi_release
  OMPI_SERIES=$themis_ompi_major.$themis_ompi_minor
  AC_MSG_CHECKING([which Open MPI series this is])
  AS_CASE([$OMPI_SERIES],
    [4.1|5.0], [AC_MSG_RESULT([$OMPI_SERIES ($OMPI_VERSION in $OMPI_PREFIX)])],
    [AC_MSG_RESULT([$OMPI_SERIES, unsupported])
     AC_MSG_ERROR([Open MPI $OMPI_VERSION (in $OMPI_PREFIX) is not supported: coll/themis builds against the 4.1 and 5.0 series only, so point --with-ompi=PREFIX at a 4.1 or 5.0 install])])

  dnl -------------------------------------------------------- internal headers
  OMPI_CPPFLAGS="$OMPI_CFLAGS -I$OMPI_INCLUDEDIR/openmpi"
  themis_ompi_src_dirs=
  AS_CASE([$with_ompi_source],
    [no|""], [],
    [yes], [AC_MSG_ERROR([--with-ompi-source needs the Open MPI source tree, e.g. --with-ompi-source=$HOME/src/openmpi-$OMPI_VERSION])],
    [themis_save_IFS=$IFS
     IFS=:
     for themis_d in $with_ompi_source; do
       IFS=$themis_save_IFS
       AS_IF([test ! -d "$themis_d"],
         [AC_MSG_ERROR([--with-ompi-source: $themis_d is not a directory])])
       themis_d=`cd "$themis_d" && pwd`
       themis_ompi_src_dirs="$themis_ompi_src_dirs $themis_d"
       OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$themis_d"
     done
     IFS=$themis_save_IFS
     dnl The first directory is the source tree: its VERSION must be the install's.
     themis_src=`echo $themis_ompi_src_dirs | cut -d' ' -f1`
     AS_IF([test ! -f "$themis_src/VERSION" || test ! -f "$themis_src/ompi/mca/coll/coll.h"],
       [AC_MSG_ERROR([--with-ompi-source=$themis_src is not an Open MPI source tree (it has no VERSION and ompi/mca/coll/coll.h): give the tree Open MPI $OMPI_VERSION was built from])])
     themis_src_version=`sed -n 's/^major=//p' "$themis_src/VERSION"`.`sed -n 's/^minor=//p' "$themis_src/VERSION"`.`sed -n 's/^release=//p' "$themis_src/VERSION"`
     AS_IF([test "$themis_src_version" != "$OMPI_VERSION"],
       [AC_MSG_ERROR([--with-ompi-source=$themis_src is Open MPI $themis_src_version but the install is $OMPI_VERSION: give the source tree of $OMPI_VERSION, the one the install was built from])])])

  dnl Every internal header the component includes, compiled as its C files are,
  dnl with the project's stand-in for the Fortran header Debian leaves out. The
  dnl first one missing is named, with what to do.
  AC_LANG_PUSH([C])
  themis_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$OMPI_CPPFLAGS $CPPFLAGS -I$srcdir/ompi/mca/coll/themis/shim"
  AC_MSG_CHECKING([for the Open MPI internal headers the component needs])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/communicator/comm_request.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/op/op.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"
#include "opal/util/info_subscriber.h"
#include "opal/util/output.h"
#include "opal/util/printf.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"
]], [[return 0;]])],
    [AC_MSG_RESULT([yes])],
    [themis_missing=`sed -n 's/.*fatal error: \(@<:@^:@:>@*\): No such file.*/\1/p' conftest.err | sed -n 1p`
     AC_MSG_RESULT([no])
     AS_CASE([$themis_missing],
       [""],
         [AC_MSG_ERROR([Open MPI $OMPI_VERSION's internal headers in $OMPI_INCLUDEDIR/openmpi do not compile (see config.log)])],
       [hwloc.h|hwloc/*],
         [AC_MSG_ERROR([Open MPI $OMPI_VERSION's internal headers include $themis_missing: install the Debian package libhwloc-dev])],
       [event.h|event2/*],
         [AC_MSG_ERROR([Open MPI $OMPI_VERSION's internal headers include $themis_missing: install the Debian package libevent-dev])],
       [ompi/*|opal/*|*_config*.h],
         [AS_IF([test -n "$themis_ompi_src_dirs"],
           [AC_MSG_ERROR([Open MPI $OMPI_VERSION's internal header $themis_missing is neither in $OMPI_INCLUDEDIR/openmpi nor in$themis_ompi_src_dirs: give --with-ompi-source the source tree Open MPI was built from, and its build tree after a colon if it was built outside the source tree])],
           [AC_MSG_ERROR([Open MPI $OMPI_VERSION's internal header $themis_missing is not installed in $OMPI_INCLUDEDIR/openmpi (--with-devel-headers does not install them all): configure again with --with-ompi-source=DIR, DIR being the Open MPI $OMPI_VERSION source tree the install was built from])])],
       [AC_MSG_ERROR([Open MPI $OMPI_VERSION's internal headers include $themis_missing, which the compiler does not find: install the development files that provide it])])])
  CPPFLAGS=$themis_save_CPPFLAGS
  AC_LANG_POP([C])
  OMPI_COMPONENT_LIBS="-L$OMPI_LIBDIR -lmpi -lopen-pal"

  dnl ------------------------------------------------------------------ mpirun
  dnl The install's own mpirun first: a 5.0 job must not start under 4.1's.
  AS_IF([test -x "$OMPI_PREFIX/bin/mpirun"],
    [MPIRUN="$OMPI_PREFIX/bin/mpirun"],
    [AC_PATH_PROG([MPIRUN], [mpirun], [], [$OMPI_LIBDIR/../bin$PATH_SEPARATOR$PATH])])
  AS_IF([test -z "$MPIRUN"],
    [AC_MSG_ERROR([mpirun not found: install the Debian package openmpi-bin])])
  AC_MSG_CHECKING([for mpirun])
  AC_MSG_RESULT([$MPIRUN])
  dnl ompi_info of the same install (the tests ask it what the component registered).
  AS_IF([test -x "$OMPI_PREFIX/bin/ompi_info"],
    [OMPI_INFO="$OMPI_PREFIX/bin/ompi_info"],
    [AC_PATH_PROG([OMPI_INFO], [ompi_info], [ompi_info], [$OMPI_LIBDIR/../bin$PATH_SEPARATOR$PATH])])

  dnl Open MPI's own component directory (pkglibdir).  Debian: .../lib/openmpi3
  AS_IF([test -d "$OMPI_LIBDIR/openmpi3"],
    [OMPI_DEFAULT_COMPONENT_DIR="$OMPI_LIBDIR/openmpi3"],
    [OMPI_DEFAULT_COMPONENT_DIR="$OMPI_LIBDIR/openmpi"])

  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
      [install the coll/themis MCA component into DIR
       (default: `pkg-config --variable=libdir ompi`/openmpi3 if it exists; with
       --with-ompi, that install's own component directory; else $libdir/openmpi)])],
    [AS_CASE([$withval],
       [yes|no|""], [AC_MSG_ERROR([--with-ompi-component-dir needs a directory argument])],
       [ompicomponentdir="$withval"])],
    [AS_IF([test -d "$OMPI_LIBDIR/openmpi3"],
       [ompicomponentdir="$OMPI_LIBDIR/openmpi3"],
     [test -n "$themis_ompi_pcdir"],
       [ompicomponentdir="$OMPI_DEFAULT_COMPONENT_DIR"],
       [ompicomponentdir='${libdir}/openmpi'])])
  AC_MSG_CHECKING([where to install the coll/themis component])
  AC_MSG_RESULT([$ompicomponentdir])

  AC_SUBST([OMPI_VERSION])
  AC_SUBST([OMPI_SERIES])
  AC_SUBST([OMPI_PREFIX])
  AC_SUBST([OMPI_INCLUDEDIR])
  AC_SUBST([OMPI_LIBDIR])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_COMPONENT_LIBS])
  AC_SUBST([OMPI_DEFAULT_COMPONENT_DIR])
  AC_SUBST([MPIRUN])
  AC_SUBST([OMPI_INFO])
  AC_SUBST([ompicomponentdir])
])
