//! Makes every chapter of the book (`docs/src/SUMMARY.md` lists them) a doctest of this crate, so
//! that `cargo test --workspace` compiles and runs each Rust example of the book. SUMMARY.md is the
//! one list of chapters: a chapter added there is tested with no other change.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let book = manifest.join("../../docs/src");
    let summary_path = book.join("SUMMARY.md");
    println!("cargo::rerun-if-changed={}", summary_path.display());
    let summary = std::fs::read_to_string(&summary_path).unwrap_or_else(|e| {
        panic!(
            "the book's table of contents {}: {e}",
            summary_path.display()
        )
    });

    let mut items = String::new();
    for (index, chapter) in chapter_files(&summary).iter().enumerate() {
        let path = book.join(chapter);
        assert!(
            path.is_file(),
            "{} lists {chapter}, which does not exist",
            summary_path.display()
        );
        println!("cargo::rerun-if-changed={}", path.display());
        writeln!(
            items,
            "/// The book's chapter `{chapter}`, whose Rust examples run as doctests.\n\
             #[doc = include_str!({:?})]\npub struct Chapter{index};",
            absolute(&path).display()
        )
        .expect("writing to a String");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("book.rs");
    std::fs::write(&out, items).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}

/// The chapter files that an mdBook `SUMMARY.md` links to, in order: the targets of its
/// `[title](file.md)` links (draft chapters, with an empty target, have no file).
fn chapter_files(summary: &str) -> Vec<String> {
    summary
        .lines()
        .filter_map(|line| {
            let target = line.split_once("](")?.1.split_once(')')?.0.trim();
            (!target.is_empty()).then(|| target.to_string())
        })
        .collect()
}

/// `path` without `..` components, for readable doctest names.
fn absolute(path: &Path) -> PathBuf {
    path.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
