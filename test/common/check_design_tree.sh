#!/usr/bin/env bash
# check_design_tree.sh -- docs/design.md's "Source tree" lists the repository's folders: every
# folder it names exists, and every folder holding tracked files is named, or lies below a named
# folder whose own subfolders the tree does not list (ompi/.../shim/ holds a header's path).
# Usage: check_design_tree.sh [SRCDIR] (default: the repository this script is in).
set -uo pipefail
SRCDIR=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
DESIGN=$SRCDIR/docs/design.md

# The first column of the tree block (between "## Source tree" and the next line outside the
# code fence): comma-separated names, the folders ending in "/".
mapfile -t listed < <(awk '/^## Source tree/ { on = 1; next }
  on && /^```/ { if (fence++) exit; next }
  on && fence { split($0, col, "   "); print col[1] }' "$DESIGN" |
  tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep '/$' | sed 's:/$::' | sort -u)
[ ${#listed[@]} -gt 5 ] || { echo "check_design_tree: no source tree found in $DESIGN"; exit 1; }

problems=()
for d in "${listed[@]}"; do
  [ -d "$SRCDIR/$d" ] || problems+=("docs/design.md names $d/, which does not exist")
done
is_listed() { printf '%s\n' "${listed[@]}" | grep -qxF "$1"; }
has_listed_child() { printf '%s\n' "${listed[@]}" | grep -q "^$1/"; }
[ "$(git -C "$SRCDIR" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$SRCDIR" && pwd -P)" ] ||
  { echo "check_design_tree: SKIPPED: $SRCDIR is no git checkout's top (a release tarball)"; exit 77; }
mapfile -t folders < <(git -C "$SRCDIR" ls-files | xargs -r -n1 dirname | sort -u | grep -vx '.')
for d in "${folders[@]}"; do
  is_listed "$d" && continue
  covered=false
  a=$d
  while [ "$a" != "." ] && [ "$a" != "/" ]; do
    a=$(dirname "$a")
    if is_listed "$a"; then has_listed_child "$a" || covered=true; break; fi
  done
  $covered || problems+=("$d/ holds tracked files but docs/design.md's source tree does not name it")
done

if [ ${#problems[@]} = 0 ]; then
  echo "check_design_tree: PASS (${#listed[@]} folders named, ${#folders[@]} folders hold tracked files)"
  exit 0
fi
echo "check_design_tree: FAIL"
printf '  - %s\n' "${problems[@]}"
exit 1
