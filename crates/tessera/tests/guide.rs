//! The user guide's examples (`docs/guide/`) are the files they name, and they run. Every
//! ```rust or ```xml block of the guide starts with a line naming its file (`// file: PATH` or
//! `<!-- file: PATH -->`, relative to the repository) and is that file word for word after its
//! leading `//!` comment lines; every Rust example the guide shows is run here (over the
//! in-process network: no sockets). The ```python blocks run in the pytest suite
//! (`bindings/python/tests/test_guide.py`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fenced blocks of `lang` in the guide's pages, with the page they are on.
fn blocks(lang: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let open = format!("```{lang}\n");
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut rest = text.as_str();
        while let Some(start) = rest.find(&open) {
            let body = &rest[start + open.len()..];
            let len = body.find("```").expect("a block ends");
            out.push((page.display().to_string(), body[..len].to_string()));
            rest = &body[len..][3..];
        }
    }
    out
}

/// The file a block names on its first line, and the block's text after that line.
fn named<'a>(page: &str, block: &'a str, pre: &str, post: &str) -> (String, &'a str) {
    let (first, body) = block.split_once('\n').unwrap_or((block, ""));
    let path = first
        .strip_prefix(pre)
        .and_then(|r| r.strip_suffix(post))
        .unwrap_or_else(|| panic!("{page}: a block must start with `{pre}PATH{post}`: {first}"));
    (path.to_string(), body)
}

fn without_header(file: &str) -> String {
    file.lines()
        .skip_while(|l| l.starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn every_rust_and_xml_block_is_the_file_it_names() {
    let mut rust = BTreeSet::new();
    for (lang, pre, post) in [("rust", "// file: ", ""), ("xml", "<!-- file: ", " -->")] {
        for (page, block) in blocks(lang) {
            let (path, body) = named(&page, &block, pre, post);
            let file = std::fs::read_to_string(repo().join(&path))
                .unwrap_or_else(|e| panic!("{page}: {path}: {e}"));
            let want = if lang == "rust" {
                without_header(&file)
            } else {
                file
            };
            assert_eq!(body, want, "{page}: the block differs from {path}");
            if lang == "rust" {
                rust.insert(path);
            }
        }
    }
    // Each Rust example shown is one this file runs below.
    let run: BTreeSet<String> = ["guide_qos", "guide_ros2", "guide_start"]
        .iter()
        .map(|n| format!("crates/tessera/examples/{n}.rs"))
        .collect();
    assert_eq!(rust, run);
}

/// Every relative link of the guide (`](path)` or `](path#anchor)`) names a file that exists.
#[test]
fn relative_links_name_existing_files() {
    let dir = repo().join("docs/guide");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let page = entry.unwrap().path();
        if page.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("](") {
            let target = &text[at + 2..];
            let target = &target[..target.find(')').expect("a link ends")];
            let path = target.split('#').next().unwrap();
            if path.is_empty() || path.contains("://") {
                continue;
            }
            assert!(
                dir.join(path).exists(),
                "{}: link to {target} names no file",
                page.display()
            );
        }
    }
}

#[test]
fn guide_start_runs() {
    guide_start::main().unwrap();
}

#[test]
fn guide_qos_runs() {
    guide_qos::main().unwrap();
}

#[test]
fn guide_ros2_runs() {
    guide_ros2::main().unwrap();
}

#[path = "../examples/guide_start.rs"]
mod guide_start;

#[path = "../examples/guide_qos.rs"]
mod guide_qos;

#[path = "../examples/guide_ros2.rs"]
mod guide_ros2;
