//! Helpers shared by unit tests of several modules.

use std::path::{Path, PathBuf};

use crate::document::Document;

/// A buffer as the language server holds one that is being edited: its first lint parsed it and
/// settled the tree ([`Document::settled_tree`]), so the next reparse shares its statements.
pub fn edited_buffer(text: &str) -> Document {
    let mut document = Document::unparsed(text, 1);
    document.settled_tree();
    document
}

/// Every Python file among the rule fixtures and the examples: realistic scripts, each rule's
/// findings and near misses.
pub fn python_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("tests/fixtures"), root.join("examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixture folder") {
            let path = entry.expect("fixture entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 40, "{files:?}");
    files
}
