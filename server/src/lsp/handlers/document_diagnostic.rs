//! `textDocument/diagnostic`: diagnostics for clients that pull them.

use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    DiagnosticServerCancellationData, DocumentDiagnosticParams, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, FullDocumentDiagnosticReport, RelatedFullDocumentDiagnosticReport,
    RelatedUnchangedDocumentDiagnosticReport, UnchangedDocumentDiagnosticReport,
};

use crate::lsp::context::ServerContext;
use crate::lsp::diagnostics::to_lsp;
use crate::lsp::position::PositionMapper;
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
    let mapper = PositionMapper::new(&snapshot.text, encoding);
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
