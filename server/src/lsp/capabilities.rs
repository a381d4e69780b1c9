//! What the client said it can do, reduced to the facts the handlers branch on.

use tower_lsp_server::ls_types::{ClientCapabilities, MarkupKind};

use crate::lsp::position::PositionEncoding;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientFeatures {
    pub encoding: PositionEncoding,
    /// `textDocument/diagnostic`: the client pulls, so the server never pushes.
    pub pull_diagnostics: bool,
    /// `workspace/diagnostic/refresh`: the server may ask a pulling client to pull again.
    pub diagnostic_refresh: bool,
    /// File watchers can be registered at run time.
    pub dynamic_file_watchers: bool,
    /// `workspace/didChangeConfiguration` can be registered at run time (needed by some clients
    /// before they send it).
    pub dynamic_configuration: bool,
    pub work_done_progress: bool,
    pub apply_edit: bool,
    /// Workspace edits may carry document versions, so a stale edit is refused by the client.
    pub versioned_edits: bool,
    pub hover_markdown: bool,
}

impl ClientFeatures {
    pub fn from_capabilities(capabilities: &ClientCapabilities) -> Self {
        let text = capabilities.text_document.as_ref();
        let workspace = capabilities.workspace.as_ref();
        let offered = capabilities.general.as_ref().and_then(|g| g.position_encodings.as_deref());
        Self {
            encoding: PositionEncoding::negotiate(offered),
            pull_diagnostics: text.is_some_and(|t| t.diagnostic.is_some()),
            diagnostic_refresh: workspace
                .and_then(|w| w.diagnostics.as_ref())
                .and_then(|d| d.refresh_support)
                .unwrap_or(false),
            dynamic_file_watchers: workspace
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|w| w.dynamic_registration)
                .unwrap_or(false),
            dynamic_configuration: workspace
                .and_then(|w| w.did_change_configuration.as_ref())
                .and_then(|c| c.dynamic_registration)
                .unwrap_or(false),
            work_done_progress: capabilities.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false),
            apply_edit: workspace.and_then(|w| w.apply_edit).unwrap_or(false),
            versioned_edits: workspace
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.document_changes)
                .unwrap_or(false),
            hover_markdown: text
                .and_then(|t| t.hover.as_ref())
                .and_then(|h| h.content_format.as_ref())
                .is_none_or(|formats| formats.contains(&MarkupKind::Markdown)),
        }
    }
}

/// The kind of culint's fix-all action, so editors can run it on save
/// (`"editor.codeActionsOnSave": {"source.fixAll.culint": "explicit"}`).
pub const FIX_ALL_KIND: &str = "source.fixAll.culint";

/// Whether `kind` was asked for: `only` absent asks for everything, and a kind covers its
/// sub-kinds (`source` covers `source.fixAll.culint`).
pub fn requested(
    only: Option<&[tower_lsp_server::ls_types::CodeActionKind]>,
    kind: &tower_lsp_server::ls_types::CodeActionKind,
) -> bool {
    let Some(only) = only else { return true };
    only.iter().any(|o| kind.as_str() == o.as_str() || kind.as_str().starts_with(&format!("{}.", o.as_str())))
}
