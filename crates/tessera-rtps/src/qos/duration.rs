//! The DDS infinite duration and the conversions between `std::time::Duration` and the RTPS
//! wire `Duration_t`.

use std::time::Duration;

use crate::types::DurationT;

/// The DDS infinite duration.
pub const INFINITE: Duration = Duration::MAX;

/// Whether `d` stands for the infinite duration (anything at or beyond 2^31-1 seconds, which is
/// what the wire can express).
pub fn is_infinite(d: Duration) -> bool {
    d.as_secs() >= 0x7fff_ffff
}

/// Converts a duration to the RTPS wire representation; [`INFINITE`] (or anything longer than
/// the wire can hold) becomes `DurationT::INFINITE`.
pub fn duration_to_wire(d: Duration) -> DurationT {
    if is_infinite(d) {
        return DurationT::INFINITE;
    }
    // Rounded up, so that a decoder that truncates (Fast DDS) gets the same nanoseconds back,
    // and one that rounds to nearest (ours) too: one fraction unit is ~0.23 ns. Truncated
    // here, Fast DDS read 100 ms as 99.999999 ms and found equal deadlines incompatible.
    let fraction = ((d.subsec_nanos() as u64) << 32).div_ceil(1_000_000_000);
    DurationT {
        seconds: d.as_secs() as i32,
        fraction: fraction as u32,
    }
}

/// Converts an RTPS wire duration. Any value with `seconds == 0x7fffffff` is infinite (some
/// implementations put nanoseconds rather than fractions in the infinite value); negative
/// durations are invalid and give `None`.
pub fn duration_from_wire(d: DurationT) -> Option<Duration> {
    if d.seconds == 0x7fff_ffff {
        return Some(INFINITE);
    }
    if d.seconds < 0 {
        return None;
    }
    let ns = ((d.fraction as u64) * 1_000_000_000 + (1 << 31)) >> 32;
    Some(Duration::from_secs(d.seconds as u64) + Duration::from_nanos(ns))
}
