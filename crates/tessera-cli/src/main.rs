//! The `tessera` command-line tool.
fn main() {}
