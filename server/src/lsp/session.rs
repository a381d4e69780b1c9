//! The server's state between messages: open documents, settings, workspace folders and the
//! cached hardware facts.
//!
//! One `std::sync::Mutex` guards it. Handlers hold the lock only for bookkeeping (applying an
//! edit, taking a snapshot, storing a result) and never across an `await` or a lint run, so the
//! lock is never contended for long and notifications are applied in the order they arrive.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tower_lsp_server::ls_types::Uri;
use tree_sitter::Tree;

use crate::config::{Overrides, Resolver};
use crate::diagnostic::Diagnostic;
use crate::document::{Document, SharedText};
use crate::fix::Applicability;
use crate::hardware::HardwareFacts;
use crate::knowledge::Lang;
use crate::lint::LintSettings;
use crate::lsp::capabilities::ClientFeatures;
use crate::lsp::position::{LineStarts, PositionEncoding, PositionMapper};
use crate::lsp::settings::ClientSettings;
use crate::probe::ProbeReport;
use crate::project::ProjectIndex;
use crate::text::{Difference, TextRange};

/// An open buffer and the last lint result computed for it.
pub struct OpenDocument {
    /// Edited only through [`OpenDocument::edit`] and [`OpenDocument::replace`], which keep
    /// `lines` in step.
    document: Document,
    /// Where the buffer's lines start, shared with lint snapshots.
    lines: Arc<LineStarts>,
    /// The file behind the buffer, when the URI is a `file:` URI.
    pub path: Option<PathBuf>,
    /// Counts every change, so a result is never mistaken for current when a client repeats
    /// a version number.
    pub revision: u64,
    pub linted: Option<LintResult>,
}

impl OpenDocument {
    pub fn new(document: Document, path: Option<PathBuf>) -> Self {
        let lines = Arc::new(LineStarts::of(document.text()));
        Self { document, lines, path, revision: 0, linted: None }
    }

    /// The buffer: its text, version and tree.
    pub fn document(&self) -> &Document {
        &self.document
    }

    pub fn set_version(&mut self, version: i32) {
        self.document.set_version(version);
    }

    /// The buffer's tree, parsed now if the buffer has none yet.
    pub fn tree(&mut self) -> &Tree {
        self.document.tree()
    }

    /// Replace the bytes in `range` with `new_text`. The tree follows at [`OpenDocument::reparse`],
    /// once for all the edits of a change.
    pub fn edit(&mut self, range: TextRange, new_text: &str) {
        self.document.edit_text(range, new_text);
        Arc::make_mut(&mut self.lines).edit(self.document.text(), range, new_text.len());
    }

    /// Reparse the edited text, against the tree before the edits.
    pub fn reparse(&mut self) {
        self.document.reparse();
    }

    /// Take the tree a lint parsed for a buffer that holds none ([`Document::keep_tree`]).
    pub fn keep_tree(&mut self, tree: &Tree) {
        self.document.keep_tree(tree);
    }

    /// Give up the tree (the buffer is no longer among those being edited).
    fn give_up(&mut self) -> GivenUp {
        GivenUp { tree: self.document.take_tree() }
    }

    /// Replace the whole text (a change without a range). It is applied as an edit of the bytes
    /// that differ: the tree is reparsed incrementally, as after a change with a range.
    pub fn replace(&mut self, text: &str) {
        if let Some((range, inserted)) = Difference::edit(self.document.text(), text) {
            self.edit(range, inserted);
        }
        debug_assert_eq!(self.document.text(), text);
    }

    /// Positions in the buffer as the client counts them.
    pub fn positions(&self, encoding: PositionEncoding) -> PositionMapper<'_> {
        PositionMapper::with_lines(self.document.text(), &self.lines, encoding)
    }
}

/// What a buffer that is no longer being edited gave up ([`Session::note_active`],
/// [`Session::close`]).
struct GivenUp {
    tree: Option<Tree>,
}

impl GivenUp {
    /// Free it on a lint's thread: on a large file that reads memory all over the tree, too
    /// long for the async thread that handles the next message.
    fn free_in_background(self) {
        let GivenUp { tree } = self;
        rayon::spawn(move || drop(tree));
    }
}

/// What [`Session::store`] did with a lint's result.
pub enum Stored {
    /// The document changed (or closed) while it was linted: the result is not kept, and must
    /// not be shown.
    Stale,
    /// Kept as the document's current result. The result it replaced is the caller's to free
    /// when it can spare the time.
    Kept { replaced: Option<LintResult> },
}

/// Diagnostics for one version of a document under one generation of settings.
#[derive(Clone)]
pub struct LintResult {
    pub revision: u64,
    pub generation: u64,
    pub diagnostics: Arc<Vec<Diagnostic>>,
}

/// Everything a lint run needs, copied out of the session so the run holds no lock.
#[derive(Clone)]
pub struct Snapshot {
    pub uri: Uri,
    pub version: i32,
    pub revision: u64,
    pub generation: u64,
    pub text: SharedText,
    /// Where the lines of `text` start.
    pub lines: Arc<LineStarts>,
    /// The document's tree, unless the idle document gave it up; see [`Snapshot::tree`].
    pub parsed: Option<Tree>,
    pub path: Option<PathBuf>,
    pub settings: Arc<LintSettings>,
    /// Summaries of the project's other modules, shared by the whole session.
    pub project: Arc<ProjectIndex>,
    /// Fix-all applies fixes at or above this: safe only, unless unsafe fixes are switched on
    /// in the editor or the project's configuration.
    pub fix_threshold: Applicability,
    /// The project's configuration excludes the file: it gets no diagnostics.
    pub excluded: bool,
    /// Why the project's configuration could not be used for this file, if it could not.
    pub config_problem: Option<String>,
    /// What the configuration's `code-kind` says the file is.
    pub code_kind: Option<crate::semantic::CodeKind>,
    /// Report preview findings too.
    pub preview: bool,
}

impl Snapshot {
    /// The syntax tree of the snapshot's text: the document's own, or a fresh parse when the
    /// document had given its tree up (done on the lint thread, never under the session lock).
    pub fn tree(&self) -> Tree {
        self.parsed.clone().unwrap_or_else(|| crate::parse::parse(&self.text, None))
    }

    /// The tree a lint of the snapshot works on, `None` for a file the configuration excludes.
    pub fn tree_to_lint(&self) -> Option<Tree> {
        (!self.excluded).then(|| self.tree())
    }

    /// Positions in the snapshot's text as the client counts them.
    pub fn positions(&self, encoding: PositionEncoding) -> PositionMapper<'_> {
        PositionMapper::with_lines(&self.text, &self.lines, encoding)
    }
}

/// How many of the documents opened or edited last keep their syntax tree between lint runs. An
/// edit to any other document is parsed from scratch by its lint, which costs a few milliseconds
/// for a script and tens for a ten-thousand-line one; keeping every tree would cost many times
/// the size of all open text.
const RETAINED_TREES: usize = 8;

/// The settings for one file, resolved from the project's configuration and the editor's.
pub struct FileSettings {
    pub lint: LintSettings,
    pub unsafe_fixes: bool,
    pub preview: bool,
    pub excluded: bool,
    pub problem: Option<String>,
    /// What the configuration's `code-kind` says the file is, when a pattern matches it.
    pub code_kind: Option<crate::semantic::CodeKind>,
}

#[derive(Default)]
pub struct Session {
    pub features: ClientFeatures,
    pub settings: Arc<ClientSettings>,
    /// Finds and caches each directory's culint.toml / pyproject.toml, under the editor's
    /// settings; `None` when the editor's `configuration` file cannot be loaded.
    resolver: Option<Arc<Resolver>>,
    /// Why the resolver could not be built.
    resolver_problem: Option<String>,
    /// The language of hover texts and explanations, from the client's locale.
    pub lang: Lang,
    /// What the rules know about the project's other files (helpers called from a training
    /// loop), with open buffers overlaid on the files on disk.
    pub project: Arc<ProjectIndex>,
    /// The last `culint.probe` report of this session.
    pub probe: Option<Arc<ProbeReport>>,
    /// Configuration problems already shown, so each is shown once.
    pub reported_problems: std::collections::HashSet<String>,
    /// Bumped whenever anything other than the text can change a lint result (settings, config
    /// files, hardware facts), so cached results of the same version are recognised as stale.
    pub generation: u64,
    pub workspace_folders: Vec<PathBuf>,
    pub hardware: Option<HardwareFacts>,
    pub documents: HashMap<Uri, OpenDocument>,
    /// The open notebooks, whose cells are not among `documents`.
    pub notebooks: crate::lsp::notebook_documents::Notebooks,
    /// The documents opened or edited last, most recent first (at most [`RETAINED_TREES`]).
    recently_active: std::collections::VecDeque<Uri>,
    /// Problems found before the client could be told (settings read during `initialize`).
    pub pending_warnings: Vec<String>,
}

/// The session behind its lock, shared by the server and its background tasks.
#[derive(Clone, Default)]
pub struct SharedSession(Arc<Mutex<Session>>);

impl SharedSession {
    /// A handler that panicked while holding the lock leaves consistent-enough state behind
    /// (every mutation is a single assignment or map operation), so poisoning is not fatal.
    pub fn lock(&self) -> MutexGuard<'_, Session> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Session {
    pub fn document(&self, uri: &Uri) -> Option<&OpenDocument> {
        self.documents.get(uri)
    }

    /// Rebuild the configuration resolver after the editor's settings, the hardware facts or a
    /// configuration file changed (the resolver caches what it read).
    pub fn reload_configuration(&mut self) {
        let overrides = Overrides {
            config_file: self.settings.configuration.clone(),
            select: self.settings.select.clone(),
            extend_select: Vec::new(),
            ignore: self.settings.ignore.clone(),
            unsafe_fixes: self.settings.unsafe_fixes,
            preview: self.settings.preview,
            show_syntax_errors: self.settings.show_syntax_errors,
            hardware: self.hardware.clone(),
        };
        match Resolver::new(overrides) {
            Ok(resolver) => {
                self.resolver = Some(Arc::new(resolver));
                self.resolver_problem = None;
            }
            Err(error) => {
                self.resolver = None;
                self.resolver_problem = Some(format!(
                    "culint: the configuration file in the `configuration` setting cannot be used: {error}; \
                     linting with the editor's settings only"
                ));
            }
        }
        self.reported_problems.clear();
        self.generation += 1;
    }

    /// The settings for a file: its project's configuration (the nearest culint.toml or
    /// pyproject.toml, as `culint check` finds it) under the editor's settings.
    fn file_settings(&self, path: Option<&Path>) -> FileSettings {
        let editor_only = || {
            let mut lint = self.settings.apply_to(LintSettings::default());
            lint.hardware.clone_from(&self.hardware);
            lint
        };
        let unsafe_fixes = self.settings.unsafe_fixes.unwrap_or(false);
        let preview = self.settings.preview.unwrap_or(false);
        let Some(resolver) = &self.resolver else {
            return FileSettings {
                lint: editor_only(),
                unsafe_fixes,
                preview,
                excluded: false,
                problem: self.resolver_problem.clone(),
                code_kind: None,
            };
        };
        // An unsaved buffer takes the configuration of the first workspace folder.
        let path = match (path, self.workspace_folders.first()) {
            (Some(path), _) => path.to_path_buf(),
            (None, Some(folder)) => folder.join("untitled.py"),
            (None, None) => {
                return FileSettings {
                    lint: editor_only(),
                    unsafe_fixes,
                    preview,
                    excluded: false,
                    problem: None,
                    code_kind: None,
                };
            }
        };
        match resolver.settings_for(&path) {
            Ok(resolved) => {
                let mut lint = resolved.lint;
                self.settings.apply_severities(&mut lint);
                FileSettings {
                    lint,
                    unsafe_fixes: resolved.unsafe_fixes,
                    preview: resolved.preview,
                    excluded: resolver.is_excluded(&path).unwrap_or(false),
                    problem: None,
                    code_kind: resolved.code_kind,
                }
            }
            Err(error) => FileSettings {
                lint: editor_only(),
                unsafe_fixes,
                preview,
                excluded: false,
                problem: Some(format!("culint: {error}; linting with the editor's settings only")),
                code_kind: None,
            },
        }
    }

    /// The settings for a text that is not among the open documents (a notebook's program).
    pub fn settings_for(&self, path: Option<&Path>) -> FileSettings {
        self.file_settings(path)
    }

    pub fn snapshot(&self, uri: &Uri) -> Option<Snapshot> {
        let open = self.documents.get(uri)?;
        let text = open.document.shared_text();
        let settings = self.file_settings(open.path.as_deref());
        Some(Snapshot {
            uri: uri.clone(),
            version: open.document.version(),
            revision: open.revision,
            generation: self.generation,
            text,
            lines: Arc::clone(&open.lines),
            parsed: open.document.cached_tree().cloned(),
            path: open.path.clone(),
            settings: Arc::new(settings.lint),
            project: self.project.clone(),
            fix_threshold: if settings.unsafe_fixes { Applicability::Unsafe } else { Applicability::Safe },
            excluded: settings.excluded,
            config_problem: settings.problem,
            code_kind: settings.code_kind,
            preview: settings.preview,
        })
    }

    /// The cached result, if it was computed for the document's current version and settings.
    pub fn fresh_result(&self, uri: &Uri) -> Option<LintResult> {
        let open = self.documents.get(uri)?;
        open.linted.as_ref().filter(|r| r.revision == open.revision && r.generation == self.generation).cloned()
    }

    /// Let the project's summaries see an open buffer instead of the file on disk (`None`: the
    /// buffer closed).
    pub fn overlay(&self, uri: &Uri, text: Option<SharedText>) {
        if let Some(path) = path_of(uri) {
            self.project.set_overlay(&path, text);
        }
    }

    /// Whether `snapshot` still describes the document as it is now.
    pub fn is_current(&self, snapshot: &Snapshot) -> bool {
        self.generation == snapshot.generation
            && self.documents.get(&snapshot.uri).is_some_and(|open| open.revision == snapshot.revision)
    }

    /// Note that `uri` is being worked on, just opened or edited: its tree is worth keeping for
    /// the next keystroke's reparse. The buffer that drops out
    /// of the [`RETAINED_TREES`] most recent gives it up.
    pub fn note_active(&mut self, uri: &Uri) {
        if self.recently_active.front() == Some(uri) {
            return;
        }
        self.recently_active.retain(|u| u != uri);
        self.recently_active.push_front(uri.clone());
        let dropped_out = self.recently_active.split_off(RETAINED_TREES.min(self.recently_active.len()));
        if let Some(open) = dropped_out.front().and_then(|uri| self.documents.get_mut(uri)) {
            open.give_up().free_in_background();
        }
    }

    /// Forget a closed buffer. Its place among the buffers that keep their trees goes to the
    /// next one opened or edited.
    pub fn close(&mut self, uri: &Uri) {
        self.recently_active.retain(|u| u != uri);
        self.overlay(uri, None);
        if let Some(mut open) = self.documents.remove(uri) {
            open.give_up().free_in_background();
        }
    }

    /// Store a result if it is still current (see [`Stored`]), with the tree it was linted on:
    /// a buffer being edited keeps that tree if it had none, and one not opened or edited
    /// recently gives its tree up.
    pub fn store(&mut self, snapshot: &Snapshot, diagnostics: Arc<Vec<Diagnostic>>, tree: Option<&Tree>) -> Stored {
        if !self.is_current(snapshot) {
            return Stored::Stale;
        }
        let open = self.documents.get_mut(&snapshot.uri).expect("is_current checked the document");
        let result = LintResult { revision: snapshot.revision, generation: snapshot.generation, diagnostics };
        let replaced = open.linted.replace(result);
        if self.recently_active.contains(&snapshot.uri) {
            if let Some(tree) = tree {
                open.keep_tree(tree);
            }
        } else {
            open.document.drop_tree();
        }
        Stored::Kept { replaced }
    }
}

/// The file system path of a `file:` URI.
pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    is_file.then(|| uri.to_file_path().map(|p| p.into_owned())).flatten()
}
