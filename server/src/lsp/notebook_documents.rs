//! The open notebook documents (`notebookDocument/*`), as VS Code syncs a Jupyter notebook: each
//! cell is a text document of its own, and the cells are linted together as the notebook's
//! [`Program`]. What is done with them, linting, fixes, hover, is in [`crate::lsp::notebooks`].
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
    DidChangeNotebookDocumentParams, DidOpenNotebookDocumentParams, Notebook, NotebookCell, NotebookCellKind,
    NotebookCellSelector, NotebookDocumentSyncOptions, NotebookSelector, TextDocumentContentChangeEvent,
    TextDocumentItem, Uri,
};

use crate::diagnostic::Diagnostic;
use crate::lsp::position::{PositionEncoding, PositionMapper};
use crate::lsp::session::path_of;

/// What the server announces: notebooks of any type (`*`), their Python cells. The notebook is
/// named rather than left out: lsprotocol, the types of pygls clients, cannot read a selector
/// without one.
pub fn sync_options() -> NotebookDocumentSyncOptions {
    NotebookDocumentSyncOptions {
        notebook_selector: vec![NotebookSelector::ByNotebook {
            notebook: Notebook::String("*".to_owned()),
            cells: Some(vec![NotebookCellSelector { language: "python".to_owned() }]),
        }],
        save: Some(true),
    }
}

/// The open notebooks.
#[derive(Default)]
pub struct Notebooks {
    pub(crate) open: HashMap<Uri, OpenNotebook>,
    /// The notebook each cell document belongs to.
    pub(crate) owners: HashMap<Uri, Uri>,
    /// Held from the "is this result still current?" check until a notebook's publishes are
    /// sent, so an older version's findings never follow a newer one's.
    pub(crate) publish_order: Arc<tokio::sync::Mutex<()>>,
}

pub(crate) struct OpenNotebook {
    pub(crate) path: Option<PathBuf>,
    /// Counts every change, so a result is never mistaken for current.
    pub(crate) revision: u64,
    pub(crate) cells: Vec<Cell>,
    /// Cells removed since the last publish, whose diagnostics must be withdrawn.
    pub(crate) removed: Vec<Uri>,
}

#[derive(Clone)]
pub(crate) struct Cell {
    pub(crate) uri: Uri,
    /// A code cell in Python (a markdown cell, or a code cell switched to another language, is
    /// not part of the program).
    pub(crate) python: bool,
    pub(crate) text: String,
    pub(crate) version: i32,
    /// The findings last published for the cell, and the version they were found in (for hover).
    pub(crate) published: Option<(i32, Vec<Diagnostic>)>,
}

/// What a lint of a notebook needs, copied out of the session.
pub struct NotebookSnapshot {
    pub uri: Uri,
    pub(crate) revision: u64,
    pub(crate) path: Option<PathBuf>,
    /// The Python cells: URI, version, text.
    pub(crate) cells: Vec<(Uri, i32, String)>,
    /// Cells to withdraw diagnostics from.
    pub(crate) removed: Vec<Uri>,
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
    pub fn change(
        &mut self,
        params: DidChangeNotebookDocumentParams,
        encoding: PositionEncoding,
    ) -> Result<(), String> {
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
                return Err(format!(
                    "culint has no cell {} in notebook {}",
                    content.document.uri.as_str(),
                    uri.as_str()
                ));
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

    /// What a lint of the notebook needs; the cells removed since the last one go with it.
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

    pub(crate) fn is_current(&self, snapshot: &NotebookSnapshot) -> bool {
        self.open.get(&snapshot.uri).is_some_and(|n| n.revision == snapshot.revision)
    }

    /// A cell's text and version.
    pub(crate) fn cell(&self, uri: &Uri) -> Option<&Cell> {
        self.open.get(self.owners.get(uri)?)?.cells.iter().find(|c| &c.uri == uri)
    }

    /// The texts of the program cells of the notebook a cell belongs to, and the cell's place
    /// among them.
    pub(crate) fn python_cells(&self, cell: &Uri) -> Option<(Vec<String>, usize)> {
        let notebook = self.open.get(self.owners.get(cell)?)?;
        let python: Vec<&Cell> = notebook.cells.iter().filter(|c| c.python).collect();
        let slot = python.iter().position(|c| &c.uri == cell)?;
        Some((python.iter().map(|c| c.text.clone()).collect(), slot))
    }

    /// Keep what is published for a cell of the notebook `snapshot` describes.
    pub(crate) fn keep_published(
        &mut self,
        snapshot: &NotebookSnapshot,
        uri: &Uri,
        version: i32,
        findings: Vec<Diagnostic>,
    ) {
        let notebook = self.open.get_mut(&snapshot.uri);
        if let Some(cell) = notebook.and_then(|n| n.cells.iter_mut().find(|c| &c.uri == uri)) {
            cell.published = Some((version, findings));
        }
    }
}

impl Cell {
    /// A cell of the notebook, its text from the document the client opened for it, else from
    /// the cell it was before a move.
    pub(crate) fn of(cell: &NotebookCell, item: Option<&TextDocumentItem>, before: Option<&Cell>) -> Self {
        let code = cell.kind == NotebookCellKind::CODE;
        match (item, before) {
            (Some(item), _) => Self {
                uri: cell.document.clone(),
                python: code && item.language_id.eq_ignore_ascii_case("python"),
                text: item.text.clone(),
                version: item.version,
                published: None,
            },
            (None, Some(before)) => Self { python: code && before.python, ..before.clone() },
            (None, None) => {
                Self { uri: cell.document.clone(), python: code, text: String::new(), version: 0, published: None }
            }
        }
    }
}

pub(crate) fn apply_change(
    text: &str,
    change: &TextDocumentContentChangeEvent,
    encoding: PositionEncoding,
) -> Result<String, String> {
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
