dnl themis_cuda.m4 -- optional CUDA toolkit detection.
dnl
dnl   --with-cuda[=DIR]  DIR is the toolkit root (DIR/bin/nvcc, DIR/include).
dnl   --without-cuda     disable.
dnl   (default)          auto-detect nvcc in $PATH, then /usr/local/cuda/bin;
dnl                      absence is not an error.
dnl An explicit --with-cuda / --with-cuda=DIR that cannot be satisfied is an
dnl error.
dnl
dnl Sets have_cuda=yes|no, AM_CONDITIONAL([HAVE_CUDA]) and substitutes
dnl   NVCC, NVCCFLAGS (precious), CUDA_HOME, CUDA_VERSION,
dnl   CUDA_CPPFLAGS (-I$CUDA_HOME/include), CUDA_LDFLAGS (-L.../lib64),
dnl   CUDA_LIBS (-lcudart).
AC_DEFUN([THEMIS_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [use the CUDA toolkit in DIR (default: auto-detect nvcc in PATH or
       /usr/local/cuda/bin; --without-cuda disables)])],
    [], [with_cuda=check])
  AC_ARG_VAR([NVCC], [CUDA compiler driver (nvcc)])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc])

  have_cuda=no
  CUDA_HOME=
  CUDA_VERSION=
  CUDA_CPPFLAGS=
  CUDA_LDFLAGS=
  CUDA_LIBS=

  AS_CASE([$with_cuda],
    [no], [NVCC=],
    [yes|check],
      [AC_PATH_PROG([NVCC], [nvcc], [], [$PATH$PATH_SEPARATOR/usr/local/cuda/bin])],
    [AS_IF([test -x "$with_cuda/bin/nvcc"],
       [NVCC="$with_cuda/bin/nvcc"],
       [AC_MSG_ERROR([--with-cuda=$with_cuda given but $with_cuda/bin/nvcc does not exist: pass the CUDA toolkit root or --without-cuda])])])

  AS_IF([test -n "$NVCC"], [
    AS_IF([test "x$with_cuda" != xno && test "x$with_cuda" != xyes && test "x$with_cuda" != xcheck],
      [CUDA_HOME="$with_cuda"],
      [CUDA_HOME=`AS_DIRNAME(["$NVCC"])`
       CUDA_HOME=`AS_DIRNAME(["$CUDA_HOME"])`])
    AC_MSG_CHECKING([for CUDA headers in $CUDA_HOME/include])
    AS_IF([test -f "$CUDA_HOME/include/cuda_runtime.h"],
      [AC_MSG_RESULT([yes])
       have_cuda=yes
       CUDA_CPPFLAGS="-I$CUDA_HOME/include"
       AS_IF([test -d "$CUDA_HOME/lib64"],
             [CUDA_LDFLAGS="-L$CUDA_HOME/lib64"],
             [CUDA_LDFLAGS="-L$CUDA_HOME/lib"])
       CUDA_LIBS="-lcudart"
       CUDA_VERSION=`"$NVCC" --version 2>/dev/null | sed -n 's/.*release \([[0-9.]]*\).*/\1/p'`],
      [AC_MSG_RESULT([no])
       AS_IF([test "x$with_cuda" = xcheck],
         [NVCC=],
         [AC_MSG_ERROR([CUDA requested but $CUDA_HOME/include/cuda_runtime.h is missing: pass the CUDA toolkit root with --with-cuda=DIR])])])
  ], [
    AS_IF([test "x$with_cuda" = xyes],
      [AC_MSG_ERROR([--with-cuda given but nvcc was not found in PATH or /usr/local/cuda/bin: pass --with-cuda=DIR])])
  ])

  AS_IF([test "x$have_cuda" = xyes],
    [AC_DEFINE([THEMIS_HAVE_CUDA], [1], [Define to 1 if the CUDA toolkit was found])])

  AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
  AC_SUBST([NVCC])
  AC_SUBST([CUDA_HOME])
  AC_SUBST([CUDA_VERSION])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
])
