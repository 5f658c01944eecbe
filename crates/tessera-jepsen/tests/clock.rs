//! The experiment behind the clock nemesis: a Rust process with libfaketime preloaded the way
//! the controller does it sees its `SystemTime` jump forward and back as its offset file says,
//! while its `Instant` runs on.

use std::path::Path;

use tessera_jepsen::clock;

#[test]
fn a_preloaded_member_jumps_its_wall_clock_but_not_its_monotonic_clock() {
    let lib = match clock::find_library() {
        Ok(lib) => lib,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("tessera-jepsen-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let probe = Path::new(env!("CARGO_BIN_EXE_tessera-jepsen-member"));
    let result = clock::verify(&lib, probe, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    result.unwrap();
}
