//! Notebook documents (`notebookDocument/*`), as VS Code syncs a Jupyter notebook: each cell is a
//! text document of its own, and the cells are linted together as the notebook's [`Program`],
//! each cell given the findings in it.
//!
//! A notebook's diagnostics are pushed (`textDocument/publishDiagnostics` per cell), also to a
//! client that pulls those of files: VS Code pulls a cell only when the extension's document
//! selector names notebook cells, and a cell's findings depend on every cell before it, which a
//! pull of one cell does not re-ask when another changes. A pull for a cell is answered with an
//! empty report, so that no finding shows twice.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionParams, DidChangeNotebookDocumentParams,
    DidOpenNotebookDocumentParams, NotebookCell, NotebookCellKind, NotebookDocumentSyncOptions, NotebookSelector,
    NotebookCellSelector, TextDocumentContentChangeEvent, TextDocumentItem, Uri,
};

use crate::diagnostic::Diagnostic;
use crate::fix::Applicability;
use crate::lint::{LintContext, lint_text};
use crate::lsp::context::ServerContext;
use crate::lsp::diagnostics::{SOURCE, data_of, to_lsp};
use crate::lsp::edits::{text_edits, workspace_edit};
use crate::lsp::position::{PositionEncoding, PositionMapper};
use crate::lsp::session::path_of;
use crate::notebook::Program;

/// What the server announces: notebooks of any type, their Python cells.
pub fn sync_options() -> NotebookDocumentSyncOptions {
    NotebookDocumentSyncOptions {
        notebook_selector: vec![NotebookSelector::ByCells {
            notebook: None,
            cells: vec![NotebookCellSelector { language: "python".to_owned() }],
        }],
        save: Some(true),
    }
}

/// The open notebooks.
#[derive(Default)]
pub struct Notebooks {
    open: HashMap<Uri, OpenNotebook>,
    /// The notebook each cell document belongs to.
    owners: HashMap<Uri, Uri>,
    /// Held from the "is this result still current?" check until a notebook's publishes are
    /// sent, so an older version's findings never follow a newer one's.
    publish_order: Arc<tokio::sync::Mutex<()>>,
}

struct OpenNotebook {
    path: Option<PathBuf>,
    /// Counts every change, so a result is never mistaken for current.
    revision: u64,
    cells: Vec<Cell>,
    /// Cells removed since the last publish, whose diagnostics must be withdrawn.
    removed: Vec<Uri>,
}

#[derive(Clone)]
struct Cell {
    uri: Uri,
    /// A code cell in Python (a markdown cell, or a code cell switched to another language, is
    /// not part of the program).
    python: bool,
    text: String,
    version: i32,
}

/// What a lint of a notebook needs, copied out of the session.
pub struct NotebookSnapshot {
    pub uri: Uri,
    revision: u64,
    path: Option<PathBuf>,
    /// The Python cells: URI, version, text.
    cells: Vec<(Uri, i32, String)>,
    /// Cells to withdraw diagnostics from.
    removed: Vec<Uri>,
}

impl Notebooks {
    pub fn open(&mut self, params: DidOpenNotebookDocumentParams) {
        let notebook = params.notebook_document;
        let items: HashMap<Uri, TextDocumentItem> =
            params.cell_text_documents.into_iter().map(|item| (item.uri.clone(), item)).collect();
        let cells = notebook.cells.iter().map(|cell| Cell::of(cell, items.get(&cell.document), None)).collect();
        for cell in &notebook.cells {
            self.owners.insert(cell.document.clone(), notebook.uri.clone());
        }
        let path = path_of(&notebook.uri);
        self.open.insert(notebook.uri, OpenNotebook { path, revision: 0, cells, removed: Vec::new() });
    }

    /// Apply a change: cells added, removed or moved, cell kinds, cell texts. An edit whose range
    /// is not in its cell is refused, and the notebook is left as it was before the edit.
    pub fn change(&mut self, params: DidChangeNotebookDocumentParams, encoding: PositionEncoding) -> Result<(), String> {
        let uri = params.notebook_document.uri;
        let Some(notebook) = self.open.get_mut(&uri) else {
            return Err(format!("culint has no open notebook {}", uri.as_str()));
        };
        notebook.revision += 1;
        let Some(cells) = params.change.cells else { return Ok(()) };
        if let Some(structure) = cells.structure {
            let items: HashMap<Uri, TextDocumentItem> =
                structure.did_open.unwrap_or_default().into_iter().map(|item| (item.uri.clone(), item)).collect();
            let array = structure.array;
            let start = (array.start as usize).min(notebook.cells.len());
            let end = (start + array.delete_count as usize).min(notebook.cells.len());
            let deleted: Vec<Cell> = notebook.cells.drain(start..end).collect();
            let inserted: Vec<Cell> = array
                .cells
                .unwrap_or_default()
                .iter()
                .map(|cell| Cell::of(cell, items.get(&cell.document), deleted.iter().find(|d| d.uri == cell.document)))
                .collect();
            for cell in &inserted {
                self.owners.insert(cell.uri.clone(), uri.clone());
            }
            for cell in &deleted {
                if !inserted.iter().any(|i| i.uri == cell.uri) {
                    self.owners.remove(&cell.uri);
                    notebook.removed.push(cell.uri.clone());
                }
            }
            notebook.cells.splice(start..start, inserted);
        }
        // A cell's kind or metadata changed; only a cell that is no longer code matters here
        // (a client replaces a cell whose language changes).
        for data in cells.data.unwrap_or_default() {
            if let Some(cell) = notebook.cells.iter_mut().find(|c| c.uri == data.document)
                && data.kind != NotebookCellKind::CODE
            {
                cell.python = false;
            }
        }
        for content in cells.text_content.unwrap_or_default() {
            let Some(cell) = notebook.cells.iter_mut().find(|c| c.uri == content.document.uri) else {
                return Err(format!("culint has no cell {} in notebook {}", content.document.uri.as_str(), uri.as_str()));
            };
            let mut text = cell.text.clone();
            for change in &content.changes {
                text = apply_change(&text, change, encoding)?;
            }
            cell.text = text;
            cell.version = content.document.version;
        }
        Ok(())
    }

    /// Forget a notebook; the cells whose diagnostics must be withdrawn.
    pub fn close(&mut self, uri: &Uri) -> Vec<Uri> {
        let Some(notebook) = self.open.remove(uri) else { return Vec::new() };
        let mut cells: Vec<Uri> = notebook.cells.into_iter().map(|c| c.uri).collect();
        cells.extend(notebook.removed);
        for cell in &cells {
            self.owners.remove(cell);
        }
        cells
    }

    /// Whether a document is a cell of an open notebook.
    pub fn owns_cell(&self, cell: &Uri) -> bool {
        self.owners.contains_key(cell)
    }

    /// Invalidate every open notebook's results (the settings changed); their URIs, to relint.
    pub fn touch_all(&mut self) -> Vec<Uri> {
        self.open.values_mut().for_each(|notebook| notebook.revision += 1);
        self.open.keys().cloned().collect()
    }

    pub fn snapshot(&mut self, uri: &Uri) -> Option<NotebookSnapshot> {
        let notebook = self.open.get_mut(uri)?;
        Some(NotebookSnapshot {
            uri: uri.clone(),
            revision: notebook.revision,
            path: notebook.path.clone(),
            cells: notebook
                .cells
                .iter()
                .filter(|c| c.python)
                .map(|c| (c.uri.clone(), c.version, c.text.clone()))
                .collect(),
            removed: std::mem::take(&mut notebook.removed),
        })
    }

    fn is_current(&self, snapshot: &NotebookSnapshot) -> bool {
        self.open.get(&snapshot.uri).is_some_and(|n| n.revision == snapshot.revision)
    }

    /// A cell's text and version.
    fn cell(&self, uri: &Uri) -> Option<&Cell> {
        self.open.get(self.owners.get(uri)?)?.cells.iter().find(|c| &c.uri == uri)
    }
}

impl Cell {
    /// A cell of the notebook, its text from the document the client opened for it, else from
    /// the cell it was before a move.
    fn of(cell: &NotebookCell, item: Option<&TextDocumentItem>, before: Option<&Cell>) -> Self {
        let code = cell.kind == NotebookCellKind::CODE;
        match (item, before) {
            (Some(item), _) => Self {
                uri: cell.document.clone(),
                python: code && item.language_id.eq_ignore_ascii_case("python"),
                text: item.text.clone(),
                version: item.version,
            },
            (None, Some(before)) => Self { python: code && before.python, ..before.clone() },
            (None, None) => Self { uri: cell.document.clone(), python: code, text: String::new(), version: 0 },
        }
    }
}

fn apply_change(text: &str, change: &TextDocumentContentChangeEvent, encoding: PositionEncoding) -> Result<String, String> {
    let Some(range) = change.range else { return Ok(change.text.clone()) };
    let range = PositionMapper::new(text, encoding)
        .text_range(range)
        .map_err(|e| format!("culint: notebook cell edit: {e}"))?;
    let mut edited = String::with_capacity(text.len() + change.text.len());
    edited.push_str(&text[..range.start]);
    edited.push_str(&change.text);
    edited.push_str(&text[range.end..]);
    Ok(edited)
}

/// Lint an open notebook and push each cell's diagnostics, unless it changed meanwhile.
pub async fn lint_and_publish(context: &ServerContext, uri: Uri) {
    let prepared = {
        let mut session = context.session.lock();
        let Some(snapshot) = session.notebooks.snapshot(&uri) else { return };
        let (settings, excluded, problem) = session.settings_for(snapshot.path.as_deref());
        let order = Arc::clone(&session.notebooks.publish_order);
        (snapshot, settings, excluded, problem, session.project.clone(), session.features.encoding, order)
    };
    let (snapshot, settings, excluded, problem, project, encoding, order) = prepared;
    if let Some(problem) = problem {
        context.report_problem(&problem).await;
    }
    let cells: Vec<String> = snapshot.cells.iter().map(|(_, _, text)| text.clone()).collect();
    let path = snapshot.path.clone();
    let linted = context
        .computing("lint", move || {
            let program = Program::new(&cells);
            let diagnostics = if excluded {
                Vec::new()
            } else {
                let context = LintContext { path: path.as_deref(), project: Some(&project) };
                lint_text(&program.text, context, &settings)
            };
            program.by_cell(&diagnostics)
        })
        .await;
    let Ok(by_cell) = linted else { return };
    let _order = order.lock().await;
    if !context.session.lock().notebooks.is_current(&snapshot) {
        return;
    }
    for ((cell, version, text), diagnostics) in snapshot.cells.iter().zip(by_cell) {
        let items = cell_diagnostics(&diagnostics, text, cell, *version, encoding);
        context.client.publish_diagnostics(cell.clone(), items, Some(*version)).await;
    }
    for cell in snapshot.removed {
        context.client.publish_diagnostics(cell, Vec::new(), None).await;
    }
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

/// The quick fixes for a notebook cell's diagnostics, from the fix each one carries for the
/// cell's current version; `None` when the document is not a notebook cell.
pub fn code_actions(context: &ServerContext, params: &CodeActionParams) -> Option<Vec<CodeActionOrCommand>> {
    let session = context.session.lock();
    let cell = session.notebooks.cell(&params.text_document.uri)?;
    let (encoding, versioned) = (session.features.encoding, session.features.versioned_edits);
    let wanted = params.context.only.as_ref().is_none_or(|only| only.iter().any(|k| *k == CodeActionKind::QUICKFIX));
    if !wanted {
        return Some(Vec::new());
    }
    let mapper = PositionMapper::new(&cell.text, encoding);
    let actions = params
        .context
        .diagnostics
        .iter()
        .filter(|d| d.source.as_deref() == Some(SOURCE))
        .filter_map(|diagnostic| {
            let data = data_of(diagnostic).filter(|data| data.version == cell.version)?;
            let fix = data.fix.filter(|fix| fix.applicability != Applicability::DisplayOnly)?;
            let suffix = if fix.applicability == Applicability::Unsafe { " (unsafe)" } else { "" };
            Some(CodeActionOrCommand::CodeAction(CodeAction {
                title: format!("{}{suffix}", fix.title),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic.clone()]),
                edit: Some(workspace_edit(
                    &cell.uri,
                    versioned.then_some(cell.version),
                    text_edits(&fix.edits, &mapper),
                )),
                is_preferred: Some(fix.applicability == Applicability::Safe),
                ..CodeAction::default()
            }))
        })
        .collect();
    Some(actions)
}
