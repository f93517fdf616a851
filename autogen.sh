#!/bin/sh
# Regenerate the autotools build system (configure, Makefile.in, config/*).
set -e
cd "$(dirname "$0")"
exec autoreconf -fi
