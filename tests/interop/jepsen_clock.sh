#!/usr/bin/env bash
# The fault harness's clock nemesis, short: `tessera-jepsen run` with 3 member processes on
# namespace hosts for 20 s, m0's wall clock 561 s behind (10.0-15.3 s; libfaketime preloaded,
# its monotonic clock untouched) while every writer has a 30 s LIFESPAN. Checks that the
# harness verified its clock mechanism, that m0 saw the jump and the jump back, that the
# history is clean (before ATOMIC readers ignored an ATOMIC writer's LIFESPAN, the other
# members dropped m0's committed samples as expired and the members diverged) and that the
# members delivered the same number of samples, and that the run left nothing of libfaketime
# in /dev/shm. Needs libfaketime (scripts/install-deps).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/jepsen.bash
source "$(dirname "$0")/lib/jepsen.bash"

faketime_files() { find /dev/shm -maxdepth 1 -name '*faketime_s*' 2>/dev/null | sort; }
before="$(faketime_files)"
jepsen_run --members 3 --seed 9 --duration 20 --nemesis clock --lifespan 30 --out "$WORK/run"
# libfaketime leaves a segment and a semaphore per process in /dev/shm unless removed.
left="$(comm -13 <(echo "$before") <(faketime_files))"
[[ -z "$left" ]] || fail "libfaketime files left in /dev/shm: $left"
grep -q "^== clock: .* jumps a member's wall clock, not its monotonic clock" "$WORK/jepsen.log" ||
    fail "no clock check"
grep -q "clock jump m0 -561 s" "$WORK/jepsen.log" || fail "the schedule changed: no clock jump"
grep -q "clock steps m0 saw: \[-561.0 +561.0\] s$" "$WORK/jepsen.log" ||
    fail "m0 did not see its clock jump and jump back"
grep -q "== seed 9: 0 violation(s)" "$WORK/jepsen.log" || fail "no clean verdict"
deliveries="$(sed -n 's/^  deliveries: //p' "$WORK/jepsen.log")"
counts="$(grep -o '=[0-9]*' <<<"$deliveries" | sort -u | wc -l)"
[[ "$counts" -eq 1 ]] || fail "the members delivered different numbers of samples: $deliveries"
log "ok: m0's clock jumped 561 s back and forth; clean history, $deliveries"
