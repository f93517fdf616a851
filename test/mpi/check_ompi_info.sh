#!/usr/bin/env bash
# check_ompi_info.sh -- `ompi_info --param coll themis --level 9` lists coll/themis and
# every coll_themis_* parameter with a description, the enum parameters show their
# valid values, and README.md's parameter tables list exactly the registered
# parameters, each with the default ompi_info reports, and themis-sim's defaults are the
# component's. ompi_info ignores --mca
# arguments, so the build tree's component is found through
# OMPI_MCA_mca_base_component_path (Open MPI's own dir stays in it).
# Environment: THEMIS_BUILDDIR, OMPI_DEFAULT_COMPONENT_DIR, MPIRUN and OMPI_INFO (default
# mpirun and ompi_info, of the same Open MPI).
set -uo pipefail

# shellcheck source=../common/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/mpi_env.sh"
OMPI_INFO=${OMPI_INFO:-ompi_info}
COMPONENT=$BUILDDIR/ompi/mca/coll/themis/.libs/mca_coll_themis.so
[ -f "$COMPONENT" ] || { echo "check_ompi_info: $COMPONENT not built" >&2; exit 2; }
COMPDIR=$BUILDDIR/test/mpi/logs/ompi_info/component  # only the component, a copy
rm -rf "$COMPDIR"
mkdir -p "$COMPDIR"
cp "$COMPONENT" "$COMPDIR/mca_coll_themis.so" || exit 2

README=$SRCDIR/README.md
# README.md's section whose parameters only a build with CUDA registers.
CUDA_SECTION="CUDA device buffers"
declare -A ENUMS=([policy]="baseline themis" [intra_policy]="fifo scf"
                  [load_model]="reference latency")

export OMPI_MCA_mca_base_component_path=$COMPDIR:$OMPI_DEFAULT_COMPONENT_DIR
# ompi_info prints a parameter's value in force: the defaults are checked, not the tests'
# own setting (THEMIS_MPI_ENV).
unset OMPI_MCA_coll_themis_calibration_file
if ! human=$("$OMPI_INFO" --param coll themis --level 9 2>&1) ||
   ! parsable=$("$OMPI_INFO" --param coll themis --level 9 --parsable 2>&1); then
  echo "$human"
  echo "check_ompi_info: FAIL: ompi_info failed"
  exit 1
fi

problems=()
# The coll framework's API is 2.0.0 in 4.1 and 2.4.0 in 5.0 (the component structure grew).
SERIES=$(mpirun_series) || exit 2
declare -A COLL_API=([4.1]=2.0.0 [5.0]=2.4.0)
grep -q "MCA coll: themis (MCA v2.1.0, API v${COLL_API[$SERIES]}, Component v" <<<"$human" ||
  problems+=("no 'MCA coll: themis' component line with Open MPI $SERIES's coll API v${COLL_API[$SERIES]}")

mapfile -t listed < <(sed -n 's/^mca:coll:themis:param:coll_themis_\([a-z_]*\):value:.*/\1/p' <<<"$parsable")
for p in "${listed[@]}"; do
  help=$(sed -n "s/^mca:coll:themis:param:coll_themis_$p:help://p" <<<"$parsable")
  [ ${#help} -ge 10 ] || problems+=("coll_themis_$p has no description")
  # the human-readable listing shows the description under the parameter line
  grep -A1 "parameter \"coll_themis_$p\"" <<<"$human" | tail -1 | grep -qF "${help:0:40}" ||
    problems+=("coll_themis_$p: description not shown by ompi_info --level 9")
done

# The documented enum parameters have their values; every enum parameter (these and
# any other with enumerators) shows them under "Valid values" in the listing.
for p in "${!ENUMS[@]}"; do
  for v in ${ENUMS[$p]}; do
    grep -Eq "^mca:coll:themis:param:coll_themis_$p:enumerator:value:[0-9]+:$v\$" <<<"$parsable" ||
      problems+=("coll_themis_$p: valid value $v not listed")
  done
done
for p in "${listed[@]}"; do
  mapfile -t values < <(sed -n "s/^mca:coll:themis:param:coll_themis_$p:enumerator:value:[0-9]*://p" <<<"$parsable")
  [ ${#values[@]} -gt 0 ] || continue
  block=$(awk -v p="parameter \"coll_themis_$p\"" 'index($0, p) { on = 1; print; next }
          on && /parameter "coll_themis_/ { exit } on { print }' <<<"$human")
  grep -q 'Valid values:' <<<"$block" || problems+=("coll_themis_$p: no 'Valid values' line")
  for v in "${values[@]}"; do
    # 4.1 prints enums 0:"name" and booleans 0: f|false|disabled|no|n; 5.0 0|name and
    # 0|f|false|disabled|no|n
    grep -Eq "[0-9](:\"$v\"|(: |\|)([^ ,|]+\|)*$v(\||,|\$))" <<<"$block" ||
      problems+=("coll_themis_$p: $v missing from 'Valid values'")
  done
done

# README.md's parameter tables (those headed "| parameter | default | meaning |"): one
# line per row, NAME|DEFAULT|SECTION, the default as ompi_info prints it (no backticks,
# "(empty)" empty, a remark such as "0 (auto)" dropped, "A on 4.1, B on 5.0" the series'
# value); "?|LINE|" for a row that names no single parameter.
readme_params() {
  awk -F ' [|] ' -v series="$SERIES" '
    /^## / { section = substr($0, 4) }
    /^[|] parameter [|] default [|] meaning [|]$/ { table = 1; next }
    table && !/^[|]/ { table = 0 }
    !table || /^[|] --- [|]/ { next }
    $1 !~ /^[|] `coll_themis_[a-z_]+`$/ { print "?|" NR "|"; next }
    {
      name = $1; gsub(/^[|] `coll_themis_|`$/, "", name)
      value = $2; gsub(/`/, "", value); sub(/ [(].*[)]$/, "", value)
      if (value ~ / on 4[.]1, .* on 5[.]0$/) {
        split(value, by_series, / on 4[.]1, | on 5[.]0$/)
        value = (series == "5.0") ? by_series[2] : by_series[1]
      }
      if (value == "(empty)") value = ""
      print name "|" value "|" section
    }' "$README"
}

# Equal as text, or as numbers where both are ("0.0625" and "0.062500").
same_default() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    number = "^-?[0-9]+([.][0-9]*)?$"
    exit !(a == b || (a ~ number && b ~ number && a + 0 == b + 0)) }'
}

declare -A registered documented section_of
while IFS='|' read -r name value; do registered[$name]=$value; done < <(
  sed -n 's/^mca:coll:themis:param:coll_themis_\([a-z_]*\):value:\(.*\)/\1|\2/p' <<<"$parsable")
while IFS='|' read -r name value section; do
  if [ "$name" = "?" ]; then
    problems+=("README.md line $value: a parameter table row must name one coll_themis_* parameter")
    continue
  fi
  [ -z "${documented[$name]+set}" ] || problems+=("README.md lists coll_themis_$name twice")
  documented[$name]=$value
  section_of[$name]=$section
done < <(readme_params)
cuda_build=false
for name in "${!documented[@]}"; do
  [ "${section_of[$name]}" = "$CUDA_SECTION" ] && [ -n "${registered[$name]+set}" ] && cuda_build=true
done
for name in "${!registered[@]}"; do
  if [ -z "${documented[$name]+set}" ]; then
    problems+=("coll_themis_$name is registered, but README.md's parameter tables lack it")
  elif ! same_default "${documented[$name]}" "${registered[$name]}"; then
    problems+=("coll_themis_$name: README.md says default '${documented[$name]}', ompi_info '${registered[$name]}'")
  fi
done
for name in "${!documented[@]}"; do
  [ -n "${registered[$name]+set}" ] && continue
  [ "${section_of[$name]}" = "$CUDA_SECTION" ] && ! $cuda_build && continue
  problems+=("README.md lists coll_themis_$name, but ompi_info does not")
done

# themis-sim's defaults: its --help gives each shared one as "(default VALUE, as
# coll_themis_NAME)"; VALUE must be the component's default (both come from src/settings.h).
sim_defaults=$("$BUILDDIR/tools/themis-sim" --help | tr -s ' \n' ' ' |
               grep -o '(default [^ ,]*[^,]*, as coll_themis_[a-z_]*)' |
               sed 's/^(default \([^ ,]*\).*, as coll_themis_\([a-z_]*\))$/\2|\1/')
[ "$(wc -l <<<"$sim_defaults")" -ge 8 ] ||
  problems+=("themis-sim --help names fewer than 8 defaults 'as coll_themis_*': $sim_defaults")
while IFS='|' read -r name value; do
  if [ -z "${registered[$name]+set}" ]; then
    problems+=("themis-sim mirrors coll_themis_$name, which ompi_info does not list")
  elif ! same_default "$value" "${registered[$name]}"; then
    problems+=("coll_themis_$name: themis-sim's default '$value', the component's '${registered[$name]}'")
  fi
done <<<"$sim_defaults"

echo "$human"
if [ ${#problems[@]} = 0 ]; then
  echo "check_ompi_info: PASS (${#listed[@]} parameters, as README.md lists them: ${listed[*]}; themis-sim mirrors $(wc -l <<<"$sim_defaults") defaults alike)"
  exit 0
fi
echo "check_ompi_info: FAIL"
printf '  - %s\n' "${problems[@]}"
exit 1
