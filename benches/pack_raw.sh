#!/usr/bin/env bash
# Packs a run directory's raw output (per-request CSVs, RSS samples, server, replica and HAProxy
# logs) into RUN/raw.tar.xz and deletes the unpacked files, and redraws its charts' grid lines
# as one path each, so that benches/results/ keeps its summaries as files and stays small
# (benches/results/README.md, "Raw logs").
#
#   benches/pack_raw.sh benches/results/DATE-NAME
set -euo pipefail

run=${1:?usage: benches/pack_raw.sh RUN_DIR}
cd "$run"
if [ -e raw.tar.xz ]; then
  # Packing again over an archive would drop whatever of it is not unpacked now.
  echo "$run/raw.tar.xz exists: unpack it (tar -xJf raw.tar.xz), then delete it and pack again" >&2
  exit 1
fi

# The same names as benches/results/.gitignore, each also gzipped (run_load.sh and soak.sh gzip
# files over 1 MB, multi_replica.sh the replicas' logs).
names=(requests.csv rss.csv 'server*.log' 'replica-*.log' 'haproxy-*.log' burst.csv triggers.csv)
match=()
for n in "${names[@]}"; do match+=(-o -name "$n" -o -name "$n.gz"); done
# Unzipped first: xz packs the plain text a third smaller than it can pack gzip's output.
find . -type f \( "${match[@]:1}" \) -name '*.gz' -exec gzip -d {} +
mapfile -t raw < <(find . -type f \( "${match[@]:1}" \) | sed 's|^\./||' | LC_ALL=C sort)
if [ ${#raw[@]} -eq 0 ]; then
  echo "$run: no raw output to pack" >&2
  exit 0
fi

# Fixed owner and time: packing the same files twice gives the same bytes, so git sees no change.
tar --owner=0 --group=0 --numeric-owner --mtime=@0 --no-recursion -cf - -- "${raw[@]}" \
  | xz -9e > raw.tar.xz
rm -- "${raw[@]}"
# The charts drawn smaller, the same picture (benches/compact_svg.py).
find . -name '*.svg' -print0 | xargs -0 -r python3 "$(dirname "$(readlink -f "$0")")/compact_svg.py"
size=$(stat -c %s raw.tar.xz)
echo "$run/raw.tar.xz: ${#raw[@]} files, $size bytes"
if [ "$size" -gt 1000000 ]; then
  echo "over 1 MB: summarise its largest log before committing (benches/results/README.md)" >&2
fi
