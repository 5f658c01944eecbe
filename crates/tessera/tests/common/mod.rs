//! Helpers shared by the integration tests that open real sockets.

/// Whether the test runs inside a network namespace made for the test run
/// (`scripts/netns-run` sets `TESSERA_IN_NETNS=1`). Socket tests skip, saying so, elsewhere:
/// they must never send discovery traffic out of the machine's own interfaces.
pub fn in_netns() -> bool {
    let ok = std::env::var("TESSERA_IN_NETNS").as_deref() == Ok("1");
    if !ok {
        eprintln!("SKIP: not in a test network namespace (run via scripts/netns-run)");
    }
    ok
}
