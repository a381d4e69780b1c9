//! `culint.probe`: probe the GPU (free memory, cuBLAS health, driver and runtime) with the same
//! engine as `culint probe`, and feed its hardware facts to the hardware-aware rules.
//!
//! Arguments: none, or `{"quick": false, "device": 1, "cached": true}`. The default is a quick
//! probe (no largest-allocation search, so the editor never grabs most of a GPU someone may be
//! training on); `cached` returns this session's last report without probing again. Returns the
//! report as JSON (its `devices` carry `name`, `free_bytes` and `total_bytes`) plus `markdown`.
//! With no driver or no GPU the request fails with the one-line reason, the report in `data`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{NumberOrString, ProgressToken};

use crate::lsp::context::ServerContext;
use crate::probe::{ProbeOptions, ProbeReport, run as run_probe};

pub const NAME: &str = "culint.probe";

/// LSP's `RequestFailed`: the request was valid but could not be carried out.
const REQUEST_FAILED: i64 = -32803;

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ProbeArguments {
    quick: Option<bool>,
    device: Option<usize>,
    cached: bool,
}

pub async fn run(context: &ServerContext, arguments: &[Value]) -> Result<Option<Value>> {
    let arguments = match arguments.first() {
        None | Some(Value::Null) => ProbeArguments::default(),
        Some(value) => ProbeArguments::deserialize(value).map_err(|e| {
            Error::invalid_params(format!(
                "{NAME}: {e}; its argument is optional: {{\"quick\": true, \"device\": 0, \"cached\": false}}"
            ))
        })?,
    };
    let cached = context.session.lock().probe.clone().filter(|_| arguments.cached);
    let report = match cached {
        Some(report) => report,
        None => probe_with_progress(context, arguments).await?,
    };
    response(&report)
}

async fn probe_with_progress(context: &ServerContext, arguments: ProbeArguments) -> Result<Arc<ProbeReport>> {
    let options = ProbeOptions { device: arguments.device, quick: arguments.quick.unwrap_or(true), python: None };
    let progress = begin_progress(context, "culint: probing the GPU").await;
    let report = Arc::new(context.blocking("probe", move || run_probe(&options)).await?);
    if let Some(progress) = progress {
        progress.finish_with_message(report.headline()).await;
    }
    let hardware = report.hardware_facts();
    let changed = {
        let mut session = context.session.lock();
        session.probe = Some(report.clone());
        let changed = hardware.is_some() && session.hardware != hardware;
        if changed {
            session.hardware = hardware;
        }
        changed
    };
    if changed {
        context.refresh_diagnostics().await;
    }
    Ok(report)
}

/// Start a `$/progress` bar when the client shows them.
pub async fn begin_progress(
    context: &ServerContext,
    title: &str,
) -> Option<tower_lsp_server::OngoingProgress<tower_lsp_server::Unbounded, tower_lsp_server::NotCancellable>> {
    if !context.session.lock().features.work_done_progress {
        return None;
    }
    let token = ProgressToken::from(NumberOrString::String(format!("culint/{}", context.client.next_request_id())));
    context.client.create_work_done_progress(token.clone()).await.ok()?;
    Some(context.client.progress(token, title.to_owned()).begin().await)
}

fn response(report: &ProbeReport) -> Result<Option<Value>> {
    let mut json = serde_json::to_value(report).map_err(|_| Error::internal_error())?;
    json["markdown"] = Value::String(report.to_markdown());
    if report.unavailable.is_some() {
        return Err(Error {
            code: ErrorCode::ServerError(REQUEST_FAILED),
            message: report.headline().into(),
            data: Some(json),
        });
    }
    Ok(Some(json))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities};

    /// Runs where the test runs: on a machine with no NVIDIA driver the probe must fail with
    /// its reason; with a GPU it must report free memory per device.
    #[tokio::test]
    async fn probe_reports_free_memory_or_why_there_is_none() {
        let mut capabilities = basic_capabilities();
        capabilities["window"] = json!({"workDoneProgress": true});
        let (mut client, _) = TestClient::start(capabilities, json!({"detectHardware": false})).await;
        let result = client.request("workspace/executeCommand", json!({"command": "culint.probe"})).await;
        match result {
            Ok(report) => {
                assert!(report["markdown"].as_str().unwrap().contains("culint probe"), "{report}");
                let devices = report["devices"].as_array().unwrap();
                assert!(!devices.is_empty(), "{report}");
                assert!(devices.iter().all(|d| d["free_bytes"].is_u64() && d["total_bytes"].is_u64()), "{report}");
            }
            Err(error) => {
                assert_eq!(error["code"], -32803, "{error}");
                assert!(!error["message"].as_str().unwrap().is_empty());
                assert!(error["data"]["unavailable"].is_string(), "{error}");
            }
        }
        let create = client.wait_for(|m| m["method"] == "window/workDoneProgress/create").await;
        let token = create["params"]["token"].clone();
        let end = client.wait_for(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end").await;
        assert_eq!(end["params"]["token"], token);

        let bad = client
            .request("workspace/executeCommand", json!({"command": "culint.probe", "arguments": [{"quik": true}]}))
            .await
            .unwrap_err();
        assert_eq!(bad["code"], -32602);
        client.shutdown().await;
    }
}
