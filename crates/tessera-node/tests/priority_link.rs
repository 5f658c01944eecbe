//! The node's scheduler in front of a slow link: the path to the remote participant (loopback
//! of the test namespace) is shaped to 20 Mbit/s with `tc`, and a bulk application saturates
//! it with no rate limit at the node. High-priority samples must still pre-empt the bulk
//! backlog at the node and arrive while bulk samples age. Needs a network namespace (it
//! shapes that namespace's `lo`) and `tc`.

mod support;

use std::process::Command;

use support::load::run;
use support::require_netns;

fn tc(args: &str) {
    let ok = Command::new("tc")
        .args(args.split_whitespace())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "tc {args} failed");
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn high_priority_stays_fast_on_a_saturated_link() {
    require_netns();
    tc("qdisc replace dev lo root tbf rate 20mbit burst 160kb latency 50ms");
    let o = run(75, None, 8192);
    tc("qdisc del dev lo root");
    let b = &o.bulk;
    // The link was the bottleneck: the application wrote more than the node could send.
    assert!(o.bulk_written > b.sent, "bulk did not saturate the link");
    o.assert_hp_preempted();
}
