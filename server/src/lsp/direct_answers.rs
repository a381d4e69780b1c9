//! Responses a handler writes to the client itself, past tower-lsp-server.
//!
//! tower-lsp-server turns every response into a `serde_json::Value` tree before writing it. For
//! a full diagnostic report of a large script that costs about ten times writing the JSON
//! straight out (1.2–1.5 ms against 0.14 ms for the benchmark script's 397 diagnostics,
//! BENCHMARKS.md), on every keystroke that moves a diagnostic in an editor that pulls them. So
//! the service is wrapped: while a request that may be answered directly is handled, its id is
//! known to the handler, which may write the response to the outbox itself and say so. The
//! transport's own response for it is then dropped. Everything else about the request (the
//! lifecycle's checks, cancellation, a panic caught in the handler) stays with tower-lsp-server:
//! a request it refuses or cancels never reaches the point where the handler writes.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tower_lsp_server::jsonrpc::{Id, Request, Response};
use tower_lsp_server::ls_types::request::{DocumentDiagnosticRequest, Request as _};
use tower_service::Service;

tokio::task_local! {
    /// The request being handled on this task, when its handler may answer it directly.
    static ANSWERING: Answering;
}

struct Answering {
    id: Id,
    /// Set once the handler has queued the response itself.
    sent: Cell<bool>,
}

/// The methods whose handlers may answer directly.
const DIRECT: [&str; 1] = [DocumentDiagnosticRequest::METHOD];

/// The id of the request this task is handling, when its handler may write the response itself
/// (then it must call [`answered`] once it has queued it).
pub fn request_id() -> Option<Id> {
    ANSWERING.try_with(|answering| answering.id.clone()).ok()
}

/// The handler has queued the response to [`request_id`]'s request itself: the one it returns
/// is dropped.
pub fn answered() {
    // Outside a direct request there is nothing to mark, and the handler's result goes out.
    let _ = ANSWERING.try_with(|answering| answering.sent.set(true));
}

/// A service that lets the handlers of [`DIRECT`] requests answer them directly.
pub struct DirectAnswers<S> {
    inner: S,
}

impl<S> DirectAnswers<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

type Answer<E> = Pin<Box<dyn Future<Output = Result<Option<Response>, E>> + Send>>;

impl<S> Service<Request> for DirectAnswers<S>
where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = Answer<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let direct = request.id().filter(|_| DIRECT.contains(&request.method())).cloned();
        let response = self.inner.call(request);
        let Some(id) = direct else { return Box::pin(response) };
        Box::pin(ANSWERING.scope(Answering { id, sent: Cell::new(false) }, async move {
            let response = response.await?;
            Ok(if ANSWERING.with(|answering| answering.sent.get()) { None } else { response })
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A handler in miniature: it returns a response that says which id it was told, after
    /// answering directly when it may and `answers` says it does.
    struct Handler {
        answers: bool,
    }

    impl Service<Request> for Handler {
        type Response = Option<Response>;
        type Error = std::convert::Infallible;
        type Future = Answer<Self::Error>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request) -> Self::Future {
            let id = request.id().cloned().unwrap_or(Id::Null);
            let answers = self.answers;
            Box::pin(async move {
                let told = request_id();
                if answers && told.is_some() {
                    answered();
                }
                Ok(Some(Response::from_ok(id, json!({ "told": told.map(|id| id.to_string()) }))))
            })
        }
    }

    fn request(method: &'static str, id: i64) -> Request {
        Request::build(method).id(id).params(json!({})).finish()
    }

    #[tokio::test]
    async fn a_direct_answer_leaves_the_transport_nothing_to_send() {
        let mut service = DirectAnswers::new(Handler { answers: true });
        let pulled = service.call(request("textDocument/diagnostic", 7)).await.unwrap();
        assert_eq!(pulled, None, "the handler answered it itself");

        let hover = service.call(request("textDocument/hover", 8)).await.unwrap().expect("a response");
        assert_eq!(hover.result(), Some(&json!({"told": null})), "a hover handler is told no id");
        assert_eq!(request_id(), None, "outside a handler there is no request to answer");
    }

    /// A handler of a direct method that returns its response instead (an error, say) has it sent
    /// by the transport as usual.
    #[tokio::test]
    async fn a_response_returned_instead_is_sent() {
        let mut service = DirectAnswers::new(Handler { answers: false });
        let response = service.call(request("textDocument/diagnostic", 9)).await.unwrap().expect("a response");
        assert_eq!(response.result(), Some(&json!({"told": "9"})));
    }
}
