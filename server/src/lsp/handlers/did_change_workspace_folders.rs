//! `workspace/didChangeWorkspaceFolders`: keep the folder list that configuration lookup uses.

use tower_lsp_server::ls_types::DidChangeWorkspaceFoldersParams;

use crate::lsp::context::ServerContext;
use crate::lsp::session::path_of;

pub async fn did_change_workspace_folders(context: &ServerContext, params: DidChangeWorkspaceFoldersParams) {
    {
        let mut session = context.session.lock();
        let removed: Vec<_> = params.event.removed.iter().filter_map(|f| path_of(&f.uri)).collect();
        session.workspace_folders.retain(|folder| !removed.contains(folder));
        for added in params.event.added.iter().filter_map(|f| path_of(&f.uri)) {
            if !session.workspace_folders.contains(&added) {
                session.workspace_folders.push(added);
            }
        }
    }
    context.refresh_diagnostics().await;
}
