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
    let code = tessera_idl::compile_file(&dir("idl").join(format!("{stem}.idl")), &[]).unwrap();
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
fn mutable_optional_must_understand_ids_and_bounds() {
    check_golden("extensible");
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
            "union U switch (long) { case 1: long a; };",
            "t.idl:1:1: 'union' is not supported yet",
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
