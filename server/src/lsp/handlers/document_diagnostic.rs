//! `textDocument/diagnostic`: diagnostics for clients that pull them.

use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    DiagnosticServerCancellationData, DocumentDiagnosticParams, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, FullDocumentDiagnosticReport, RelatedFullDocumentDiagnosticReport,
    RelatedUnchangedDocumentDiagnosticReport, UnchangedDocumentDiagnosticReport,
};

use crate::lsp::context::ServerContext;
use crate::lsp::diagnostics::to_lsp;
use crate::lsp::session::Snapshot;

/// LSP's `ServerCancelled`: the server gave up on a request; the client may ask again.
const SERVER_CANCELLED: i64 = -32802;

pub async fn document_diagnostic(
    context: &ServerContext,
    params: DocumentDiagnosticParams,
) -> Result<DocumentDiagnosticReportResult> {
    let uri = params.text_document.uri;
    let Some((snapshot, diagnostics)) = context.lint_current(&uri).await? else {
        return Err(changed_while_linting());
    };
    let result_id = result_id(&snapshot);
    if params.previous_result_id.as_deref() == Some(result_id.as_str()) {
        return Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Unchanged(
            RelatedUnchangedDocumentDiagnosticReport {
                related_documents: None,
                unchanged_document_diagnostic_report: UnchangedDocumentDiagnosticReport { result_id },
            },
        )));
    }
    let encoding = context.session.lock().features.encoding;
    let mapper = snapshot.positions(encoding);
    let items = diagnostics.iter().map(|d| to_lsp(d, &mapper, &uri, snapshot.version)).collect();
    Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(RelatedFullDocumentDiagnosticReport {
        related_documents: None,
        full_document_diagnostic_report: FullDocumentDiagnosticReport { result_id: Some(result_id), items },
    })))
}

/// Names exactly what the result was computed from: the text and the settings.
fn result_id(snapshot: &Snapshot) -> String {
    format!("{}.{}.{}", snapshot.version, snapshot.revision, snapshot.generation)
}

/// The document changed during the run: the result is stale and must not be shown, and the
/// client should ask again for the new version.
fn changed_while_linting() -> Error {
    Error {
        code: ErrorCode::ServerError(SERVER_CANCELLED),
        message: "the document changed while culint was linting it".into(),
        data: serde_json::to_value(DiagnosticServerCancellationData { retrigger_request: true }).ok(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::lsp::testing::{TestClient, basic_capabilities, position, uri};

    fn pull_capabilities() -> Value {
        let mut capabilities = basic_capabilities();
        capabilities["textDocument"]["diagnostic"] = json!({"dynamicRegistration": false});
        capabilities["workspace"]["diagnostics"] = json!({"refreshSupport": true});
        capabilities
    }

    #[tokio::test]
    async fn pulling_clients_get_reports_and_unchanged_results() {
        let (mut client, result) = TestClient::start(pull_capabilities(), json!({"showSyntaxErrors": true})).await;
        assert_eq!(result["capabilities"]["diagnosticProvider"]["identifier"], "culint");
        let file = uri("pull.py");
        client.open(&file, "def f(:\n    pass\n").await;
        let report = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": file}})).await.unwrap();
        assert_eq!(report["kind"], "full");
        assert!(!report["items"].as_array().unwrap().is_empty());
        let id = report["resultId"].clone();

        let again = client
            .request("textDocument/diagnostic", json!({"textDocument": {"uri": file}, "previousResultId": id}))
            .await
            .unwrap();
        assert_eq!(again["kind"], "unchanged");

        let fix = json!({
            "textDocument": {"uri": file, "version": 2},
            "contentChanges": [{"range": {"start": position(0, 6), "end": position(0, 6)}, "text": ")"}]
        });
        client.notify("textDocument/didChange", fix).await;
        let fixed = client
            .request("textDocument/diagnostic", json!({"textDocument": {"uri": file}, "previousResultId": id}))
            .await
            .unwrap();
        assert_eq!(fixed["kind"], "full");
        assert_eq!(fixed["items"], json!([]));
        assert!(client.received("textDocument/publishDiagnostics").is_empty(), "a pulling client gets no pushes");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn settings_changes_ask_pulling_clients_to_refresh() {
        let (mut client, _) = TestClient::start(pull_capabilities(), json!({})).await;
        client
            .notify("workspace/didChangeConfiguration", json!({"settings": {"culint": {"showSyntaxErrors": true}}}))
            .await;
        client.wait_for(|m| m["method"] == "workspace/diagnostic/refresh").await;
        client.shutdown().await;
    }

    #[tokio::test]
    async fn unknown_documents_are_an_error() {
        let (mut client, _) = TestClient::start(pull_capabilities(), json!({})).await;
        let error = client
            .request("textDocument/diagnostic", json!({"textDocument": {"uri": uri("missing.py")}}))
            .await
            .unwrap_err();
        assert_eq!(error["code"], -32602);
        assert!(error["message"].as_str().unwrap().contains("no open document"), "{error}");
        client.shutdown().await;
    }
}
