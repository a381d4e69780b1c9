//! `initialize`: negotiate the position encoding and the diagnostic model, read the settings,
//! and announce what the server does.

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    CodeActionKind, CodeActionOptions, CodeActionProviderCapability, DiagnosticOptions, DiagnosticServerCapabilities,
    ExecuteCommandOptions, HoverProviderCapability, InitializeParams, InitializeResult, OneOf, ServerCapabilities,
    ServerInfo, TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    WorkspaceFoldersServerCapabilities, WorkspaceServerCapabilities,
};

use crate::knowledge::Lang;
use crate::lsp::capabilities::ClientFeatures;
use crate::lsp::commands;
use crate::lsp::context::ServerContext;
use crate::lsp::session::path_of;
use crate::lsp::settings::ClientSettings;

pub use crate::lsp::capabilities::FIX_ALL_KIND;

pub async fn initialize(context: &ServerContext, params: InitializeParams) -> Result<InitializeResult> {
    let features = ClientFeatures::from_capabilities(&params.capabilities);
    let options = params.initialization_options.unwrap_or_default();
    let (settings, problems) = ClientSettings::from_value(&options);
    #[allow(deprecated)] // `rootUri` is how clients without workspace folders name the project
    let folders: Vec<_> = match &params.workspace_folders {
        Some(folders) => folders.iter().filter_map(|f| path_of(&f.uri)).collect(),
        None => params.root_uri.as_ref().and_then(path_of).into_iter().collect(),
    };

    let capabilities = capabilities(&features);
    let mut session = context.session.lock();
    session.features = features;
    session.settings = settings.into();
    session.workspace_folders = folders;
    session.pending_warnings.extend(problems.into_iter().map(|p| p.0));
    session.lang = params.locale.as_deref().map_or(Lang::En, Lang::from_locale);
    session.reload_configuration();
    Ok(InitializeResult {
        capabilities,
        server_info: Some(ServerInfo {
            name: "culint".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
        offset_encoding: None,
    })
}

fn capabilities(features: &ClientFeatures) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(features.encoding.kind()),
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            ..TextDocumentSyncOptions::default()
        })),
        notebook_document_sync: Some(OneOf::Left(crate::lsp::notebook_documents::sync_options())),
        diagnostic_provider: features.pull_diagnostics.then(|| {
            DiagnosticServerCapabilities::Options(DiagnosticOptions {
                identifier: Some("culint".to_owned()),
                inter_file_dependencies: false,
                workspace_diagnostics: false,
                ..DiagnosticOptions::default()
            })
        }),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX, CodeActionKind::new(FIX_ALL_KIND)]),
            resolve_provider: Some(false),
            ..CodeActionOptions::default()
        })),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: commands::ALL.iter().map(|c| (*c).to_owned()).collect(),
            ..ExecuteCommandOptions::default()
        }),
        workspace: Some(WorkspaceServerCapabilities {
            workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..ServerCapabilities::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities};

    #[tokio::test]
    async fn picks_utf8_when_offered_and_utf16_otherwise() {
        let mut capabilities = basic_capabilities();
        capabilities["general"]["positionEncodings"] = json!(["utf-32", "utf-8", "utf-16"]);
        let (client, result) = TestClient::start(capabilities, json!({})).await;
        assert_eq!(result["capabilities"]["positionEncoding"], "utf-8");
        client.shutdown().await;

        let mut capabilities = basic_capabilities();
        capabilities.as_object_mut().unwrap().remove("general");
        let (client, result) = TestClient::start(capabilities, json!({})).await;
        assert_eq!(result["capabilities"]["positionEncoding"], "utf-16");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn announces_incremental_sync_actions_hover_and_commands() {
        let (client, result) = TestClient::start(basic_capabilities(), json!({})).await;
        let capabilities = &result["capabilities"];
        assert_eq!(capabilities["textDocumentSync"]["change"], 2);
        assert_eq!(capabilities["codeActionProvider"]["codeActionKinds"], json!(["quickfix", "source.fixAll.culint"]));
        assert_eq!(capabilities["hoverProvider"], true);
        assert!(
            capabilities["executeCommandProvider"]["commands"]
                .as_array()
                .unwrap()
                .contains(&json!("culint.applyAllFixes"))
        );
        assert!(capabilities.get("diagnosticProvider").is_none(), "a push client gets no pull capability");
        assert_eq!(result["serverInfo"]["name"], "culint");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_second_initialize_is_refused() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let error = client.request("initialize", json!({"capabilities": {}})).await.unwrap_err();
        assert_eq!(error["code"], -32600);
        client.shutdown().await;
    }
}
