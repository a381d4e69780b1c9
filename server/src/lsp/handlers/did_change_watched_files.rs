//! `workspace/didChangeWatchedFiles`: a pyproject.toml or culint.toml changed, so every open
//! document may lint differently.

use tower_lsp_server::ls_types::{DidChangeWatchedFilesParams, MessageType};

use crate::lsp::context::ServerContext;

pub async fn did_change_watched_files(context: &ServerContext, params: DidChangeWatchedFilesParams) {
    let changed: Vec<&str> = params
        .changes
        .iter()
        .map(|change| change.uri.as_str())
        .filter(|uri| uri.ends_with("/pyproject.toml") || uri.ends_with("/culint.toml"))
        .collect();
    if changed.is_empty() {
        return;
    }
    context.log(MessageType::INFO, format!("culint: configuration changed ({}); re-linting", changed.join(", "))).await;
    context.refresh_diagnostics().await;
}
