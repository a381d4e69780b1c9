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
