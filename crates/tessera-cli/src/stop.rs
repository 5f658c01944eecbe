//! A stop flag raised by SIGINT or SIGTERM, for the long-running commands that poll it
//! (`tessera discovery-server`, `tessera shape`).

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM raise the flag instead of ending the process.
pub fn install() {
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// Whether a signal asked to stop.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
