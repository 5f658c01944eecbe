#!/usr/bin/env bash
# The shape conformance suite (tests/conformance/shape_suite.py) between `tessera shape` and a
# Cyclone DDS 11 shape peer (PyPI's cyclonedds: tests/conformance/cyclone_shape.py), in both
# directions. What the Cyclone peer cannot do (SQL content filters, time-based filter,
# Presentation) it reports "not supported"; every other test must pass.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/shape.bash
source "$(dirname "$0")/lib/shape.bash"

TOOLS="$(dirname "$TESSERA_BIN")/tessera-tools"
[[ -x "$TOOLS" ]] || fail "tessera-tools not built (cargo build --release -p tessera-cli --bins)"
python3 -c "import cyclonedds" 2>/dev/null || fail "python3 cannot import cyclonedds (scripts/install-deps)"
CYCLONE="python3 $REPO_ROOT/tests/conformance/cyclone_shape.py"

shape_vendor_run tessera-to-cyclone "$TOOLS shape" "$CYCLONE"
shape_vendor_run cyclone-to-tessera "$CYCLONE" "$TOOLS shape"
