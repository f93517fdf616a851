dnl themis_pkg.m4 -- helpers for required/optional pkg-config dependencies.
dnl
dnl THEMIS_REQUIRE_PKG(VARIABLE-PREFIX, MODULES, WHAT, DEBIAN-PACKAGE)
dnl   Runs PKG_CHECK_MODULES; on failure stops configure with one sentence
dnl   naming the Debian package to install.  Sets/substitutes PREFIX_CFLAGS,
dnl   PREFIX_LIBS and PREFIX_VERSION (version of the first module).
AC_DEFUN([THEMIS_REQUIRE_PKG], [
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])
  PKG_CHECK_MODULES([$1], [$2], [],
    [AC_MSG_ERROR([$3 not found: install the Debian package $4])])
  $1_VERSION=`$PKG_CONFIG --modversion $2 2>/dev/null | sed -n 1p`
  AC_SUBST([$1_VERSION])
])

dnl THEMIS_OPTIONAL_PKG(VARIABLE-PREFIX, MODULES)
dnl   Like THEMIS_REQUIRE_PKG but never fails; sets have_<prefix-lowercase>
dnl   to yes/no and substitutes PREFIX_CFLAGS / PREFIX_LIBS / PREFIX_VERSION.
AC_DEFUN([THEMIS_OPTIONAL_PKG], [
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])
  PKG_CHECK_MODULES([$1], [$2],
    [have_[]m4_tolower([$1])=yes
     $1_VERSION=`$PKG_CONFIG --modversion $2 2>/dev/null | sed -n 1p`],
    [have_[]m4_tolower([$1])=no
     $1_VERSION=])
  AC_SUBST([$1_VERSION])
])
