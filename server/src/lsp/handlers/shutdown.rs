//! `shutdown`: tower-lsp-server refuses every request after it, and `exit`, which it handles too,
//! then ends the process. Whether `shutdown` came before `exit`, which decides the exit code, is
//! noted as the messages arrive (see `framing`): the transport may see `exit` before this has run.

use tower_lsp_server::jsonrpc::Result;

use crate::lsp::context::ServerContext;

pub async fn shutdown(_context: &ServerContext) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::lsp::testing::{TestClient, basic_capabilities, position, uri};

    #[tokio::test]
    async fn requests_after_shutdown_are_refused() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        client.open(&uri("a.py"), "x = 1\n").await;
        assert_eq!(client.request("shutdown", Value::Null).await.unwrap(), Value::Null);
        let hover = json!({"textDocument": {"uri": uri("a.py")}, "position": position(0, 0)});
        let error = client.request("textDocument/hover", hover).await.unwrap_err();
        assert_eq!(error["code"], -32600);
        client.notify("exit", Value::Null).await;
    }
}
