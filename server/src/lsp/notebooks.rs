//! What the server does with open notebooks: lint every cell together and push each cell's
//! findings (also to a client that pulls those of files: a cell's findings depend on every cell
//! before it, which a pull of one cell does not re-ask), fix all, hover and code actions per cell.

use std::sync::Arc;

use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, DocumentChanges, Hover, HoverContents,
    MarkupContent, MarkupKind, NumberOrString, OneOf, OptionalVersionedTextDocumentIdentifier, Position,
    TextDocumentEdit, Uri, WorkspaceEdit,
};

use crate::diagnostic::Diagnostic;
use crate::fix::{Applicability, Edit};
use crate::lint::{LintContext, fix_text, lint_text};
use crate::lsp::capabilities::FIX_ALL_KIND;
use crate::lsp::capabilities::requested;
use crate::lsp::context::ServerContext;
use crate::lsp::diagnostics::{SOURCE, data_of, to_lsp};
use crate::lsp::edits::{diff, text_edits, workspace_edit};
use crate::lsp::ignore_comment::disable_for_line;
use crate::lsp::position::{PositionEncoding, PositionMapper};
use crate::lsp::rule_docs::diagnostic_hover;
use crate::notebook::Program;

use crate::lsp::notebook_documents::*;

/// Lint an open notebook and push each cell's diagnostics, unless it changed meanwhile.
pub async fn lint_and_publish(context: &ServerContext, uri: Uri) {
    let (snapshot, settings, project, encoding, order) = {
        let mut session = context.session.lock();
        let Some(snapshot) = session.notebooks.snapshot(&uri) else { return };
        let settings = session.settings_for(snapshot.path.as_deref());
        let order = Arc::clone(&session.notebooks.publish_order);
        (snapshot, settings, session.project.clone(), session.features.encoding, order)
    };
    if let Some(problem) = &settings.problem {
        context.report_problem(problem).await;
    }
    let cells: Vec<String> = snapshot.cells.iter().map(|(_, _, text)| text.clone()).collect();
    let path = snapshot.path.clone();
    let linted = context
        .computing("lint", move || {
            let program = Program::new(&cells);
            let diagnostics = if settings.excluded {
                Vec::new()
            } else {
                let context = LintContext {
                    path: path.as_deref(),
                    project: Some(&project),
                    code_kind: settings.code_kind,
                    preview: settings.preview,
                };
                lint_text(&program.text, context, &settings.lint)
            };
            program.by_cell(&diagnostics)
        })
        .await;
    let _order = order.lock().await;
    let published: Vec<_> = {
        let mut session = context.session.lock();
        match linted {
            // A newer change makes the result stale: the lint of that change publishes.
            Ok(by_cell) if session.notebooks.is_current(&snapshot) => snapshot
                .cells
                .iter()
                .zip(by_cell)
                .map(|((cell, version, text), diagnostics)| {
                    let items = cell_diagnostics(&diagnostics, text, cell, *version, encoding);
                    session.notebooks.keep_published(&snapshot, cell, *version, diagnostics);
                    (cell.clone(), Some(*version), items)
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    // A removed cell's findings are withdrawn whatever became of the lint.
    let withdrawn = snapshot.removed.iter().map(|cell| (cell.clone(), None, Vec::new()));
    for (cell, version, items) in published.into_iter().chain(withdrawn) {
        context.client.publish_diagnostics(cell, items, version).await;
    }
}

/// Fix everything fixable in the notebook a cell belongs to, as `culint check --fix` fixes the
/// notebook: the edit of every cell the fixes change, and how many fixes; `None` when the
/// document is not a notebook cell.
pub async fn fix_all(context: &ServerContext, cell: &Uri) -> Option<jsonrpc::Result<(Option<WorkspaceEdit>, usize)>> {
    let (cells, path, settings, project, encoding, versioned) = {
        let session = context.session.lock();
        let notebooks = &session.notebooks;
        let notebook = notebooks.open.get(notebooks.owners.get(cell)?)?;
        let cells: Vec<Cell> = notebook.cells.iter().filter(|c| c.python).cloned().collect();
        let settings = session.settings_for(notebook.path.as_deref());
        let features = &session.features;
        (cells, notebook.path.clone(), settings, session.project.clone(), features.encoding, features.versioned_edits)
    };
    let texts: Vec<String> = cells.iter().map(|c| c.text.clone()).collect();
    let fixed = context
        .computing("fix all", move || {
            if settings.excluded {
                return None;
            }
            let program = Program::new(&texts);
            let context = LintContext {
                path: path.as_deref(),
                project: Some(&project),
                code_kind: settings.code_kind,
                preview: settings.preview,
            };
            let threshold = if settings.unsafe_fixes { Applicability::Unsafe } else { Applicability::Safe };
            let outcome = fix_text(&program.text, context, &settings.lint, threshold);
            Some((program.cells_after(&outcome.text)?, outcome.fixed))
        })
        .await;
    let (after, fixes) = match fixed {
        Ok(Some(fixed)) => fixed,
        Ok(None) => return Some(Ok((None, 0))),
        Err(error) => return Some(Err(error)),
    };
    let changes: Vec<TextDocumentEdit> = cells
        .iter()
        .zip(&after)
        .filter(|(cell, text)| cell.text != **text)
        .map(|(cell, text)| TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier {
                uri: cell.uri.clone(),
                version: versioned.then_some(cell.version),
            },
            edits: text_edits(&diff(&cell.text, text), &PositionMapper::new(&cell.text, encoding))
                .into_iter()
                .map(OneOf::Left)
                .collect(),
        })
        .collect();
    if changes.is_empty() {
        return Some(Ok((None, 0)));
    }
    let edit = if versioned {
        WorkspaceEdit { document_changes: Some(DocumentChanges::Edits(changes)), ..WorkspaceEdit::default() }
    } else {
        let by_cell = changes
            .into_iter()
            .map(|change| {
                let edits =
                    change.edits.into_iter().filter_map(|e| if let OneOf::Left(e) = e { Some(e) } else { None });
                (change.text_document.uri, edits.collect())
            })
            .collect();
        WorkspaceEdit { changes: Some(by_cell), ..WorkspaceEdit::default() }
    };
    Some(Ok((Some(edit), fixes)))
}

fn cell_diagnostics(
    diagnostics: &[Diagnostic],
    text: &str,
    uri: &Uri,
    version: i32,
    encoding: PositionEncoding,
) -> Vec<tower_lsp_server::ls_types::Diagnostic> {
    let mapper = PositionMapper::new(text, encoding);
    diagnostics.iter().map(|d| to_lsp(d, &mapper, uri, version)).collect()
}

/// Withdraw the diagnostics of a closed notebook's cells.
pub async fn clear(context: &ServerContext, cells: Vec<Uri>) {
    let order = Arc::clone(&context.session.lock().notebooks.publish_order);
    let _order = order.lock().await;
    for cell in cells {
        context.client.publish_diagnostics(cell, Vec::new(), None).await;
    }
}

/// The rule docs over a finding in a notebook cell, from the findings published for the cell's
/// current version; `None` when the document is not a notebook cell.
pub fn hover(context: &ServerContext, uri: &Uri, position: Position) -> Option<Result<Option<Hover>, String>> {
    let session = context.session.lock();
    let cell = session.notebooks.cell(uri)?;
    let mapper = PositionMapper::new(&cell.text, session.features.encoding);
    let offset = match mapper.offset(position) {
        Ok(offset) => offset,
        Err(error) => return Some(Err(format!("culint: hover: {error}"))),
    };
    let findings = cell.published.as_ref().filter(|(version, _)| *version == cell.version).map(|(_, f)| f)?;
    let hover = diagnostic_hover(findings, offset, session.lang).map(|(range, markdown)| Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
        range: Some(mapper.range(range)),
    });
    Some(Ok(hover))
}

/// The code actions for a notebook cell: the quick fix each of its diagnostics carries for the
/// cell's current version, and fix-all over the notebook; `None` when the document is not a
/// notebook cell.
pub async fn code_actions(
    context: &ServerContext,
    params: &CodeActionParams,
) -> Option<jsonrpc::Result<Vec<CodeActionOrCommand>>> {
    let only = params.context.only.as_deref();
    let mut actions = quick_fixes(context, params, only)?;
    // In the light-bulb menu (no `only`), fix-all is offered next to something fixable.
    let fix_all_kind = CodeActionKind::new(FIX_ALL_KIND);
    let want_fix_all = match only {
        Some(_) => requested(only, &fix_all_kind),
        None => !actions.is_empty(),
    };
    if want_fix_all {
        match fix_all(context, &params.text_document.uri).await? {
            Ok((Some(edit), _)) => actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: "culint: Fix all auto-fixable problems".to_owned(),
                kind: Some(fix_all_kind),
                edit: Some(edit),
                ..CodeAction::default()
            })),
            Ok((None, _)) => {}
            Err(error) => return Some(Err(error)),
        }
    }
    Some(Ok(actions))
}

/// A cell's quick fixes: the fix of each diagnostic, and "Disable CULxxx for this line".
fn quick_fixes(
    context: &ServerContext,
    params: &CodeActionParams,
    only: Option<&[CodeActionKind]>,
) -> Option<Vec<CodeActionOrCommand>> {
    let uri = &params.text_document.uri;
    // Copied out, so that the parse below holds no lock.
    let (cell, (cells, slot), encoding, versioned) = {
        let session = context.session.lock();
        let cell = session.notebooks.cell(uri)?.clone();
        (cell, session.notebooks.python_cells(uri)?, session.features.encoding, session.features.versioned_edits)
    };
    if !requested(only, &CodeActionKind::QUICKFIX) {
        return Some(Vec::new());
    }
    let version = versioned.then_some(cell.version);
    let mapper = PositionMapper::new(&cell.text, encoding);
    let ours: Vec<&tower_lsp_server::ls_types::Diagnostic> =
        params.context.diagnostics.iter().filter(|d| d.source.as_deref() == Some(SOURCE)).collect();
    let mut actions: Vec<CodeActionOrCommand> = ours
        .iter()
        .filter_map(|diagnostic| {
            let data = data_of(diagnostic).filter(|data| data.version == cell.version)?;
            let fix = data.fix.filter(|fix| fix.applicability != Applicability::DisplayOnly)?;
            let suffix = if fix.applicability == Applicability::Unsafe { " (unsafe)" } else { "" };
            Some(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("{}{suffix}", fix.title),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![(*diagnostic).clone()]),
                edit: Some(workspace_edit(&cell.uri, version, text_edits(&fix.edits, &mapper))),
                is_preferred: Some(fix.applicability == Applicability::Safe),
                ..CodeAction::default()
            }))
        })
        .collect();
    if !ours.is_empty() {
        let program = Program::new(&cells);
        let tree = crate::parse::parse(&program.text, None);
        let mut done: Vec<(&str, u32)> = Vec::new();
        for diagnostic in ours {
            let Some(NumberOrString::String(code)) = &diagnostic.code else { continue };
            let key = (code.as_str(), diagnostic.range.start.line);
            if done.contains(&key) || crate::rules::by_code(code).is_none() {
                continue;
            }
            let Ok(offset) = mapper.offset(diagnostic.range.start) else { continue };
            let at = program.program_offset(slot, offset);
            let Some(edit) = disable_for_line(&program.text, &tree, at, code) else { continue };
            let (in_cell, range) = program.locate_range(edit.range);
            if in_cell != slot {
                continue;
            }
            done.push(key);
            let edit = Edit { range, ..edit };
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("Disable {code} for this line"),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                edit: Some(workspace_edit(&cell.uri, version, text_edits(&[edit], &mapper))),
                is_preferred: Some(false),
                ..CodeAction::default()
            }));
        }
    }
    Some(actions)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::lsp::position::PositionEncoding;
    use crate::lsp::testing::{TestClient, apply_text_edits, basic_capabilities, edits_of};

    const NOTEBOOK: &str = "file:///workspace/train.ipynb";

    fn cell(n: usize) -> String {
        format!("vscode-notebook-cell:/workspace/train.ipynb#cell{n}")
    }

    /// The model in the first cell, a markdown cell, and the step loop in the third, which
    /// empties the cache every step (CUL201) behind a shell escape, and keeps its zeroed
    /// gradients (CUL503, a safe fix).
    const MODEL: &str = "!nvidia-smi\nimport torch\nmodel = torch.nn.Linear(8, 1).cuda().bfloat16()\noptimizer = torch.optim.AdamW(model.parameters())";
    const LOOP: &str = "for batch in loader:\n    loss = model(batch.cuda()).sum()\n    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad(set_to_none=False)\n    torch.cuda.empty_cache()\n";

    fn item(n: usize, language: &str, text: &str) -> Value {
        json!({"uri": cell(n), "languageId": language, "version": 1, "text": text})
    }

    async fn open_notebook(client: &mut TestClient) {
        client
            .notify(
                "notebookDocument/didOpen",
                json!({
                    "notebookDocument": {
                        "uri": NOTEBOOK, "notebookType": "jupyter-notebook", "version": 0,
                        "cells": [
                            {"kind": 2, "document": cell(1)},
                            {"kind": 1, "document": cell(2)},
                            {"kind": 2, "document": cell(3)},
                        ],
                    },
                    "cellTextDocuments": [
                        item(1, "python", MODEL),
                        item(2, "markdown", "# Training\n    torch.cuda.empty_cache()"),
                        item(3, "python", LOOP),
                    ],
                }),
            )
            .await;
    }

    /// Replace a range of the loop's cell (version 1 of the notebook and the cell) with `text`.
    async fn edit_loop_cell(client: &mut TestClient, start: (u32, u32), end: (u32, u32), text: &str) {
        let range = json!({
            "start": {"line": start.0, "character": start.1},
            "end": {"line": end.0, "character": end.1},
        });
        let edit = json!({
            "notebookDocument": {"uri": NOTEBOOK, "version": 1},
            "change": {"cells": {"textContent": [{
                "document": {"uri": cell(3), "version": 2},
                "changes": [{"range": range, "text": text}],
            }]}},
        });
        client.notify("notebookDocument/didChange", edit).await;
    }

    fn codes(diagnostics: &[Value]) -> Vec<(&str, u64)> {
        diagnostics
            .iter()
            .map(|d| (d["code"].as_str().unwrap(), d["range"]["start"]["line"].as_u64().unwrap()))
            .collect()
    }

    #[tokio::test]
    async fn each_cell_gets_the_findings_of_the_notebook_in_it() {
        let (mut client, result) = TestClient::start(basic_capabilities(), json!({})).await;
        let sync = &result["capabilities"]["notebookDocumentSync"];
        assert_eq!(sync["notebookSelector"], json!([{"notebook": "*", "cells": [{"language": "python"}]}]));
        open_notebook(&mut client).await;
        let in_loop = client.diagnostics(&cell(3), 1).await;
        // The cast in the first cell is the model the loop trains: no fp32 finding (CUL302).
        assert_eq!(codes(&in_loop), [("CUL503", 4), ("CUL201", 5)], "{in_loop:#?}");
        assert!(client.diagnostics(&cell(1), 1).await.is_empty());
        // The markdown cell is no part of the program, and is published nothing.
        assert!(!client.received("textDocument/publishDiagnostics").iter().any(|m| m["params"]["uri"] == cell(2)));
        client.shutdown().await;
    }

    #[tokio::test]
    async fn edits_moves_and_removals_of_cells_are_followed() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        open_notebook(&mut client).await;
        client.diagnostics(&cell(3), 1).await;

        // Delete the last line of the loop cell: CUL201 goes.
        edit_loop_cell(&mut client, (5, 0), (6, 0), "").await;
        assert_eq!(codes(&client.diagnostics(&cell(3), 2).await), [("CUL503", 4)]);

        // A new cell before the model, that empties the cache on every step of its own loop;
        // then the model's cell is removed, and its diagnostics withdrawn.
        let insert = json!({
            "notebookDocument": {"uri": NOTEBOOK, "version": 2},
            "change": {"cells": {"structure": {
                "array": {"start": 0, "deleteCount": 0, "cells": [{"kind": 2, "document": cell(4)}]},
                "didOpen": [item(4, "python", LOOP)],
            }}},
        });
        client.notify("notebookDocument/didChange", insert).await;
        assert_eq!(codes(&client.diagnostics(&cell(4), 1).await), [("CUL503", 4), ("CUL201", 5)]);
        let remove = json!({
            "notebookDocument": {"uri": NOTEBOOK, "version": 3},
            "change": {"cells": {"structure": {
                "array": {"start": 1, "deleteCount": 1},
                "didClose": [{"uri": cell(1)}],
            }}},
        });
        client.notify("notebookDocument/didChange", remove).await;
        let withdrawn = client
            .wait_for(|m| {
                m["method"] == "textDocument/publishDiagnostics"
                    && m["params"]["uri"] == cell(1)
                    && m["params"]["version"].is_null()
            })
            .await;
        assert_eq!(withdrawn["params"]["diagnostics"], json!([]));

        client
            .notify(
                "notebookDocument/didClose",
                json!({"notebookDocument": {"uri": NOTEBOOK}, "cellTextDocuments": []}),
            )
            .await;
        for closed in [cell(3), cell(4)] {
            let cleared = client
                .wait_for(|m| {
                    m["method"] == "textDocument/publishDiagnostics"
                        && m["params"]["uri"] == closed
                        && m["params"]["version"].is_null()
                })
                .await;
            assert_eq!(cleared["params"]["diagnostics"], json!([]));
        }
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_quick_fix_edits_its_cell() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        open_notebook(&mut client).await;
        let diagnostics = client.diagnostics(&cell(3), 1).await;
        let cul503 = diagnostics.iter().find(|d| d["code"] == "CUL503").unwrap().clone();
        let actions = client
            .request(
                "textDocument/codeAction",
                json!({
                    "textDocument": {"uri": cell(3)},
                    "range": cul503["range"],
                    "context": {"diagnostics": [cul503]},
                }),
            )
            .await
            .unwrap();
        let fix = &actions.as_array().unwrap()[0];
        assert_eq!(fix["kind"], "quickfix");
        assert_eq!(fix["isPreferred"], true);
        let change = &fix["edit"]["documentChanges"][0];
        assert_eq!(change["textDocument"], json!({"uri": cell(3), "version": 1}));
        let fixed = apply_text_edits(LOOP, &edits_of(&fix["edit"]), PositionEncoding::Utf16);
        assert_eq!(fixed, LOOP.replace("zero_grad(set_to_none=False)", "zero_grad()"));
        let disable =
            actions.as_array().unwrap().iter().find(|a| a["title"] == "Disable CUL503 for this line").unwrap();
        let silenced = apply_text_edits(LOOP, &edits_of(&disable["edit"]), PositionEncoding::Utf16);
        assert_eq!(silenced, LOOP.replace("set_to_none=False)\n", "set_to_none=False)  # culint: ignore[CUL503]\n"));
        client.shutdown().await;
    }

    #[tokio::test]
    async fn fix_all_edits_every_cell_it_fixes() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"unsafeFixes": true})).await;
        open_notebook(&mut client).await;
        client.diagnostics(&cell(3), 1).await;
        let only_fix_all = json!({
            "textDocument": {"uri": cell(3)},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["source.fixAll.culint"]},
        });
        let actions = client.request("textDocument/codeAction", only_fix_all).await.unwrap();
        let fix_all = &actions.as_array().unwrap()[0];
        assert_eq!(fix_all["kind"], "source.fixAll.culint");
        let changes = fix_all["edit"]["documentChanges"].as_array().unwrap();
        assert_eq!(changes.len(), 1, "only the loop's cell changes: {changes:#?}");
        assert_eq!(changes[0]["textDocument"], json!({"uri": cell(3), "version": 1}));
        let fixed = apply_text_edits(LOOP, &edits_of(&fix_all["edit"]), PositionEncoding::Utf16);
        assert!(fixed.contains("    optimizer.zero_grad()\ntorch.cuda.empty_cache()\n"), "{fixed}");

        let command = json!({"command": "culint.applyAllFixes", "arguments": [cell(3)]});
        let applied = client.request("workspace/executeCommand", command).await.unwrap();
        assert_eq!(applied, json!({"applied": true, "fixes": 2}));
        assert_eq!(client.applied_edits[0], fix_all["edit"]);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn new_settings_republish_the_cells() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        open_notebook(&mut client).await;
        assert_eq!(client.diagnostics(&cell(3), 1).await.len(), 2);
        let ignore = json!({"settings": {"culint": {"ignore": ["CUL201"]}}});
        client.notify("workspace/didChangeConfiguration", ignore).await;
        let republished = client
            .wait_for(|m| {
                m["method"] == "textDocument/publishDiagnostics"
                    && m["params"]["uri"] == cell(3)
                    && m["params"]["diagnostics"].as_array().is_some_and(|d| d.len() == 1)
            })
            .await;
        assert_eq!(republished["params"]["diagnostics"][0]["code"], "CUL503");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_suppression_comment_in_a_cell_silences_its_line() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        open_notebook(&mut client).await;
        client.diagnostics(&cell(3), 1).await;
        edit_loop_cell(&mut client, (5, 28), (5, 28), "  # culint: ignore[CUL201]").await;
        assert_eq!(codes(&client.diagnostics(&cell(3), 2).await), [("CUL503", 4)]);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn hover_over_a_finding_in_a_cell_shows_its_rule() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        open_notebook(&mut client).await;
        client.diagnostics(&cell(3), 1).await;
        let hover = |line, character| json!({"textDocument": {"uri": cell(3)}, "position": {"line": line, "character": character}});
        let over = client.request("textDocument/hover", hover(5, 8)).await.unwrap();
        assert!(over["contents"]["value"].as_str().unwrap().contains("CUL201"), "{over}");
        assert_eq!(over["range"]["start"], json!({"line": 5, "character": 4}));
        assert_eq!(client.request("textDocument/hover", hover(0, 2)).await.unwrap(), Value::Null);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_pulling_client_is_pushed_a_notebook_s_diagnostics_once() {
        let mut capabilities = basic_capabilities();
        capabilities["textDocument"]["diagnostic"] = json!({"dynamicRegistration": false});
        let (mut client, _) = TestClient::start(capabilities, json!({})).await;
        open_notebook(&mut client).await;
        assert_eq!(client.diagnostics(&cell(3), 1).await.len(), 2);
        let pulled =
            client.request("textDocument/diagnostic", json!({"textDocument": {"uri": cell(3)}})).await.unwrap();
        assert_eq!((pulled["kind"].as_str(), pulled["items"].as_array().map(Vec::len)), (Some("full"), Some(0)));
        client.shutdown().await;
    }
}
