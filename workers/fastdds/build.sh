#!/usr/bin/env bash
# Builds fastdds-perf against Debian's Fast DDS 2.9 (libfastrtps-dev, libfastcdr-dev):
#   workers/fastdds/build.sh OUT   (OUT: the binary to write; its directory is created)
# Exit 0 when built, 2 when g++ or the Fast DDS headers are missing (nothing to do), 1 when the
# compiler failed. `tessera bench` builds it the same way on demand.
set -euo pipefail
out="${1:?usage: build.sh OUT}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fastdds_perf.cpp"
command -v g++ >/dev/null 2>&1 || { echo "build.sh: g++ not found" >&2; exit 2; }
[[ -e /usr/include/fastdds/dds/domain/DomainParticipantFactory.hpp ]] ||
    { echo "build.sh: Fast DDS headers not found (libfastrtps-dev)" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
g++ -O2 -std=c++17 -Wall -Wextra -o "$out.tmp.$$" "$src" -lfastrtps -lfastcdr -lpthread
mv -f "$out.tmp.$$" "$out"
