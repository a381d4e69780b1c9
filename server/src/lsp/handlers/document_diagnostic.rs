//! `textDocument/diagnostic`: diagnostics for clients that pull them.

use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    DiagnosticServerCancellationData, DocumentDiagnosticParams, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, FullDocumentDiagnosticReport, RelatedFullDocumentDiagnosticReport,
    RelatedUnchangedDocumentDiagnosticReport, UnchangedDocumentDiagnosticReport,
};

use crate::lsp::context::ServerContext;
use crate::lsp::diagnostics::{LspDiagnostic, full_report_frame, shown_digest};
use crate::lsp::direct_answers;

/// LSP's `ServerCancelled`: the server gave up on a request; the client may ask again.
const SERVER_CANCELLED: i64 = -32802;

pub async fn document_diagnostic(
    context: &ServerContext,
    params: DocumentDiagnosticParams,
) -> Result<DocumentDiagnosticReportResult> {
    let uri = params.text_document.uri;
    if context.session.lock().notebooks.owns_cell(&uri) {
        // A notebook's diagnostics are pushed, cell by cell (see `notebooks`).
        return Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
            RelatedFullDocumentDiagnosticReport::default(),
        )));
    }
    let Some((snapshot, diagnostics)) = context.lint_current(&uri).await? else {
        return Err(changed_while_linting());
    };
    let encoding = context.session.lock().features.encoding;
    let mapper = snapshot.positions(encoding);
    let shown: Vec<LspDiagnostic<'_>> =
        diagnostics.iter().map(|d| LspDiagnostic::of(d, &mapper, &uri, snapshot.version)).collect();
    let result_id = result_id(&shown);
    if params.previous_result_id.as_deref() == Some(result_id.as_str()) {
        return Ok(unchanged(result_id));
    }
    if let Some(id) = direct_answers::request_id() {
        context.answer_directly(full_report_frame(&id, &result_id, &shown)).await;
        // Dropped by the service (see `direct_answers`): the report is on its way.
        return Ok(unchanged(result_id));
    }
    let items = shown.into_iter().map(LspDiagnostic::into_lsp).collect();
    Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(RelatedFullDocumentDiagnosticReport {
        related_documents: None,
        full_document_diagnostic_report: FullDocumentDiagnosticReport { result_id: Some(result_id), items },
    })))
}

fn unchanged(result_id: String) -> DocumentDiagnosticReportResult {
    DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Unchanged(
        RelatedUnchangedDocumentDiagnosticReport {
            related_documents: None,
            unchanged_document_diagnostic_report: UnchangedDocumentDiagnosticReport { result_id },
        },
    ))
}

/// Names what the client shows of a report, not the version of the text it came from: a
/// keystroke that leaves every diagnostic where it was (most keystrokes away from them) is then
/// answered "unchanged", and the editor has no report of a large file to decode and draw again.
fn result_id(shown: &[LspDiagnostic<'_>]) -> String {
    format!("{:016x}", shown_digest(shown))
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

    use crate::lsp::position::PositionEncoding;
    use crate::lsp::testing::{
        TRAINING_SCRIPT, TestClient, apply_text_edits, basic_capabilities, edits_of, position, uri,
    };

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

    /// A keystroke that moves no diagnostic is answered "unchanged", though the text's version
    /// and the fixes' byte offsets changed; a quick fix asked for with the report the client
    /// kept (its `data` from the older version) is built for the current text.
    #[tokio::test]
    async fn edits_that_move_no_diagnostic_are_answered_unchanged() {
        let (mut client, _) = TestClient::start(pull_capabilities(), json!({"select": ["CUL2"]})).await;
        let file = uri("typing.py");
        client.open(&file, TRAINING_SCRIPT).await;
        let pull = |previous: &Value| json!({"textDocument": {"uri": file}, "previousResultId": previous});
        let first = client.request("textDocument/diagnostic", pull(&Value::Null)).await.unwrap();
        assert_eq!(first["kind"], "full");
        assert_eq!(first["items"].as_array().unwrap().len(), 2, "{first}");

        // Type at the end of the first line: every byte offset after it moves, no line or column
        // of a diagnostic does.
        let mut version = 1;
        let mut text = TRAINING_SCRIPT.to_owned();
        for (column, typed) in [(12, " "), (13, "#"), (14, " "), (15, "x")] {
            version += 1;
            let change = json!({
                "textDocument": {"uri": file, "version": version},
                "contentChanges": [{"range": {"start": position(0, column), "end": position(0, column)}, "text": typed}]
            });
            client.notify("textDocument/didChange", change).await;
            text.insert_str(column as usize, typed);
            let report = client.request("textDocument/diagnostic", pull(&first["resultId"])).await.unwrap();
            assert_eq!(report["kind"], "unchanged", "after typing {typed:?}: {report}");
            assert_eq!(report["resultId"], first["resultId"]);
        }

        let kept = first["items"].as_array().unwrap();
        let cul202 = kept.iter().find(|d| d["code"] == "CUL202").unwrap();
        let request = json!({
            "textDocument": {"uri": file},
            "range": cul202["range"],
            "context": {"diagnostics": [cul202], "only": ["quickfix"]}
        });
        let actions = client.request("textDocument/codeAction", request).await.unwrap();
        assert_eq!(actions[0]["title"], "Move `empty_cache()` after the memory is released");
        assert_eq!(actions[0]["edit"]["documentChanges"][0]["textDocument"]["version"], version);
        let fixed = apply_text_edits(&text, &edits_of(&actions[0]["edit"]), PositionEncoding::Utf16);
        assert!(fixed.starts_with("import torch # x\n"), "{fixed}");
        assert!(fixed.contains("    del model\n    torch.cuda.empty_cache()\n"), "{fixed}");

        // A new line on top moves both diagnostics: a full report, under another id.
        version += 1;
        let change = json!({
            "textDocument": {"uri": file, "version": version},
            "contentChanges": [{"range": {"start": position(0, 0), "end": position(0, 0)}, "text": "import gc\n"}]
        });
        client.notify("textDocument/didChange", change).await;
        let moved = client.request("textDocument/diagnostic", pull(&first["resultId"])).await.unwrap();
        assert_eq!(moved["kind"], "full");
        assert_ne!(moved["resultId"], first["resultId"]);
        let lines: Vec<&Value> =
            moved["items"].as_array().unwrap().iter().map(|d| &d["range"]["start"]["line"]).collect();
        assert_eq!(lines, [5, 11]);
        client.shutdown().await;
    }

    /// Called outside the service that lets it answer directly (see `direct_answers`), the
    /// handler returns its full report as the protocol's type, the same report.
    #[tokio::test]
    async fn the_report_is_returned_where_it_cannot_be_sent_directly() {
        let (mut client, _, context) =
            TestClient::start_with_context(pull_capabilities(), json!({"select": ["CUL2"]})).await;
        let file = uri("returned.py");
        client.open(&file, TRAINING_SCRIPT).await;
        let sent = client.request("textDocument/diagnostic", json!({"textDocument": {"uri": file}})).await.unwrap();
        let params = serde_json::from_value(json!({"textDocument": {"uri": file}})).unwrap();
        let returned = super::document_diagnostic(&context, params).await.unwrap();
        assert_eq!(serde_json::to_value(returned).unwrap(), sent);
        assert_eq!(sent["kind"], "full");
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
