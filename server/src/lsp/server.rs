//! The `LanguageServer` implementation: one line per method, each delegating to
//! `handlers/<method>.rs`.

use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{ClientSocket, LanguageServer, LspService};

use crate::lsp::context::ServerContext;
use crate::lsp::direct_answers::DirectAnswers;
use crate::lsp::handlers;
use crate::lsp::outbox::Outbox;

/// How many requests may be in flight at once. Notifications queue behind in-flight requests,
/// so this is well above the handful a client keeps open (diagnostics, hover, code actions).
const MAX_CONCURRENCY: usize = 32;

/// How long `exit` waits for the transport to wind down before the session ends regardless.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

pub struct Server {
    context: ServerContext,
}

impl Server {
    /// The service and the socket of its `Client`, for a transport that writes to the outbox the
    /// server's own notifications go to (see `outbox`). Also hands out the context, for the
    /// session's state and for tests that call into it. Must be called inside a tokio runtime.
    pub fn connect(outbox: Outbox) -> (DirectAnswers<LspService<Server>>, ClientSocket, ServerContext) {
        let mut context = None;
        let (service, socket) = LspService::new(|client| {
            let server = Server { context: ServerContext::new(client, outbox) };
            context = Some(server.context.clone());
            server
        });
        (DirectAnswers::new(service), socket, context.expect("the service built the server"))
    }
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        handlers::initialize::initialize(&self.context, params).await
    }

    async fn initialized(&self, params: InitializedParams) {
        handlers::initialized::initialized(&self.context, params).await
    }

    async fn shutdown(&self) -> Result<()> {
        handlers::shutdown::shutdown(&self.context).await
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        handlers::did_open::did_open(&self.context, params).await
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        handlers::did_change::did_change(&self.context, params).await
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        handlers::did_close::did_close(&self.context, params).await
    }

    async fn notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        handlers::notebook_did_open::notebook_did_open(&self.context, params).await
    }

    async fn notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        handlers::notebook_did_change::notebook_did_change(&self.context, params).await
    }

    async fn notebook_did_save(&self, params: DidSaveNotebookDocumentParams) {
        handlers::notebook_did_save::notebook_did_save(&self.context, params).await
    }

    async fn notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        handlers::notebook_did_close::notebook_did_close(&self.context, params).await
    }

    async fn diagnostic(&self, params: DocumentDiagnosticParams) -> Result<DocumentDiagnosticReportResult> {
        handlers::document_diagnostic::document_diagnostic(&self.context, params).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        handlers::code_action::code_action(&self.context, params).await
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        handlers::hover::hover(&self.context, params).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        handlers::execute_command::execute_command(&self.context, params).await
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        handlers::did_change_configuration::did_change_configuration(&self.context, params).await
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        handlers::did_change_watched_files::did_change_watched_files(&self.context, params).await
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        handlers::did_change_workspace_folders::did_change_workspace_folders(&self.context, params).await
    }
}

/// How the session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// `shutdown` then `exit`, as the protocol asks.
    Orderly,
    /// `exit` without `shutdown`, or the input closed: the process should exit with code 1.
    Abrupt,
}

/// Serve LSP over a reader in and a writer out (stdin and stdout, see `stdio`), each on a thread
/// of its own, until the client sends `exit` or closes the input. Malformed messages are dropped
/// before the transport sees them (see `framing`), so one of them does not end the session.
/// Fails only when those threads cannot be started.
pub async fn serve<I, O>(input: I, output: O) -> std::io::Result<Ending>
where
    I: std::io::Read + Send + 'static,
    O: std::io::Write + Send + 'static,
{
    let (outbox, output) = Outbox::start(output)?;
    let (service, socket, _) = Server::connect(outbox);
    let (input, exit_received, shutdown_received) = super::framing::well_formed_messages(input)?;
    let serving =
        tower_lsp_server::Server::new(input, output, socket).concurrency_level(MAX_CONCURRENCY).serve(service);
    // The transport returns only once every handler has finished, and a handler may be waiting
    // for a client that has stopped answering (a `client/registerCapability` in flight at
    // `exit`). The protocol says to exit at once, so after a moment for the transport to see
    // `exit` itself, the session ends whatever is still pending.
    let exited = async {
        if exit_received.await.is_ok() {
            tokio::time::sleep(EXIT_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = serving => {}
        () = exited => {}
    }
    Ok(if shutdown_received.load(std::sync::atomic::Ordering::SeqCst) { Ending::Orderly } else { Ending::Abrupt })
}
