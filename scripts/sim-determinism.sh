#!/bin/sh
# Seeded determinism across two builds: runs `rnic sim` on every scenario in
# scenarios/ with build OLD and build NEW (two checkouts, each built with
# `npx tsc -b`) and diffs what each run wrote. Wall-clock figures differ from
# run to run, so those numbers (summary.json's wallNs, "N ms wall" in the
# summaries and the report) are blanked before comparing; everything else (captures, counters, timelines,
# flows, time series, plots, event counts, virtual times) must be identical.
#
#   sh scripts/sim-determinism.sh OLD_TREE NEW_TREE [OUT_DIR]
#
# Exit status 0 when every scenario matches, 1 when one differs or a run failed.
set -u
old=${1:?usage: sim-determinism.sh OLD_TREE NEW_TREE [OUT_DIR]}
new=${2:?usage: sim-determinism.sh OLD_TREE NEW_TREE [OUT_DIR]}
out=${3:-$(mktemp -d /tmp/sim-determinism.XXXXXX)}
for t in "$old" "$new"; do
  [ -f "$t/bin/rnic.js" ] || { echo "not a built tree: $t (no bin/rnic.js)" >&2; exit 1; }
done
# The wall-clock numbers in summary.txt/json and report.html.
wall='s/"wallNs": *[0-9]+/"wallNs": -/g; s/[0-9.]+ ms wall/- ms wall/g'
status=0
for s in "$new"/scenarios/*.json; do
  name=$(basename "$s" .json)
  for side in old new; do
    eval "tree=\$$side"
    dir="$out/$side/$name"
    rm -rf "$dir"
    # The scenario file from NEW for both sides: the builds are compared, not the inputs.
    node "$tree/bin/rnic.js" sim "$s" --out "$dir" --quiet
    rc=$?
    echo "$rc" > "$dir.rc"
  done
  if ! cmp -s "$out/old/$name.rc" "$out/new/$name.rc"; then
    echo "DIFF $name: exit status $(cat "$out/old/$name.rc") -> $(cat "$out/new/$name.rc")"
    status=1
    continue
  fi
  differs=''
  for f in "$out/new/$name"/* "$out/old/$name"/*; do
    b=$(basename "$f")
    o="$out/old/$name/$b"
    n="$out/new/$name/$b"
    if [ ! -f "$o" ] || [ ! -f "$n" ]; then differs="$differs $b(missing)"; continue; fi
    case "$b" in
      summary.txt | summary.json | report.html)
        sed -E "$wall" "$o" > "$out/o.tmp"
        sed -E "$wall" "$n" > "$out/n.tmp"
        cmp -s "$out/o.tmp" "$out/n.tmp" || differs="$differs $b"
        ;;
      *) cmp -s "$o" "$n" || differs="$differs $b" ;;
    esac
  done
  if [ -n "$differs" ]; then
    echo "DIFF $name:$(echo "$differs" | tr ' ' '\n' | sort -u | tr '\n' ' ')"
    status=1
  else
    echo "same $name ($(ls "$out/new/$name" | wc -l) files, exit $(cat "$out/new/$name.rc"))"
  fi
done
rm -f "$out/o.tmp" "$out/n.tmp"
echo "outputs in $out"
exit $status
