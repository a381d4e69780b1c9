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
use crate::lsp::capabilities::{FIX_ALL_KIND, requested};
use crate::lsp::context::ServerContext;
use crate::lsp::diagnostics::{SOURCE, data_of};
use crate::lsp::edits::{fix_all, text_edits, workspace_edit};
use crate::lsp::ignore_comment::disable_for_line;
use crate::lsp::position::PositionMapper;
use crate::lsp::session::Snapshot;

pub async fn code_action(context: &ServerContext, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
    if let Some(actions) = crate::lsp::notebooks::code_actions(context, &params).await {
        return actions.map(Some);
    }
    let uri = params.text_document.uri;
    let only = params.context.only.as_deref();
    let ours: Vec<lsp::Diagnostic> =
        params.context.diagnostics.into_iter().filter(|d| d.source.as_deref() == Some(SOURCE)).collect();
    let want_quick_fixes = requested(only, &CodeActionKind::QUICKFIX) && !ours.is_empty();
    let fix_all_kind = CodeActionKind::new(FIX_ALL_KIND);
    // In the light-bulb menu (no `only`), fix-all is offered next to something fixable, which is
    // known once the diagnostics' fixes are.
    let may_fix_all = match only {
        Some(_) => requested(only, &fix_all_kind),
        None => !ours.is_empty(),
    };
    if !want_quick_fixes && !may_fix_all {
        return Ok(None);
    }

    let (snapshot, encoding, versioned) = {
        let session = context.session.lock();
        let snapshot = session.snapshot(&uri).ok_or_else(|| crate::lsp::context::unknown_document(&uri))?;
        (snapshot, session.features.encoding, session.features.versioned_edits)
    };
    snapshot
        .positions(encoding)
        .text_range(params.range)
        .map_err(|e| Error::invalid_params(format!("culint: code action range: {e}")))?;

    // The fixes a diagnostic's `data` holds describe the version they were found in; for any
    // other (the client kept a report the server called unchanged, or dropped `data`), the
    // fixes come from a lint of the current text.
    let needs_fresh_lint =
        want_quick_fixes && ours.iter().any(|d| data_of(d).is_none_or(|data| data.version != snapshot.version));
    let fresh = if needs_fresh_lint {
        context.lint_current(&uri).await?.filter(|(s, _)| s.revision == snapshot.revision).map(|(_, d)| d)
    } else {
        None
    };
    let want_fix_all = may_fix_all
        && (only.is_some() || {
            let mapper = snapshot.positions(encoding);
            ours.iter().any(|d| current_fix(d, snapshot.version, &mapper, fresh.as_deref()).is_some())
        });

    let mut actions = Vec::new();
    if want_quick_fixes {
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
            let mapper = snapshot.positions(encoding);
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

fn quick_fixes(
    snapshot: &Snapshot,
    diagnostics: &[lsp::Diagnostic],
    fresh: Option<&Vec<Diagnostic>>,
    encoding: crate::lsp::position::PositionEncoding,
    versioned: bool,
) -> Vec<CodeActionOrCommand> {
    let mapper = snapshot.positions(encoding);
    let version = versioned.then_some(snapshot.version);
    let mut fixes = Vec::new();
    let mut disables: Vec<CodeActionOrCommand> = Vec::new();
    let mut disabled: Vec<(String, u32)> = Vec::new();
    for diagnostic in diagnostics {
        let Some(NumberOrString::String(code)) = &diagnostic.code else { continue };
        let Some(fix) = current_fix(diagnostic, snapshot.version, &mapper, fresh) else {
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

/// The diagnostic's fix in the document's current `version`: from its `data` when that
/// describes this version, else from the fresh lint result with the same code and range.
fn current_fix(
    diagnostic: &lsp::Diagnostic,
    version: i32,
    mapper: &PositionMapper<'_>,
    fresh: Option<&Vec<Diagnostic>>,
) -> Option<Fix> {
    if let Some(data) = data_of(diagnostic)
        && data.version == version
    {
        return data.fix;
    }
    let Some(NumberOrString::String(code)) = &diagnostic.code else { return None };
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
    let Some(edit) = disable_for_line(&snapshot.text, &snapshot.tree(), offset, code) else { return };
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
    use serde_json::{Value, json};

    use crate::lsp::position::PositionEncoding;
    use crate::lsp::testing::{
        TRAINING_SCRIPT, TestClient, apply_text_edits, basic_capabilities, edits_of, position, uri,
    };

    fn actions_request(file: &str, diagnostics: &[serde_json::Value], only: serde_json::Value) -> serde_json::Value {
        let range =
            diagnostics.first().map_or(json!({"start": position(0, 0), "end": position(0, 0)}), |d| d["range"].clone());
        json!({"textDocument": {"uri": file}, "range": range, "context": {"diagnostics": diagnostics, "only": only}})
    }

    fn by_code<'a>(diagnostics: &'a [serde_json::Value], code: &str) -> &'a serde_json::Value {
        diagnostics.iter().find(|d| d["code"] == code).unwrap_or_else(|| panic!("no {code} in {diagnostics:#?}"))
    }

    #[tokio::test]
    async fn quick_fixes_come_from_diagnostic_data() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"select": ["CUL2"]})).await;
        let file = uri("train.py");
        client.open(&file, TRAINING_SCRIPT).await;
        let diagnostics = client.diagnostics(&file, 1).await;
        let codes: Vec<&str> = diagnostics.iter().map(|d| d["code"].as_str().unwrap()).collect();
        assert_eq!(codes, ["CUL202", "CUL201"]);
        let cul202 = by_code(&diagnostics, "CUL202");
        assert_eq!(
            cul202["codeDescription"]["href"],
            "https://github.com/culint/culint/blob/main/docs/rules/CUL202.md"
        );

        let actions = client
            .request("textDocument/codeAction", actions_request(&file, std::slice::from_ref(cul202), json!(null)))
            .await
            .unwrap();
        let titles: Vec<&str> = actions.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
        assert_eq!(
            titles,
            [
                "Move `empty_cache()` after the memory is released",
                "Disable CUL202 for this line",
                "culint: Fix all auto-fixable problems"
            ]
        );
        let fix = &actions[0];
        assert_eq!(fix["kind"], "quickfix");
        assert_eq!(fix["isPreferred"], true);
        assert_eq!(fix["edit"]["documentChanges"][0]["textDocument"]["version"], 1);
        let fixed = apply_text_edits(TRAINING_SCRIPT, &edits_of(&fix["edit"]), PositionEncoding::Utf16);
        assert!(fixed.contains("    del model\n    torch.cuda.empty_cache()\n"), "{fixed}");

        let disabled = apply_text_edits(TRAINING_SCRIPT, &edits_of(&actions[1]["edit"]), PositionEncoding::Utf16);
        assert!(
            disabled.contains("    torch.cuda.empty_cache()  # culint: ignore[CUL202]\n    del model"),
            "{disabled}"
        );

        let cul201 = by_code(&diagnostics, "CUL201");
        let actions = client
            .request(
                "textDocument/codeAction",
                actions_request(&file, std::slice::from_ref(cul201), json!(["quickfix"])),
            )
            .await
            .unwrap();
        assert_eq!(actions[0]["title"], "Move `empty_cache()` after the step loop (unsafe)");
        assert_eq!(actions[0]["isPreferred"], false);
        assert_eq!(actions.as_array().unwrap().len(), 2, "quick fix and disable; no fix-all under `only: quickfix`");
        client.shutdown().await;
    }

    /// A client on the training script (CUL2 rules), and the diagnostics of version 1 and of
    /// version 2, which inserts `text` at `at`.
    async fn edited_after_diagnostics(file: &str, at: Value, text: &str) -> (TestClient, Vec<Value>, Vec<Value>) {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"select": ["CUL2"]})).await;
        client.open(file, TRAINING_SCRIPT).await;
        let diagnostics = client.diagnostics(file, 1).await;
        let change = json!({
            "textDocument": {"uri": file, "version": 2},
            "contentChanges": [{"range": {"start": at, "end": at}, "text": text}]
        });
        client.notify("textDocument/didChange", change).await;
        let edited = client.diagnostics(file, 2).await;
        (client, diagnostics, edited)
    }

    #[tokio::test]
    async fn stale_diagnostic_data_falls_back_to_a_fresh_lint() {
        let file = uri("stale.py");
        // Insert a line at the top: the version-1 fix offsets are now wrong by one line.
        let (mut client, diagnostics, fresh) = edited_after_diagnostics(&file, position(0, 0), "import gc\n").await;
        let mut stale = by_code(&diagnostics, "CUL202").clone();
        stale["range"] = by_code(&fresh, "CUL202")["range"].clone();
        let actions = client
            .request("textDocument/codeAction", actions_request(&file, &[stale], json!(["quickfix"])))
            .await
            .unwrap();
        assert_eq!(actions[0]["edit"]["documentChanges"][0]["textDocument"]["version"], 2);
        let current = format!("import gc\n{TRAINING_SCRIPT}");
        let fixed = apply_text_edits(&current, &edits_of(&actions[0]["edit"]), PositionEncoding::Utf16);
        assert!(fixed.starts_with("import gc\nimport torch\n"), "{fixed}");
        assert!(fixed.contains("    del model\n    torch.cuda.empty_cache()\n"), "{fixed}");
        client.shutdown().await;
    }

    /// In the light-bulb menu, fix-all comes next to a finding that is fixable in the current
    /// text, whatever the `data` of an older version the client kept says (after a pulled report
    /// was answered "unchanged", it keeps the older one).
    #[tokio::test]
    async fn the_light_bulb_judges_fixability_on_the_current_text() {
        let file = uri("bulb.py");
        // Type at the end of the first line: the findings keep their ranges; `data` names version 1.
        let (mut client, diagnostics, _) = edited_after_diagnostics(&file, position(0, 12), " ").await;

        let mut claims_no_fix = by_code(&diagnostics, "CUL202").clone();
        claims_no_fix["data"] = json!("[1,null]");
        assert_eq!(
            light_bulb(&mut client, &file, claims_no_fix).await,
            [
                "Move `empty_cache()` after the memory is released",
                "Disable CUL202 for this line",
                "culint: Fix all auto-fixable problems"
            ]
        );

        // A finding the current text does not have (its range now points elsewhere): its kept
        // `data` claims a fix, but nothing next to it is fixable.
        let mut gone = by_code(&diagnostics, "CUL202").clone();
        gone["range"] = json!({"start": position(1, 0), "end": position(1, 0)});
        let titles = light_bulb(&mut client, &file, gone).await;
        assert!(titles.iter().all(|t| !t.starts_with("culint: Fix all")), "{titles:?}");
        client.shutdown().await;
    }

    /// While the buffer does not parse (mid-typing), the tree around the error is the parser's
    /// guess: no fix is offered, as a quick fix or by fix-all, until it parses again. The
    /// findings stay, and so does "Disable" next to them.
    #[tokio::test]
    async fn a_buffer_that_does_not_parse_is_offered_no_fixes() {
        let file = uri("typing.py");
        let (mut client, _, broken) = edited_after_diagnostics(&file, position(11, 0), "print(").await;
        let codes: Vec<&str> = broken.iter().map(|d| d["code"].as_str().unwrap()).collect();
        assert_eq!(codes, ["CUL202", "CUL201"]);
        assert_eq!(
            light_bulb(&mut client, &file, by_code(&broken, "CUL202").clone()).await,
            ["Disable CUL202 for this line"]
        );
        let fix_all = client
            .request("textDocument/codeAction", actions_request(&file, &[], json!(["source.fixAll"])))
            .await
            .unwrap();
        assert_eq!(fix_all, json!([]));

        let close_the_call = json!({
            "textDocument": {"uri": file, "version": 3},
            "contentChanges": [{"range": {"start": position(11, 6), "end": position(11, 6)}, "text": ")"}]
        });
        client.notify("textDocument/didChange", close_the_call).await;
        let mended = client.diagnostics(&file, 3).await;
        let titles = light_bulb(&mut client, &file, by_code(&mended, "CUL202").clone()).await;
        assert_eq!(titles[0], "Move `empty_cache()` after the memory is released");
        client.shutdown().await;
    }

    /// The titles of the actions in the light-bulb menu (no `only`) next to `diagnostic`.
    async fn light_bulb(client: &mut TestClient, file: &str, diagnostic: Value) -> Vec<String> {
        let actions =
            client.request("textDocument/codeAction", actions_request(file, &[diagnostic], json!(null))).await.unwrap();
        actions.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap().to_owned()).collect()
    }

    #[tokio::test]
    async fn fix_all_applies_safe_fixes_unless_unsafe_fixes_is_on() {
        for (unsafe_fixes, moves_step_loop_call) in [(false, false), (true, true)] {
            let mut capabilities = basic_capabilities();
            capabilities["general"]["positionEncodings"] = json!(["utf-8"]);
            let (mut client, _) =
                TestClient::start(capabilities, json!({"select": ["CUL2"], "unsafeFixes": unsafe_fixes})).await;
            let file = uri("fixall.py");
            client.open(&file, TRAINING_SCRIPT).await;
            let actions = client
                .request("textDocument/codeAction", actions_request(&file, &[], json!(["source.fixAll"])))
                .await
                .unwrap();
            assert_eq!(actions[0]["kind"], "source.fixAll.culint");
            let fixed = apply_text_edits(TRAINING_SCRIPT, &edits_of(&actions[0]["edit"]), PositionEncoding::Utf8);
            assert!(fixed.contains("    del model\n    torch.cuda.empty_cache()\n"), "{fixed}");
            assert_eq!(
                fixed.ends_with("    loss.backward()\ntorch.cuda.empty_cache()\n"),
                moves_step_loop_call,
                "{fixed}"
            );
            client.shutdown().await;
        }
    }

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
