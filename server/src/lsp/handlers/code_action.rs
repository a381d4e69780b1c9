//! `textDocument/codeAction`: a quick fix per fixable diagnostic, "Disable CULxxx for this line",
//! and `source.fixAll.culint`.
//!
//! The fix travels in each diagnostic's `data`, with the document version its offsets refer to,
//! so no fix cache can go stale. When the version no longer matches (or a client dropped
//! `data`), the fix is taken from a fresh lint of the current text instead.

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{
    self as lsp, CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, CodeActionResponse, NumberOrString,
};

use crate::diagnostic::Diagnostic;
use crate::fix::{Applicability, Fix};
use crate::lsp::context::ServerContext;
use crate::lsp::diagnostics::{SOURCE, data_of};
use crate::lsp::edits::{fix_all, text_edits, workspace_edit};
use crate::lsp::handlers::initialize::FIX_ALL_KIND;
use crate::lsp::ignore_comment::disable_for_line;
use crate::lsp::position::PositionMapper;
use crate::lsp::session::Snapshot;

pub async fn code_action(context: &ServerContext, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri;
    let only = params.context.only.as_deref();
    let ours: Vec<lsp::Diagnostic> =
        params.context.diagnostics.into_iter().filter(|d| d.source.as_deref() == Some(SOURCE)).collect();
    let want_quick_fixes = requested(only, &CodeActionKind::QUICKFIX) && !ours.is_empty();
    let fix_all_kind = CodeActionKind::new(FIX_ALL_KIND);
    let want_fix_all = match only {
        Some(_) => requested(only, &fix_all_kind),
        // In the light-bulb menu, offer fix-all only next to something fixable.
        None => ours.iter().any(|d| data_of(d).is_some_and(|data| data.fix.is_some())),
    };
    if !want_quick_fixes && !want_fix_all {
        return Ok(None);
    }

    let (snapshot, encoding, versioned) = {
        let session = context.session.lock();
        let snapshot = session.snapshot(&uri).ok_or_else(|| crate::lsp::context::unknown_document(&uri))?;
        (snapshot, session.features.encoding, session.features.versioned_edits)
    };
    PositionMapper::new(&snapshot.text, encoding)
        .text_range(params.range)
        .map_err(|e| Error::invalid_params(format!("culint: code action range: {e}")))?;

    let mut actions = Vec::new();
    if want_quick_fixes {
        let needs_fresh_lint = ours.iter().any(|d| data_of(d).is_none_or(|data| data.version != snapshot.version));
        let fresh = if needs_fresh_lint {
            context.lint_current(&uri).await?.filter(|(s, _)| s.revision == snapshot.revision).map(|(_, d)| d)
        } else {
            None
        };
        let input = snapshot.clone();
        let built = context
            .blocking("code action", move || quick_fixes(&input, &ours, fresh.as_deref(), encoding, versioned))
            .await?;
        actions.extend(built);
    }
    if want_fix_all {
        let input = snapshot.clone();
        let outcome = context.blocking("fix all", move || fix_all(&input)).await?;
        if !outcome.edits.is_empty() {
            let mapper = PositionMapper::new(&snapshot.text, encoding);
            let edit = workspace_edit(&uri, versioned.then_some(snapshot.version), text_edits(&outcome.edits, &mapper));
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: "culint: Fix all auto-fixable problems".to_owned(),
                kind: Some(fix_all_kind),
                edit: Some(edit),
                ..CodeAction::default()
            }));
        }
    }
    Ok(Some(actions))
}

/// Whether `kind` was asked for: `only` absent asks for everything, and a kind covers its
/// sub-kinds (`source` covers `source.fixAll.culint`).
fn requested(only: Option<&[CodeActionKind]>, kind: &CodeActionKind) -> bool {
    let Some(only) = only else { return true };
    only.iter().any(|o| kind.as_str() == o.as_str() || kind.as_str().starts_with(&format!("{}.", o.as_str())))
}

fn quick_fixes(
    snapshot: &Snapshot,
    diagnostics: &[lsp::Diagnostic],
    fresh: Option<&Vec<Diagnostic>>,
    encoding: crate::lsp::position::PositionEncoding,
    versioned: bool,
) -> Vec<CodeActionOrCommand> {
    let mapper = PositionMapper::new(&snapshot.text, encoding);
    let version = versioned.then_some(snapshot.version);
    let mut fixes = Vec::new();
    let mut disables: Vec<CodeActionOrCommand> = Vec::new();
    let mut disabled: Vec<(String, u32)> = Vec::new();
    for diagnostic in diagnostics {
        let Some(NumberOrString::String(code)) = &diagnostic.code else { continue };
        let Some(fix) = fix_for(diagnostic, code, snapshot.version, &mapper, fresh) else {
            push_disable(snapshot, diagnostic, code, &mapper, version, &mut disables, &mut disabled);
            continue;
        };
        if fix.applicability != Applicability::DisplayOnly {
            let suffix = if fix.applicability == Applicability::Unsafe { " (unsafe)" } else { "" };
            fixes.push(CodeAction {
                title: format!("{}{suffix}", fix.title),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                edit: Some(workspace_edit(&snapshot.uri, version, text_edits(&fix.edits, &mapper))),
                // The only fix of its diagnostic; an unsafe one must never be applied by a
                // single "auto fix" keystroke.
                is_preferred: Some(fix.applicability == Applicability::Safe),
                ..CodeAction::default()
            });
        }
        push_disable(snapshot, diagnostic, code, &mapper, version, &mut disables, &mut disabled);
    }
    fixes.into_iter().map(CodeActionOrCommand::CodeAction).chain(disables).collect()
}

/// The diagnostic's fix: from its `data` when that describes the current version, else from
/// the fresh lint result with the same code and range.
fn fix_for(
    diagnostic: &lsp::Diagnostic,
    code: &str,
    version: i32,
    mapper: &PositionMapper<'_>,
    fresh: Option<&Vec<Diagnostic>>,
) -> Option<Fix> {
    if let Some(data) = data_of(diagnostic)
        && data.version == version
    {
        return data.fix;
    }
    fresh?.iter().find(|d| d.code == code && mapper.range(d.range) == diagnostic.range).and_then(|d| d.fix.clone())
}

fn push_disable(
    snapshot: &Snapshot,
    diagnostic: &lsp::Diagnostic,
    code: &str,
    mapper: &PositionMapper<'_>,
    version: Option<i32>,
    actions: &mut Vec<CodeActionOrCommand>,
    done: &mut Vec<(String, u32)>,
) {
    let key = (code.to_owned(), diagnostic.range.start.line);
    if done.contains(&key) || crate::rules::by_code(code).is_none() {
        return;
    }
    let Ok(offset) = mapper.offset(diagnostic.range.start) else { return };
    let Some(edit) = disable_for_line(&snapshot.text, &snapshot.tree, offset, code) else { return };
    done.push(key);
    actions.push(CodeActionOrCommand::CodeAction(CodeAction {
        title: format!("Disable {code} for this line"),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        edit: Some(workspace_edit(&snapshot.uri, version, text_edits(&[edit], mapper))),
        is_preferred: Some(false),
        ..CodeAction::default()
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_cover_their_sub_kinds() {
        let fix_all = CodeActionKind::new(FIX_ALL_KIND);
        assert!(requested(None, &fix_all));
        assert!(requested(Some(&[CodeActionKind::SOURCE]), &fix_all));
        assert!(requested(Some(&[CodeActionKind::SOURCE_FIX_ALL]), &fix_all));
        assert!(!requested(Some(&[CodeActionKind::QUICKFIX]), &fix_all));
        assert!(!requested(Some(&[CodeActionKind::new("source.fix")]), &fix_all));
        assert!(requested(Some(&[CodeActionKind::QUICKFIX]), &CodeActionKind::QUICKFIX));
        assert!(!requested(Some(&[CodeActionKind::SOURCE]), &CodeActionKind::QUICKFIX));
    }
}

#[cfg(test)]
mod protocol_tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, position, uri};

    #[tokio::test]
    async fn nothing_to_fix_means_no_actions_and_bad_ranges_are_errors() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let file = uri("clean.py");
        client.open(&file, "import torch\n").await;
        let request = |only: serde_json::Value, end_line| {
            json!({
                "textDocument": {"uri": file},
                "range": {"start": position(0, 0), "end": position(end_line, 0)},
                "context": {"diagnostics": [], "only": only}
            })
        };
        let fix_all = client.request("textDocument/codeAction", request(json!(["source.fixAll"]), 0)).await.unwrap();
        assert_eq!(fix_all, json!([]), "fix-all offers nothing when nothing changes");
        let quick = client.request("textDocument/codeAction", request(json!(["quickfix"]), 0)).await.unwrap();
        assert_eq!(quick, json!(null));
        let error = client.request("textDocument/codeAction", request(json!(["source.fixAll"]), 40)).await.unwrap_err();
        assert_eq!(error["code"], -32602);
        client.shutdown().await;
    }
}
