//! What every handler and background task shares: the client connection, the session, and the
//! machinery that runs engine work off the async threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::{MessageType, Uri};
use tree_sitter::Tree;

use crate::diagnostic::Diagnostic;
use crate::lint::{LintContext, lint};
use crate::lsp::diagnostics::{Publish, publish_frame};
use crate::lsp::log;
use crate::lsp::outbox::{Frame, Outbox};
use crate::lsp::position::PositionEncoding;
use crate::lsp::session::{LintResult, Session, SharedSession, Snapshot, Stored};

#[derive(Clone)]
pub struct ServerContext {
    pub client: Client,
    pub session: SharedSession,
    /// Where diagnostics are published: straight to the client, not through `client`.
    outbox: Outbox,
    /// Held from the "is this result still current?" check until the publish is queued, so a
    /// result for an older version can never be sent after one for a newer version. Taken on
    /// the threads that lint and on the blocking pool, never on an async thread.
    publish_order: Arc<Mutex<()>>,
}

impl ServerContext {
    pub fn new(client: Client, outbox: Outbox) -> Self {
        Self { client, session: SharedSession::default(), outbox, publish_order: Arc::default() }
    }

    /// Log to the client's output panel and to the server's own log.
    pub async fn log(&self, level: MessageType, message: impl Into<String>) {
        let message = message.into();
        log::write(&message);
        self.client.log_message(level, message).await;
    }

    /// Show a configuration problem to the user, once per session and configuration.
    pub async fn report_problem(&self, problem: &str) {
        let first_time = self.session.lock().reported_problems.insert(problem.to_owned());
        if first_time {
            log::write(problem);
            self.client.show_message(MessageType::ERROR, problem).await;
        }
    }

    /// Run engine work on the blocking pool. A panic there becomes an internal error for this
    /// request, logged to the client, and the server keeps running.
    pub async fn blocking<T, F>(&self, what: &'static str, work: F) -> jsonrpc::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match tokio::task::spawn_blocking(work).await {
            Ok(value) => Ok(value),
            Err(error) => {
                let reason = match error.try_into_panic() {
                    Ok(payload) => panic_message(payload.as_ref()),
                    Err(error) => error.to_string(),
                };
                Err(self.failed(what, reason).await)
            }
        }
    }

    /// Run a lint on the pool whose threads its parallel parts use, as [`ServerContext::blocking`]
    /// runs other work. Entering that pool once, rather than from a blocking thread at each of
    /// the lint's parallel parts, spares a hand-over between threads at each, and on a busy
    /// machine the slowest keystrokes wait on exactly those (BENCHMARKS.md). Not for work that
    /// blocks: it would hold a lint's thread.
    pub async fn computing<T, F>(&self, what: &'static str, work: F) -> jsonrpc::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (done, result) = tokio::sync::oneshot::channel();
        rayon::spawn(move || drop(done.send(catch_unwind(AssertUnwindSafe(work)))));
        match result.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(payload)) => Err(self.failed(what, panic_message(payload.as_ref())).await),
            Err(_) => Err(self.failed(what, "the lint's thread ended without an answer".to_owned()).await),
        }
    }

    /// [`ServerContext::computing`] for work that no one waits for: a panic is logged. Must be
    /// called inside the async runtime, which logs it.
    pub fn computing_in_background(&self, what: &'static str, work: impl FnOnce() + Send + 'static) {
        let context = self.clone();
        let runtime = tokio::runtime::Handle::current();
        rayon::spawn(move || {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(work)) {
                let reason = panic_message(payload.as_ref());
                runtime.spawn(async move { drop(context.failed(what, reason).await) });
            }
        });
    }

    /// Log that engine work failed, and the error that answers the request it was for.
    async fn failed(&self, what: &'static str, reason: String) -> jsonrpc::Error {
        self.log(MessageType::ERROR, format!("culint: {what} failed: {reason}")).await;
        jsonrpc::Error {
            code: jsonrpc::ErrorCode::InternalError,
            message: format!("culint: {what} failed: {reason}").into(),
            data: None,
        }
    }

    /// Run synchronous handler code, turning a panic into a logged internal error.
    pub async fn guarded<T>(
        &self,
        what: &'static str,
        work: impl FnOnce() -> jsonrpc::Result<T>,
    ) -> jsonrpc::Result<T> {
        match catch_unwind(AssertUnwindSafe(work)) {
            Ok(result) => result,
            Err(payload) => {
                let reason = panic_message(payload.as_ref());
                self.log(MessageType::ERROR, format!("culint: {what} failed: {reason}")).await;
                Err(jsonrpc::Error::internal_error())
            }
        }
    }

    /// Lint the document as it is now, unless a fresh result is cached. `None` when the document
    /// changed (or closed) while it was being linted: such a result must not be shown.
    pub async fn lint_current(&self, uri: &Uri) -> jsonrpc::Result<Option<(Snapshot, Arc<Vec<Diagnostic>>)>> {
        let (snapshot, cached) = self.to_lint(uri).await?;
        if let Some(result) = cached {
            return Ok(Some((snapshot, result.diagnostics)));
        }
        let input = snapshot.clone();
        let linted = self.computing("lint", move || lint_snapshot_then(&input, |_| ()).0).await?;
        let diagnostics = Arc::clone(&linted.diagnostics);
        let Some(leftovers) = Leftovers::of_stored(&mut self.session.lock(), &snapshot, linted) else {
            return Ok(None);
        };
        leftovers.free_in_background();
        Ok(Some((snapshot, diagnostics)))
    }

    /// The document to lint, and its result when a fresh one is cached; a configuration problem
    /// the document's lint meets is shown first.
    async fn to_lint(&self, uri: &Uri) -> jsonrpc::Result<(Snapshot, Option<LintResult>)> {
        let (snapshot, cached) = self.snapshot_to_lint(uri)?;
        if let Some(problem) = problem_to_show(&snapshot, &cached) {
            self.report_problem(problem).await;
        }
        Ok((snapshot, cached))
    }

    /// [`ServerContext::to_lint`] without showing a configuration problem.
    fn snapshot_to_lint(&self, uri: &Uri) -> jsonrpc::Result<(Snapshot, Option<LintResult>)> {
        let session = self.session.lock();
        let Some(snapshot) = session.snapshot(uri) else { return Err(unknown_document(uri)) };
        let cached = session.fresh_result(uri);
        Ok((snapshot, cached))
    }

    /// Lint a document in the background and push the result, if it is still current when done.
    /// Used only when the client does not pull diagnostics.
    ///
    /// The lint is handed to its pool from here, on the thread that applied the edit: through an
    /// async task it would wait for an async thread to wake and hand it on, 0.06 ms at the median
    /// and 0.13 ms at p99 of a keystroke (BENCHMARKS.md). Only a lint that must first show a
    /// configuration problem, which is sent from an async task, goes that way.
    pub fn spawn_publish(&self, uri: Uri) {
        // Closed before its lint began: there is nothing to publish.
        let Ok((snapshot, cached)) = self.snapshot_to_lint(&uri) else { return };
        match problem_to_show(&snapshot, &cached).map(str::to_owned) {
            None => self.publish_in_background(snapshot, cached),
            Some(problem) => {
                let context = self.clone();
                tokio::spawn(async move {
                    context.report_problem(&problem).await;
                    context.publish_in_background(snapshot, cached);
                });
            }
        }
    }

    fn publish_in_background(&self, snapshot: Snapshot, cached: Option<LintResult>) {
        let encoding = self.session.lock().features.encoding;
        let context = self.clone();
        self.computing_in_background("lint", move || context.publish_now(&snapshot, cached, encoding));
    }

    /// Lint `snapshot` (unless `cached` holds its result), store the result and queue it for the
    /// client if it is still current, all on the lint's thread: the findings are still in this
    /// core's cache, and no async thread has to wake before the publish goes out (that hand-over
    /// cost about 8% of the median keystroke on a busy machine, BENCHMARKS.md). The output thread
    /// writes it: writing here instead measured slower.
    fn publish_now(&self, snapshot: &Snapshot, cached: Option<LintResult>, encoding: PositionEncoding) {
        let frame = |diagnostics: &[Diagnostic]| {
            publish_frame(&snapshot.uri, snapshot.version, diagnostics, &snapshot.positions(encoding))
        };
        let (frame, linted) = match cached {
            Some(result) => (frame(&result.diagnostics), None),
            None => {
                let (linted, frame) = lint_snapshot_then(snapshot, frame);
                (frame, Some(linted))
            }
        };
        let order = self.publish_order.lock().unwrap_or_else(PoisonError::into_inner);
        let leftovers = {
            let mut session = self.session.lock();
            match linted {
                // A newer edit makes the result stale: it is neither kept nor shown.
                Some(linted) => {
                    let Some(leftovers) = Leftovers::of_stored(&mut session, snapshot, linted) else { return };
                    leftovers
                }
                None if session.is_current(snapshot) => Leftovers::default(),
                None => return,
            }
        };
        self.outbox.send_now(frame);
        drop(order);
        leftovers.free_in_background();
    }

    /// Queue a response that a handler wrote itself (see `direct_answers`).
    pub async fn answer_directly(&self, frame: Frame) {
        self.outbox.send(frame).await;
        crate::lsp::direct_answers::answered();
    }

    /// Withdraw pushed diagnostics (the document was closed), in order with pending publishes.
    pub async fn clear_diagnostics(&self, uri: Uri) {
        let (order, outbox) = (Arc::clone(&self.publish_order), self.outbox.clone());
        let clear = move || {
            let _order = order.lock().unwrap_or_else(PoisonError::into_inner);
            outbox.send_now(Publish { uri: &uri, diagnostics: Vec::new(), version: None }.frame());
        };
        // A panic is logged by `blocking`; there is nothing to answer.
        let _ = self.blocking("didClose", clear).await;
    }

    /// After settings, configuration files or hardware facts changed: reload the configuration,
    /// then push fresh diagnostics for every open document, or ask a pulling client to pull again.
    pub async fn refresh_diagnostics(&self) {
        self.session.lock().reload_configuration();
        self.relint_open_documents().await;
    }

    /// Push fresh diagnostics for every open document, or ask a pulling client to pull again:
    /// something they may depend on (another file of the project) changed.
    pub async fn relint_open_documents(&self) {
        let notebooks = self.session.lock().notebooks.touch_all();
        for notebook in notebooks {
            let context = self.clone();
            tokio::spawn(async move { crate::lsp::notebooks::lint_and_publish(&context, notebook).await });
        }
        let (pull, refresh, uris) = {
            let mut session = self.session.lock();
            session.generation += 1;
            let uris: Vec<Uri> = session.documents.keys().cloned().collect();
            (session.features.pull_diagnostics, session.features.diagnostic_refresh, uris)
        };
        if pull {
            if refresh && let Err(error) = self.client.workspace_diagnostic_refresh().await {
                self.log(MessageType::WARNING, format!("culint: diagnostic refresh was refused: {error}")).await;
            }
            return;
        }
        for uri in uris {
            self.spawn_publish(uri);
        }
    }
}

/// What a lint of a buffer let go of: the result it replaced, freed on a lint's thread once the
/// diagnostics are on their way rather than on the async thread that handles the next message.
#[derive(Default)]
pub struct Leftovers {
    replaced: Option<LintResult>,
}

impl Leftovers {
    /// Store a lint's result in the session ([`Session::store`]); what it lets go of, or `None`
    /// when the result is stale and was not kept.
    fn of_stored(session: &mut Session, snapshot: &Snapshot, linted: Linted) -> Option<Self> {
        match session.store(snapshot, linted.diagnostics, linted.tree.as_ref()) {
            Stored::Kept { replaced } => Some(Leftovers { replaced }),
            Stored::Stale => None,
        }
    }

    pub fn free_in_background(self) {
        if let Some(replaced) = self.replaced {
            rayon::spawn(move || drop(replaced));
        }
    }
}

/// A lint's diagnostics and the tree it was made on, which the session keeps for a buffer that
/// had none ([`Session::store`]).
struct Linted {
    diagnostics: Arc<Vec<Diagnostic>>,
    tree: Option<Tree>,
}

/// The engine call behind every diagnostic the server reports: a lint of `snapshot` on
/// [`Snapshot::tree_to_lint`] (none for an excluded file, which gets no diagnostics), with what
/// `then` makes of the diagnostics.
fn lint_snapshot_then<T: Send>(snapshot: &Snapshot, then: impl FnOnce(&[Diagnostic]) -> T + Send) -> (Linted, T) {
    let context = LintContext {
        path: snapshot.path.as_deref(),
        project: Some(&snapshot.project),
        code_kind: snapshot.code_kind,
        preview: snapshot.preview,
    };
    let tree = snapshot.tree_to_lint();
    let diagnostics = match &tree {
        None => Vec::new(),
        Some(tree) => lint(&snapshot.text, tree, context, &snapshot.settings),
    };
    let made = then(&diagnostics);
    (Linted { diagnostics: Arc::new(diagnostics), tree }, made)
}

pub fn unknown_document(uri: &Uri) -> jsonrpc::Error {
    jsonrpc::Error::invalid_params(format!(
        "culint has no open document {}: send textDocument/didOpen before requests about it",
        uri.as_str()
    ))
}

/// The configuration problem to show before `snapshot` is linted: only a lint that runs meets it,
/// not a result that was cached.
fn problem_to_show<'s>(snapshot: &'s Snapshot, cached: &Option<LintResult>) -> Option<&'s str> {
    snapshot.config_problem.as_deref().filter(|_| cached.is_none())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "panic with a non-text payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tower_lsp_server::jsonrpc::{ErrorCode, Result};

    use crate::lsp::testing::{TestClient, basic_capabilities};

    #[tokio::test]
    async fn a_panic_in_engine_work_becomes_a_logged_internal_error() {
        let (mut client, _, context) = TestClient::start_with_context(basic_capabilities(), json!({})).await;
        let error = context.blocking("hover", || -> usize { panic!("rule exploded") }).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::InternalError);
        assert!(error.message.contains("hover failed: rule exploded"), "{}", error.message);
        let error = context.computing("lint", || -> usize { panic!("rule exploded") }).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::InternalError);
        assert!(error.message.contains("lint failed: rule exploded"), "{}", error.message);
        context.computing_in_background("publish", || panic!("nobody waits"));
        let guarded = context.guarded("didChange", || -> Result<()> { panic!("edit exploded") }).await;
        assert_eq!(guarded.unwrap_err().code, ErrorCode::InternalError);
        for text in [
            "culint: hover failed: rule exploded",
            "culint: lint failed: rule exploded",
            "culint: didChange failed: edit exploded",
            "culint: publish failed: nobody waits",
        ] {
            let logged =
                client.wait_for(|m| m["method"] == "window/logMessage" && m["params"]["message"] == text).await;
            assert_eq!(logged["params"]["type"], 1);
        }
        // Still serving.
        assert!(client.request("workspace/executeCommand", json!({"command": "culint.nope"})).await.is_err());
        client.shutdown().await;
    }
}
