//! Commands for `workspace/executeCommand`, one file each.

pub mod apply_all_fixes;
pub mod debug_document_text;
pub mod explain;
pub mod probe;

/// Every command the server registers, in `initialize`'s `executeCommandProvider`.
pub const ALL: &[&str] = &[apply_all_fixes::NAME, explain::NAME, probe::NAME];
