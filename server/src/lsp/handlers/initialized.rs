//! `initialized`: register the file watchers for configuration files, and tell the user about
//! settings that were ignored.

use tower_lsp_server::ls_types::{
    DidChangeWatchedFilesRegistrationOptions, FileSystemWatcher, GlobPattern, InitializedParams, MessageType,
    Registration,
};

use crate::lsp::context::ServerContext;

/// The configuration files whose changes re-lint every open document.
pub const CONFIG_FILE_GLOBS: &[&str] = &["**/pyproject.toml", "**/culint.toml"];

pub async fn initialized(context: &ServerContext, _params: InitializedParams) {
    let (features, warnings) = {
        let mut session = context.session.lock();
        (session.features.clone(), std::mem::take(&mut session.pending_warnings))
    };
    for warning in warnings {
        context.client.show_message(MessageType::WARNING, &warning).await;
        crate::lsp::log::write(&warning);
    }

    let mut registrations = Vec::new();
    if features.dynamic_file_watchers {
        let watchers = CONFIG_FILE_GLOBS
            .iter()
            .map(|glob| FileSystemWatcher { glob_pattern: GlobPattern::String((*glob).to_owned()), kind: None })
            .collect();
        registrations.push(Registration {
            id: "culint-config-files".to_owned(),
            method: "workspace/didChangeWatchedFiles".to_owned(),
            register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions { watchers }).ok(),
        });
    }
    if features.dynamic_configuration {
        registrations.push(Registration {
            id: "culint-configuration".to_owned(),
            method: "workspace/didChangeConfiguration".to_owned(),
            register_options: None,
        });
    }
    if !registrations.is_empty()
        && let Err(error) = context.client.register_capability(registrations).await
    {
        context
            .log(MessageType::WARNING, format!("culint: the client refused the configuration file watchers: {error}"))
            .await;
    }
}
