//! The entry files compiled into the binary. `tests/knowledge.rs` fails when a file under
//! `knowledge/<group>/` is missing from this list, so an entry cannot be forgotten.

macro_rules! entry_file {
    ($path:literal) => {
        ($path, include_str!(concat!("../../../", $path)))
    };
}

/// `(path relative to the repository root, file text)` of every built-in entry.
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    entry_file!("knowledge/cublas/alloc-failed.toml"),
];
