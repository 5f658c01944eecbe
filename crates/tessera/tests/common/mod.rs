//! Helpers shared by the integration tests that open real sockets.
//!
//! Those tests are `#[ignore = "needs a network namespace: ..."]`: a plain `cargo test` lists
//! them as ignored instead of passing without running them. `scripts/test` runs them inside a
//! namespace with `cargo test -- --include-ignored`.

/// Panics unless the test runs inside a network namespace made for the test run
/// (`scripts/netns-run` sets `TESSERA_IN_NETNS=1`): an ignored socket test asked for elsewhere
/// must fail, not send discovery traffic out of the machine's own interfaces.
pub fn require_netns() {
    assert!(
        std::env::var("TESSERA_IN_NETNS").as_deref() == Ok("1"),
        "socket test outside a test network namespace: run it via scripts/netns-run"
    );
}
