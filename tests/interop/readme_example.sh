#!/usr/bin/env bash
# The README's Rust example (crates/tessera/examples/readme.rs, identical to the README's block)
# runs and prints the three samples it wrote, as a new user would see it.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

EXAMPLE="$REPO_ROOT/target/release/examples/readme"
[[ -x "$EXAMPLE" ]] || fail "example not built (cargo build --release -p tessera --examples)"
out="$(timeout 20 "$EXAMPLE")" || fail "the README example failed: $out"
log "$out"
n="$(grep -c '^Some(Reading { sensor: [123], celsius: ' <<<"$out" || true)"
[[ "$n" -eq 3 ]] || fail "expected 3 samples, got $n"
log "ok: the README example printed its 3 samples"
