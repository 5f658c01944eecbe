//! Fuzzes the frames ATOMIC members exchange over TCP (a JSON document, then the byte strings
//! it names by offset and length): a request or response decoder must refuse what it cannot
//! read, never panic, whatever the offsets, lengths and document say.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tessera_atomic::decode_frame_for_fuzzing(data);
});
