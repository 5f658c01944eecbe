//! Unit tests of the service's topic name patterns.

use super::matches_pattern;

#[test]
fn patterns() {
    assert!(matches_pattern("*", "anything"));
    assert!(matches_pattern("Sensor*", "SensorTemp"));
    assert!(matches_pattern("S?n*p", "SensorTemp"));
    assert!(!matches_pattern("Sensor*", "Actuator"));
    assert!(matches_pattern("a*b*c", "aXbYbZc"));
    assert!(!matches_pattern("a*b*c", "aXbYbZ"));
    assert!(matches_pattern("", ""));
    assert!(!matches_pattern("", "x"));
}
