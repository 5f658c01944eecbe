//! The node's scheduler under load: a bulk application pushes far more than its topic's rate
//! limit allows while a high-priority application publishes a small sample every 20 ms. The
//! bulk flow is held to its token bucket (counted in bytes), the high-priority samples
//! overtake the bulk backlog (counted as pre-emptions; none waited behind bulk), and arrive
//! while bulk samples queue for seconds. Needs a network namespace.

mod support;

use support::load::run;
use support::require_netns;
use tessera_node::Rate;

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn high_priority_overtakes_a_rate_limited_bulk_flow() {
    require_netns();
    let rate = Rate {
        bytes_per_sec: 400_000,
        burst: 20_000,
    };
    let o = run(74, Some(rate), 8192);
    let b = &o.bulk;
    // The token bucket held the bulk flow to its rate (+ its burst)...
    let allowed = rate.bytes_per_sec as f64 * (o.elapsed.as_secs_f64() + 1.0) + rate.burst as f64;
    assert!(
        (b.bytes as f64) <= allowed,
        "bulk sent {} B, allowed {allowed}",
        b.bytes
    );
    assert!(b.throttled > 0, "the bulk flow never waited for tokens");
    // ... while it had a backlog the whole time: the application wrote more than went out.
    assert!(o.bulk_written > b.sent + 100);
    o.assert_hp_preempted();
}
