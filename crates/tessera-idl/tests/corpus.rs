//! The IDL corpus (`tests/idl/*.idl`) compiles to the checked-in Rust in `tests/golden/`
//! (regenerate with `TESSERA_IDL_BLESS=1 cargo test -p tessera-idl`); `crates/tessera/tests/
//! idl_generated.rs` compiles that Rust and checks its bytes on the wire. Unsupported
//! constructs and syntax errors are reported at their file, line and column.

use std::path::{Path, PathBuf};

fn dir(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(sub)
}

fn check_golden(stem: &str) {
    check_golden_with(stem, &[], tessera_idl::Options::default());
}

fn check_golden_with(stem: &str, incs: &[PathBuf], opts: tessera_idl::Options) {
    let code = tessera_idl::compile_file_with(&dir("idl").join(format!("{stem}.idl")), incs, opts)
        .unwrap();
    let golden = dir("golden").join(format!("{stem}.rs"));
    if std::env::var_os("TESSERA_IDL_BLESS").is_some() {
        std::fs::write(&golden, &code).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        code,
        want,
        "{stem}.idl: generated code differs from {}",
        golden.display()
    );
}

#[test]
fn ddsperf_types() {
    check_golden("ddsperf");
}

#[test]
fn modules_includes_enums_typedefs_constants_inheritance() {
    check_golden("features");
}

#[test]
fn appendable_shape_type() {
    check_golden("shape");
}

#[test]
fn unions_maps_and_bitmasks() {
    check_golden("unions");
}

#[test]
fn mutable_optional_must_understand_ids_and_bounds() {
    check_golden("extensible");
}

/// The ROS 2 interface files, as `rosidl_adapter` writes them, under `tests/idl/ros2/`.
fn ros2_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for pkg in std::fs::read_dir(dir("idl").join("ros2")).unwrap() {
        for f in std::fs::read_dir(pkg.unwrap().path().join("msg")).unwrap() {
            files.push(f.unwrap().path());
        }
    }
    files.sort();
    files
}

#[test]
fn every_ros2_interface_file_compiles_on_its_own() {
    let incs = [dir("idl").join("ros2")];
    let files = ros2_files();
    assert_eq!(files.len(), 32, "{files:?}");
    for f in &files {
        let code = tessera_idl::compile_file_with(f, &incs, tessera_idl::Options::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let stem = f.file_stem().unwrap().to_string_lossy();
        assert!(code.contains(&format!("pub struct {stem} {{")), "{stem}");
    }
    // An include of the package path is searched in the include directories only.
    let e = tessera_idl::compile_file(&dir("idl/ros2/std_msgs/msg/Header.idl"), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:5:1: cannot find include file builtin_interfaces/msg/Time.idl",
            dir("idl/ros2/std_msgs/msg/Header.idl").display()
        )
    );
}

#[test]
fn ros2_interfaces_with_ros2_type_names() {
    let opts = tessera_idl::Options { ros2_names: true };
    check_golden_with("ros2", &[dir("idl").join("ros2")], opts);
    let code = std::fs::read_to_string(dir("golden").join("ros2.rs")).unwrap();
    // One Rust module per IDL module though every file reopens it; PoseWithCovariance and
    // TwistWithCovariance each define double__36, the Rust has one.
    assert_eq!(code.matches("pub mod std_msgs {").count(), 1);
    assert_eq!(code.matches("pub type double__36 ").count(), 1);
    assert!(code.contains("#[topic(type_name = \"std_msgs::msg::dds_::Header_\")]"));
    // Without the option, the scoped IDL name.
    let plain = tessera_idl::compile_file(
        &dir("idl/ros2/std_msgs/msg/Header.idl"),
        &[dir("idl").join("ros2")],
    )
    .unwrap();
    assert!(plain.contains("#[topic(type_name = \"std_msgs::msg::Header\")]"));
}

#[test]
fn errors_name_file_line_and_column() {
    let cases = [
        (
            "struct A { long x };",
            "t.idl:1:19: expected ';', found '}'",
        ),
        (
            "struct A {\n  wstring w;\n};",
            "t.idl:2:3: 'wstring' is not supported yet",
        ),
        (
            "union U switch (long) { long a; };",
            "t.idl:1:25: expected 'case' or 'default', found 'long'",
        ),
        (
            "union U switch (long) { case 1.5: long a; };",
            "t.idl:1:30: a case label is an integer, character, boolean or enum literal",
        ),
        (
            "module M {\n  @bit_bound(4) bitmask Flags { A, @position(4) B };\n};",
            "t.idl:2:49: flag 'B' at position 4: outside the bit bound 4 or taken",
        ),
        (
            "struct A {\n  long a;  map<string> m;\n};",
            "t.idl:2:22: expected ',', found '>'",
        ),
        (
            "union U switch (long) { case 1: @optional long a; };",
            "t.idl:1:48: not supported yet: @optional on a union member",
        ),
        (
            "struct A { long x[0]; };",
            "t.idl:1:19: expected a positive integer bound",
        ),
        ("const long N = M + 1;", "t.idl:1:16: unknown constant 'M'"),
        (
            "struct B : A { long y; };",
            "t.idl:1:12: unknown base struct 'A'",
        ),
        (
            "module M { struct A { long x; }; };\n};",
            "t.idl:2:1: unbalanced '}' or extra input, found '}'",
        ),
        (
            "struct A { @key @optional long x; };",
            "t.idl:1:32: a key member cannot be @optional",
        ),
        (
            "struct A { @shared long x; };",
            "t.idl:1:12: not supported yet: @shared on a member",
        ),
        (
            "@extensibility(OPEN) struct A { long x; };",
            "t.idl:1:1: @extensibility takes FINAL, APPENDABLE or MUTABLE",
        ),
        (
            "#include \"x.idl\"",
            "t.idl:1:1: cannot find include file (includes need a file: use compile_file)",
        ),
    ];
    for (src, want) in cases {
        let e = tessera_idl::compile_str(src, "t.idl").unwrap_err();
        assert_eq!(e.to_string(), want, "{src}");
    }
    let e = tessera_idl::compile_file(Path::new("/nonexistent/x.idl"), &[]).unwrap_err();
    assert!(matches!(e, tessera_idl::IdlError::Io { .. }));
}

#[test]
fn includes_are_searched_in_the_include_directories() {
    let tmp = std::env::temp_dir().join(format!("tessera-idl-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("inc")).unwrap();
    std::fs::write(tmp.join("inc/dep.idl"), "struct Dep { long a; };").unwrap();
    std::fs::write(
        tmp.join("main.idl"),
        "#include <dep.idl>\nstruct Main { Dep d; };",
    )
    .unwrap();
    let main = tmp.join("main.idl");
    assert!(matches!(
        tessera_idl::compile_file(&main, &[]),
        Err(tessera_idl::IdlError::Include { .. })
    ));
    let code = tessera_idl::compile_file(&main, &[tmp.join("inc")]).unwrap();
    assert!(
        code.contains("pub struct Dep {") && code.contains("pub d: Dep,"),
        "{code}"
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}
