//! The README's Rust example is `examples/readme.rs`, word for word (without the example's
//! `//!` header), so that the example the tests build and run is the one users copy.

#[test]
fn readme_example_is_examples_readme_rs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/../../README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{root}/examples/readme.rs")).unwrap();
    let start = readme
        .find("```rust\n")
        .expect("README has a ```rust block")
        + "```rust\n".len();
    let len = readme[start..].find("```").expect("the ```rust block ends");
    let in_readme = &readme[start..start + len];
    let in_example: String = example
        .lines()
        .filter(|l| !l.starts_with("//!"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        in_readme, in_example,
        "README.md's Rust example differs from crates/tessera/examples/readme.rs"
    );
}
