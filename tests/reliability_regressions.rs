//! Replays tests/fixtures/regressions/ through the fuzz targets' checks (fuzz/checks.rs): every
//! crash a fuzzer found is saved there once fixed, beside hand-written adversarial files.
//! `*.py` files go through the lint and fix checks; `*.edits` files (raw fuzz input for
//! `document_edits`) through the incremental-edit check.

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::PathBuf;

fn regression_files(extension: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == extension))
        .collect();
    files.sort();
    files
}

#[test]
fn saved_lint_and_fix_inputs_hold() {
    let files = regression_files("py");
    assert!(!files.is_empty(), "tests/fixtures/regressions/ has no .py inputs");
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        // Crash inputs are kept byte for byte; the fuzz targets skip what is not UTF-8.
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        let name = path.display().to_string();
        std::panic::catch_unwind(|| checks::check_lint(text)).unwrap_or_else(|_| panic!("lint check failed: {name}"));
        std::panic::catch_unwind(|| checks::check_fix(text)).unwrap_or_else(|_| panic!("fix check failed: {name}"));
    }
}

#[test]
fn saved_document_edit_inputs_hold() {
    let files = regression_files("edits");
    assert!(!files.is_empty(), "tests/fixtures/regressions/ has no .edits inputs");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let name = path.display().to_string();
        std::panic::catch_unwind(|| checks::check_document_edits(&data))
            .unwrap_or_else(|_| panic!("document edit check failed: {name}"));
    }
}
