//! `workspace/didChangeConfiguration`: take the new settings and re-lint.

use serde_json::Value;
use tower_lsp_server::ls_types::{ConfigurationItem, DidChangeConfigurationParams, MessageType};

use crate::lsp::context::ServerContext;
use crate::lsp::settings::{ClientSettings, SECTION};

pub async fn did_change_configuration(context: &ServerContext, params: DidChangeConfigurationParams) {
    let value = match params.settings {
        // Clients of the pull model send no settings and expect the server to ask for them.
        Value::Null => pull_settings(context).await,
        value => value,
    };
    let (settings, problems) = ClientSettings::from_value(&value);
    for problem in problems {
        context.client.show_message(MessageType::WARNING, &problem.0).await;
        crate::lsp::log::write(&problem.0);
    }
    context.session.lock().settings = settings.into();
    context.refresh_diagnostics().await;
}

async fn pull_settings(context: &ServerContext) -> Value {
    let item = ConfigurationItem { scope_uri: None, section: Some(SECTION.to_owned()) };
    match context.client.configuration(vec![item]).await {
        Ok(mut values) if !values.is_empty() => values.swap_remove(0),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, uri};

    #[tokio::test]
    async fn new_settings_republish_open_documents() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"showSyntaxErrors": true})).await;
        let file = uri("config.py");
        client.open(&file, "x = (\n").await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1);
        client
            .notify("workspace/didChangeConfiguration", json!({"settings": {"culint": {"showSyntaxErrors": false}}}))
            .await;
        assert_eq!(client.diagnostics(&file, 1).await, Vec::<serde_json::Value>::new());
        client.shutdown().await;
    }

    /// Preview findings show once the editor's `preview` setting is on, marked, with what they
    /// rest on and what they assume in the message editors show.
    #[tokio::test]
    async fn the_preview_setting_shows_preview_findings_with_their_facts() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let file = uri("helper_loop.py");
        let text = "import torch\n\nfrom engine import log_step\n\nmodel = torch.nn.Linear(4, 4).cuda()\nfor x in range(10):\n    log_step(x)\n    loss = model(torch.randn(2, 4).cuda()).sum()\n    loss.backward()\n";
        client.open(&file, text).await;
        assert_eq!(client.diagnostics(&file, 1).await, Vec::<serde_json::Value>::new());
        client.notify("workspace/didChangeConfiguration", json!({"settings": {"culint": {"preview": true}}})).await;
        let diagnostics = client.diagnostics(&file, 1).await;
        assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
        let message = diagnostics[0]["message"].as_str().unwrap();
        assert!(message.starts_with("This step loop runs its forward pass in fp32 on CUDA"), "{message}");
        assert!(message.contains("autocast (preview)\nrests on: device: CUDA, from `model = "), "{message}");
        assert!(message.contains("\nassumes: `log_step(x)` (line 7) is not followed"), "{message}");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn null_settings_are_pulled_from_the_client() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        client.configuration = json!({"showSyntaxErrors": true});
        let file = uri("pulled.py");
        client.open(&file, "x = (\n").await;
        assert!(client.diagnostics(&file, 1).await.is_empty());
        client.notify("workspace/didChangeConfiguration", json!({"settings": null})).await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1);
        client.shutdown().await;
    }
}
