#!/usr/bin/env bash
# The shape conformance suite (tests/conformance/shape_suite.py) between `tessera shape` and a
# Fast DDS 2.9 shape peer (tests/conformance/fastdds_shape.cpp against Debian's libfastrtps-dev,
# built here), in both directions. What the Fast DDS peer cannot do (SQL content filters on a
# type without a TypeObject, time-based filter, Presentation, TRANSIENT/PERSISTENT durability)
# it reports "not supported"; every other test must pass.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/shape.bash
source "$(dirname "$0")/lib/shape.bash"

TOOLS="$(dirname "$TESSERA_BIN")/tessera-tools"
[[ -x "$TOOLS" ]] || fail "tessera-tools not built (cargo build --release -p tessera-cli --bins)"
command -v g++ >/dev/null || fail "g++ not installed (scripts/install-deps)"
[[ -e /usr/include/fastdds/dds/domain/DomainParticipantFactory.hpp ]] ||
    fail "Fast DDS headers missing (libfastrtps-dev: scripts/install-deps)"
PEER="$WORK/fastdds-shape"
g++ -O1 -std=c++17 -Wall -Wextra -Werror -o "$PEER" "$REPO_ROOT/tests/conformance/fastdds_shape.cpp" \
    -lfastrtps -lfastcdr -lpthread || fail "the Fast DDS shape peer does not build"

# Fast DDS 2.9's own deviations, read in its source (v2.9.1), each reported as PEER-DEFECT:
defects=(
    # EDP::checkDataRepresentationQos: an XCDR2 reader also accepts XCDR1 writers.
    --peer-defect "DataRepresentation_xcdr1_writer_xcdr2_reader=Fast DDS 2.9 matches an XCDR1 writer with an XCDR2-only reader"
    # DataReaderImpl: samples expire by the reader's own (non-standard) DataReaderQos lifespan.
    --peer-defect "Lifespan_short=Fast DDS 2.9 readers ignore the writer's LIFESPAN"
    # MessageReceiver::proc_Submsg_Data: a key-only payload of at most 16 bytes becomes the
    # instance handle, replacing PID_KEY_HASH, so a dispose names another instance.
    --peer-defect "FinalInstanceState_dispose=Fast DDS 2.9 takes a short serialized key for the key hash"
    --peer-defect "FinalInstanceState_unregister=Fast DDS 2.9 takes a short serialized key for the key hash"
)

shape_vendor_run tessera-to-fastdds "$TOOLS shape" "$PEER" "${defects[@]}"
shape_vendor_run fastdds-to-tessera "$PEER" "$TOOLS shape" "${defects[@]}"
