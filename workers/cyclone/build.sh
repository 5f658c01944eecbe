#!/usr/bin/env bash
# Builds cyclone-perf against Debian's Cyclone DDS 0.10.2 (cyclonedds-dev; idlc from
# cyclonedds-tools):
#   workers/cyclone/build.sh OUT   (OUT: the binary to write; its directory is created)
# Exit 0 when built, 2 when cc, idlc or the Cyclone headers are missing (nothing to do), 1 when
# the build failed. `tessera bench` builds it the same way on demand.
set -euo pipefail
out="${1:?usage: build.sh OUT}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v cc >/dev/null 2>&1 || { echo "build.sh: cc not found" >&2; exit 2; }
command -v idlc >/dev/null 2>&1 || { echo "build.sh: idlc not found (cyclonedds-tools)" >&2; exit 2; }
[[ -e /usr/include/dds/dds.h ]] || { echo "build.sh: Cyclone headers not found (cyclonedds-dev)" >&2; exit 2; }
gen="$(mktemp -d)"
trap 'rm -rf "$gen"' EXIT
idlc -o "$gen" "$here/ddsperf_types.idl"
mkdir -p "$(dirname "$out")"
cc -O2 -std=gnu11 -Wall -Wextra -I"$gen" -o "$out.tmp.$$" "$here/cyclone_perf.c" "$gen/ddsperf_types.c" \
    -lddsc -lpthread
mv -f "$out.tmp.$$" "$out"
