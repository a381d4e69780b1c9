//! `initialized`: register the file watchers for configuration files, and tell the user about
//! settings that were ignored.

use tower_lsp_server::ls_types::{
    DidChangeWatchedFilesRegistrationOptions, FileSystemWatcher, GlobPattern, InitializedParams, MessageType,
    Registration,
};

use crate::lsp::context::ServerContext;

/// The files whose changes re-lint every open document: configuration files, and Python files,
/// whose helpers the rules follow from a training loop in another file.
pub const WATCHED_GLOBS: &[&str] = &["**/pyproject.toml", "**/culint.toml", "**/*.py"];

pub async fn initialized(context: &ServerContext, _params: InitializedParams) {
    let (features, warnings, detect_hardware) = {
        let mut session = context.session.lock();
        (session.features.clone(), std::mem::take(&mut session.pending_warnings), session.settings.detect_hardware)
    };
    if detect_hardware {
        let context = context.clone();
        tokio::spawn(async move { detect_gpu(&context).await });
    }
    for warning in warnings {
        context.client.show_message(MessageType::WARNING, &warning).await;
        crate::lsp::log::write(&warning);
    }

    let mut registrations = Vec::new();
    if features.dynamic_file_watchers {
        let watchers = WATCHED_GLOBS
            .iter()
            .map(|glob| FileSystemWatcher { glob_pattern: GlobPattern::String((*glob).to_owned()), kind: None })
            .collect();
        registrations.push(Registration {
            id: "culint-watched-files".to_owned(),
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

/// Read the GPU's facts for the hardware-aware rules, without creating a CUDA context, and
/// re-lint with them. No GPU is not a problem worth more than a log line.
async fn detect_gpu(context: &ServerContext) {
    let progress = crate::lsp::commands::probe::begin_progress(context, "culint: detecting the GPU").await;
    let facts = context.blocking("GPU detection", || crate::probe::hardware_facts(None)).await;
    let summary = match facts {
        Ok(Ok(facts)) => {
            let summary = format!(
                "culint: {} GPU{} visible, {} GiB each, compute capability {}",
                facts.gpus.unwrap_or(0),
                if facts.gpus == Some(1) { "" } else { "s" },
                facts.memory_bytes.map_or("?".to_owned(), |b| format!("{:.1}", b as f64 / f64::from(1u32 << 30))),
                facts.compute_capability.map_or("?".to_owned(), |(major, minor)| format!("{major}.{minor}"))
            );
            context.session.lock().hardware = Some(facts);
            context.refresh_diagnostics().await;
            summary
        }
        Ok(Err(reason)) => format!("culint: no GPU facts for the hardware-aware rules: {reason}"),
        Err(_) => "culint: GPU detection failed".to_owned(),
    };
    if let Some(progress) = progress {
        progress.finish_with_message(summary.clone()).await;
    }
    context.log(MessageType::INFO, summary).await;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities};

    #[tokio::test]
    async fn registers_watchers_for_configuration_files() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let registration = client.wait_for(|m| m["method"] == "client/registerCapability").await;
        let registered = &registration["params"]["registrations"][0];
        assert_eq!(registered["method"], "workspace/didChangeWatchedFiles");
        let globs: Vec<&str> = registered["registerOptions"]["watchers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["globPattern"].as_str().unwrap())
            .collect();
        assert_eq!(globs, ["**/pyproject.toml", "**/culint.toml", "**/*.py"]);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn invalid_settings_are_reported_to_the_user() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"unsafeFixes": "yes"})).await;
        let message = client.wait_for(|m| m["method"] == "window/showMessage").await;
        assert_eq!(message["params"]["type"], 2);
        assert!(
            message["params"]["message"].as_str().unwrap().contains("culint setting `unsafeFixes` was ignored"),
            "{message}"
        );
        client.shutdown().await;
    }
}
