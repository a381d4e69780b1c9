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

use crate::diagnostic::Diagnostic;
use crate::document::Document;
use crate::hardware::HardwareFacts;
use crate::lint::LintSettings;
use crate::lsp::capabilities::ClientFeatures;
use crate::lsp::settings::ClientSettings;

/// An open buffer and the last lint result computed for it.
pub struct OpenDocument {
    pub document: Document,
    /// The file behind the buffer, when the URI is a `file:` URI.
    pub path: Option<PathBuf>,
    /// Counts every change, so a result is never mistaken for current when a client repeats
    /// a version number.
    pub revision: u64,
    pub linted: Option<LintResult>,
}

impl OpenDocument {
    pub fn new(document: Document, path: Option<PathBuf>) -> Self {
        Self { document, path, revision: 0, linted: None }
    }
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
    pub text: Arc<str>,
    pub tree: Tree,
    pub path: Option<PathBuf>,
    pub settings: Arc<LintSettings>,
    pub client_settings: Arc<ClientSettings>,
}

#[derive(Default)]
pub struct Session {
    pub features: ClientFeatures,
    pub settings: Arc<ClientSettings>,
    /// Bumped whenever anything other than the text can change a lint result (settings, config
    /// files, hardware facts), so cached results of the same version are recognised as stale.
    pub generation: u64,
    pub workspace_folders: Vec<PathBuf>,
    pub hardware: Option<HardwareFacts>,
    pub documents: HashMap<Uri, OpenDocument>,
    pub shutdown_requested: bool,
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

    /// The lint settings for a file: the editor's settings over the project's configuration.
    pub fn lint_settings_for(&self, _path: Option<&Path>) -> LintSettings {
        let mut settings = self.settings.apply_to(LintSettings::default());
        settings.hardware.clone_from(&self.hardware);
        settings
    }

    pub fn snapshot(&self, uri: &Uri) -> Option<Snapshot> {
        let open = self.documents.get(uri)?;
        let text: Arc<str> = Arc::from(open.document.to_text());
        Some(Snapshot {
            uri: uri.clone(),
            version: open.document.version(),
            revision: open.revision,
            generation: self.generation,
            text,
            tree: open.document.tree().clone(),
            path: open.path.clone(),
            settings: Arc::new(self.lint_settings_for(open.path.as_deref())),
            client_settings: self.settings.clone(),
        })
    }

    /// The cached result, if it was computed for the document's current version and settings.
    pub fn fresh_result(&self, uri: &Uri) -> Option<LintResult> {
        let open = self.documents.get(uri)?;
        open.linted.as_ref().filter(|r| r.revision == open.revision && r.generation == self.generation).cloned()
    }

    /// Whether `snapshot` still describes the document as it is now.
    pub fn is_current(&self, snapshot: &Snapshot) -> bool {
        self.generation == snapshot.generation
            && self.documents.get(&snapshot.uri).is_some_and(|open| open.revision == snapshot.revision)
    }

    /// Store a result if it is still current; returns whether it was.
    pub fn store(&mut self, snapshot: &Snapshot, diagnostics: Arc<Vec<Diagnostic>>) -> bool {
        if !self.is_current(snapshot) {
            return false;
        }
        let open = self.documents.get_mut(&snapshot.uri).expect("is_current checked the document");
        open.linted = Some(LintResult { revision: snapshot.revision, generation: snapshot.generation, diagnostics });
        true
    }
}

/// The file system path of a `file:` URI.
pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    is_file.then(|| uri.to_file_path().map(|p| p.into_owned())).flatten()
}
