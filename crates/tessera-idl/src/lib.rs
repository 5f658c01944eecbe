//! OMG IDL to Rust for Tessera: `tessera idl FILE.idl` on the command line, or from a crate's
//! `build.rs`:
//!
//! ```no_run
//! // In build.rs's main: compiles idl/robot.idl to $OUT_DIR/robot.rs.
//! tessera_idl::build(&["idl/robot.idl"], &["idl"]).unwrap();
//! // Then in src/lib.rs: include!(concat!(env!("OUT_DIR"), "/robot.rs"));
//! ```
//!
//! Each IDL struct becomes a `#[derive(TopicType)]` struct registered under its scoped IDL
//! name (`Module::Struct`, what Cyclone's `idlc` and Fast DDS's `fastddsgen` register), each
//! module a `pub mod`, each enum a Rust enum with its CDR encoding, typedefs type aliases and
//! constants `pub const`s. Modules reopened across files (as every ROS 2 interface file
//! reopens `module std_msgs { module msg {`) become one Rust module.
//!
//! # ROS 2 interfaces
//! The `.idl` files `rosidl_adapter` writes from `.msg` files (`@verbatim` comments, `@default`
//! values, typedef'd arrays such as `double__36`, `Foo_Constants` modules) compile as they are.
//! With [`Options::ros2_names`] (`tessera idl --ros2-names`) each struct is registered under
//! the name ROS 2's DDS type support uses on the wire, `std_msgs::msg::dds_::Header_`; ROS 2
//! topics are named `rt/<topic>` on the wire (`/chatter` is `rt/chatter`).
//!
//! # Supported
//! Modules, structs (with inheritance) that are `@final`, `@appendable` or `@mutable` (also
//! as `@extensibility(...)`), enums (`@value`), typedefs, constants with integer expressions
//! (usable as array bounds), `#include` (searched next to the including file, then in the
//! include directories; each file once), the primitive types, `string` and `string<N>`,
//! `sequence<T>` and `sequence<T, N>` (bounds go into the TypeObject, as `#[bound(N)]`), arrays,
//! and the member annotations `@key`, `@id`, `@optional` (an `Option<T>` member),
//! `@must_understand`, plus `@topic`, `@nested`, `@default`, `@range`, `@min`, `@max`, `@unit`,
//! which change nothing on the wire. The generated ShapeType has the interoperability suite's
//! XTypes identity and bytes.
//!
//! Unions (`union U switch (long) { case 1: case 2: long a; default: double b; };`, with
//! integer, `char`, `boolean` or enum discriminators, `@key` on the discriminator, `@id` on
//! members, any extensibility) become enums with `#[derive(TopicType)]` and
//! `#[union(discriminator = T)]`, one variant per case (`CamelCase` of the member name; labels
//! as their values); `map<K, V>` / `map<K, V, N>` a `BTreeMap<K, V>` (with `#[bound(N)]`);
//! `@bit_bound(N) bitmask B { a, @position(5) b };` a `#[derive(TopicBitmask)]` newtype over
//! the smallest unsigned integer holding N bits, with a constant per flag (`B::A`). See the
//! derive's documentation for what each means on the wire.
//!
//! # Not yet
//! `wchar`/`wstring`, `fixed`, `long double`, bitsets, `@optional` union members, `@key` on an
//! optional member (refused as the spec says): each is refused with an error at its file,
//! line and column rather than generated with a different wire form.

#![warn(missing_docs)]

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

mod gen;
pub mod lex;
pub mod parse;

pub use gen::{generate, generate_with, Options};
pub use parse::Def;

/// A position in an IDL file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pos {
    /// The file as given.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (characters).
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// Why an IDL file could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum IdlError {
    /// Not valid IDL (or not the subset described in the crate docs).
    #[error("{pos}: {msg}")]
    Syntax {
        /// Where.
        pos: Pos,
        /// What.
        msg: String,
    },
    /// Valid IDL that this compiler does not translate yet.
    #[error("{pos}: not supported yet: {what}")]
    Unsupported {
        /// Where.
        pos: Pos,
        /// What.
        what: String,
    },
    /// An `#include` names no file in the search path.
    #[error("{pos}: cannot find include file {name}")]
    Include {
        /// The directive's position.
        pos: Pos,
        /// The file named.
        name: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Reads `path` and its includes into one token stream.
fn expand(
    path: &Path,
    include_dirs: &[PathBuf],
    seen: &mut HashSet<PathBuf>,
    out: &mut Vec<lex::Token>,
) -> Result<(), IdlError> {
    let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if !seen.insert(canon) {
        return Ok(());
    }
    let src = std::fs::read_to_string(path).map_err(|source| IdlError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let name = path.display().to_string();
    for t in lex::lex(&src, &name)? {
        let lex::Tok::Directive(d) = &t.tok else {
            out.push(t);
            continue;
        };
        let Some(rest) = d.strip_prefix("include") else {
            continue; // #pragma, #ifndef/#define/#endif include guards
        };
        let rest = rest.trim();
        // "file" or <file>; anything after it (a comment) is ignored.
        let inc = match rest.chars().next() {
            Some('"') => rest[1..].split_once('"').map(|x| x.0),
            Some('<') => rest[1..].split_once('>').map(|x| x.0),
            _ => None,
        }
        .filter(|f| !f.is_empty())
        .ok_or_else(|| IdlError::Syntax {
            pos: t.pos.clone(),
            msg: format!("malformed #include {rest}"),
        })?;
        let here = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let found = std::iter::once(here)
            .chain(include_dirs.iter().cloned())
            .map(|d| d.join(inc))
            .find(|p| p.is_file())
            .ok_or_else(|| IdlError::Include {
                pos: t.pos.clone(),
                name: inc.to_string(),
            })?;
        expand(&found, include_dirs, seen, out)?;
    }
    Ok(())
}

fn parse_tokens(toks: &[lex::Token], file: &str) -> Result<Vec<Def>, IdlError> {
    let eof = toks.last().map_or_else(
        || Pos {
            file: file.to_string(),
            line: 1,
            col: 1,
        },
        |t| t.pos.clone(),
    );
    let mut p = parse::Parser::new(toks, eof);
    let defs = p.definitions()?;
    // `definitions` stops at a `}` it did not open.
    p.expect_end()?;
    Ok(defs)
}

/// Parses `path` (and what it includes).
pub fn parse_file(path: &Path, include_dirs: &[PathBuf]) -> Result<Vec<Def>, IdlError> {
    let mut toks = Vec::new();
    expand(path, include_dirs, &mut HashSet::new(), &mut toks)?;
    parse_tokens(&toks, &path.display().to_string())
}

/// Compiles IDL source text (`name` is used in messages; `#include` is not available).
pub fn compile_str(src: &str, name: &str) -> Result<String, IdlError> {
    let toks = lex::lex(src, name)?;
    if let Some(t) = toks
        .iter()
        .find(|t| matches!(&t.tok, lex::Tok::Directive(d) if d.starts_with("include")))
    {
        return Err(IdlError::Include {
            pos: t.pos.clone(),
            name: "(includes need a file: use compile_file)".into(),
        });
    }
    let defs = parse_tokens(&toks, name)?;
    generate(&defs, name)
}

/// Compiles `path` (and its includes) to Rust source.
pub fn compile_file(path: &Path, include_dirs: &[PathBuf]) -> Result<String, IdlError> {
    compile_file_with(path, include_dirs, Options::default())
}

/// Compiles `path` (and its includes) to Rust source with `opts` (e.g. ROS 2's type names).
pub fn compile_file_with(
    path: &Path,
    include_dirs: &[PathBuf],
    opts: Options,
) -> Result<String, IdlError> {
    let defs = parse_file(path, include_dirs)?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    generate_with(&defs, &name, opts)
}

/// For `build.rs`: compiles each of `files` to `$OUT_DIR/<file stem>.rs` and tells Cargo to
/// rerun when one of them changes.
pub fn build(files: &[&str], include_dirs: &[&str]) -> Result<(), IdlError> {
    build_with(files, include_dirs, Options::default())
}

/// [`build`] with `opts`: `Options { ros2_names: true }` for ROS 2 interface IDL.
pub fn build_with(files: &[&str], include_dirs: &[&str], opts: Options) -> Result<(), IdlError> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_else(|| ".".into()));
    let incs: Vec<PathBuf> = include_dirs.iter().map(PathBuf::from).collect();
    for f in files {
        let path = Path::new(f);
        println!("cargo:rerun-if-changed={f}");
        let code = compile_file_with(path, &incs, opts)?;
        let stem = path
            .file_stem()
            .map_or_else(|| "idl".into(), |s| s.to_string_lossy().into_owned());
        let out = out_dir.join(format!("{stem}.rs"));
        std::fs::write(&out, code).map_err(|source| IdlError::Io { path: out, source })?;
    }
    Ok(())
}
