//! Reader-side history cache (to be written).
