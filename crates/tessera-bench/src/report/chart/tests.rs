//! Unit tests of the chart helpers: tick choice, tick labels, range widening.

use super::scale::{keys, label_of, span_range, tick_text};
use super::{Axis, Scale};

#[test]
fn log2_keys_are_powers_of_two() {
    let a = Axis::new("payload", Scale::Log2);
    let k = keys(&a, (1.6, 14.4), 7.0);
    assert!(k.iter().all(|v| v.fract() == 0.0));
    assert!(k.contains(&2.0) && k.contains(&14.0) || k.len() <= 8);
    assert_eq!(label_of(&a, 10.0), "1024");
}

#[test]
fn tick_text_is_compact() {
    assert_eq!(tick_text(50_000.0), "50k");
    assert_eq!(tick_text(1_250_000.0), "1.25M");
    assert_eq!(tick_text(12.5), "12.5");
    assert_eq!(tick_text(0.0), "0");
}

#[test]
fn degenerate_ranges_are_widened() {
    let a = Axis::new("y", Scale::Linear);
    let (lo, hi) = span_range(&[0.0, 0.0], &a, 0.05, 0.05).unwrap();
    assert!(hi > lo);
    let l = Axis::new("y", Scale::Log10);
    let (lo, hi) = span_range(&[2.0], &l, 0.05, 0.05).unwrap();
    assert!(hi > lo);
    assert!(span_range(&[], &l, 0.05, 0.05).is_none());
}
