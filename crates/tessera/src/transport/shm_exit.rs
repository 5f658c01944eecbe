//! The segment files this process created (receive rings and loan pools), unlinked when the
//! process exits even if their owners were never dropped.
//!
//! `std::process::exit` skips destructors, and so does returning from `main` while another
//! thread still holds a participant or a writer (a listener in progress, a leaked handle):
//! without this hook such a clean exit would leave the segments in `/dev/shm` until the next
//! participant reclaims them. Peers that map a segment keep their mapping. Processes killed
//! before they exit are still reclaimed by the next participant (`reclaim_dead_segments`).
//!
//! Tested end to end (a child process exits with its transport alive) in `shm_tests.rs`: a
//! unit test here would unlink the segments of the tests running beside it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, PoisonError};

/// The files, with the pid that created them: a child forked without `exec` inherits the
/// `atexit` hook and must not unlink its parent's segments when it exits.
static PATHS: Mutex<Vec<(u32, PathBuf)>> = Mutex::new(Vec::new());

/// Unlinks `path` when the process exits, unless [`forget`] was called first.
pub(crate) fn remember(path: &Path) {
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: `unlink_all` is an `extern "C"` function without arguments that never
        // unwinds, as `atexit` requires.
        unsafe { libc::atexit(unlink_all) };
    });
    PATHS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((std::process::id(), path.to_path_buf()));
}

/// `path` was removed by its owner.
pub(crate) fn forget(path: &Path) {
    PATHS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|(_, p)| p != path);
}

extern "C" fn unlink_all() {
    let me = std::process::id();
    // `try_lock`: a thread that held the lock when `exit` was called never lets it go.
    if let Ok(paths) = PATHS.try_lock() {
        for (_, p) in paths.iter().filter(|(pid, _)| *pid == me) {
            let _ = std::fs::remove_file(p);
        }
    }
}
