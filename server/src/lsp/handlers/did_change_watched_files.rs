//! `workspace/didChangeWatchedFiles`: a pyproject.toml or culint.toml changed (reload the
//! configuration), or a Python file whose helpers other files call (forget its summaries); every
//! open document may lint differently.

use std::path::PathBuf;

use tower_lsp_server::ls_types::{DidChangeWatchedFilesParams, MessageType};

use crate::lsp::context::ServerContext;
use crate::lsp::session::path_of;

pub async fn did_change_watched_files(context: &ServerContext, params: DidChangeWatchedFilesParams) {
    let is_config = |uri: &str| uri.ends_with("/pyproject.toml") || uri.ends_with("/culint.toml");
    let configs: Vec<&str> = params.changes.iter().map(|c| c.uri.as_str()).filter(|uri| is_config(uri)).collect();
    let modules: Vec<PathBuf> = params
        .changes
        .iter()
        .filter(|change| change.uri.as_str().ends_with(".py"))
        .filter_map(|change| path_of(&change.uri))
        .collect();
    if !modules.is_empty() {
        let session = context.session.lock();
        for module in &modules {
            session.project.invalidate(module);
        }
    }
    if !configs.is_empty() {
        context
            .log(MessageType::INFO, format!("culint: configuration changed ({}); re-linting", configs.join(", ")))
            .await;
        context.refresh_diagnostics().await;
    } else if !modules.is_empty() {
        context.relint_open_documents().await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TRAINING_SCRIPT, TestClient, basic_capabilities, uri};

    fn codes(diagnostics: &[serde_json::Value]) -> Vec<&str> {
        diagnostics.iter().map(|d| d["code"].as_str().unwrap()).collect()
    }

    /// The editor judges what a file is as `culint check` does: a test file's step loop gets no
    /// resource finding, unless the configuration's `code-kind` says the file is something else.
    #[tokio::test]
    async fn the_editor_honours_the_configured_code_kind() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("tests")).unwrap();
        let script = project.path().join("tests").join("test_train.py");
        let file = tower_lsp_server::ls_types::Uri::from_file_path(&script).unwrap().as_str().to_owned();
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        client.open(&file, TRAINING_SCRIPT).await;
        assert!(codes(&client.diagnostics(&file, 1).await).is_empty(), "a test file is held only to what tests cause");

        let config = project.path().join("culint.toml");
        std::fs::write(&config, "[code-kind]\n\"tests/**\" = \"entry-point\"\n").unwrap();
        let config_uri = tower_lsp_server::ls_types::Uri::from_file_path(&config).unwrap();
        client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": config_uri, "type": 1}]})).await;
        assert!(codes(&client.diagnostics(&file, 1).await).contains(&"CUL201"));
        client.shutdown().await;
    }

    #[tokio::test]
    async fn the_project_configuration_applies_and_reloads_when_it_changes() {
        let project = tempfile::tempdir().unwrap();
        let config = project.path().join("culint.toml");
        std::fs::write(&config, "select = [\"CUL2\"]\nignore = [\"CUL202\"]\n").unwrap();
        std::fs::create_dir(project.path().join("src")).unwrap();
        let script = project.path().join("src").join("train.py");
        let file = tower_lsp_server::ls_types::Uri::from_file_path(&script).unwrap().as_str().to_owned();

        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        client.open(&file, TRAINING_SCRIPT).await;
        assert_eq!(codes(&client.diagnostics(&file, 1).await), ["CUL201"]);

        std::fs::write(&config, "select = [\"CUL2\"]\n").unwrap();
        let config_uri = tower_lsp_server::ls_types::Uri::from_file_path(&config).unwrap();
        client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": config_uri, "type": 2}]})).await;
        assert_eq!(codes(&client.diagnostics(&file, 1).await), ["CUL202", "CUL201"]);

        std::fs::write(&config, "select = [\"CUL2\"\n").unwrap();
        client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": config_uri, "type": 2}]})).await;
        let problem = client.wait_for(|m| m["method"] == "window/showMessage").await;
        let message = problem["params"]["message"].as_str().unwrap();
        assert!(message.contains("culint.toml") && message.contains("invalid TOML"), "{message}");
        // A lint that shows a problem first still publishes, after it.
        assert!(!client.diagnostics(&file, 1).await.is_empty(), "the file was linted again after the problem");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_changed_config_file_relints_open_documents() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"showSyntaxErrors": true})).await;
        let file = uri("watched.py");
        client.open(&file, "x = (\n").await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1);
        let changes = json!({"changes": [{"uri": uri("culint.toml"), "type": 2}]});
        client.notify("workspace/didChangeWatchedFiles", changes).await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1, "published again after the change");
        let log = client
            .wait_for(|m| {
                m["method"] == "window/logMessage"
                    && m["params"]["message"].as_str().is_some_and(|text| text.contains("configuration changed"))
            })
            .await;
        assert!(log["params"]["message"].as_str().unwrap().contains("culint.toml"), "{log}");
        client.shutdown().await;
    }
}

#[cfg(test)]
mod cross_file_tests {
    use serde_json::json;
    use tower_lsp_server::ls_types::Uri;

    use crate::lsp::testing::{TestClient, basic_capabilities};

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/project/ddp_helper");

    #[tokio::test]
    async fn a_changed_helper_module_relints_the_files_that_call_it() {
        let project = tempfile::tempdir().unwrap();
        for name in ["pyproject.toml", "train.py", "utils.py"] {
            std::fs::copy(format!("{FIXTURE}/{name}"), project.path().join(name)).unwrap();
        }
        let train = Uri::from_file_path(project.path().join("train.py")).unwrap();
        let utils = Uri::from_file_path(project.path().join("utils.py")).unwrap();
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"select": ["CUL101"]})).await;
        client.open(train.as_str(), &std::fs::read_to_string(project.path().join("train.py")).unwrap()).await;
        assert!(client.diagnostics(train.as_str(), 1).await.is_empty(), "utils.init_distributed_mode sets the device");

        let helper = std::fs::read_to_string(project.path().join("utils.py")).unwrap();
        std::fs::write(project.path().join("utils.py"), helper.replace("    torch.cuda.set_device(args.gpu)\n", ""))
            .unwrap();
        client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": utils, "type": 2}]})).await;
        let diagnostics = client.diagnostics(train.as_str(), 1).await;
        let codes: Vec<&str> = diagnostics.iter().map(|d| d["code"].as_str().unwrap()).collect();
        assert_eq!(codes, ["CUL101"]);
        client.shutdown().await;
    }
}
