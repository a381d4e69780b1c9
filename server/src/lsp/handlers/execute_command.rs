//! `workspace/executeCommand`: dispatch to `commands/<name>.rs`.

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::ExecuteCommandParams;

use crate::lsp::commands::{self, apply_all_fixes};
use crate::lsp::context::ServerContext;

pub async fn execute_command(context: &ServerContext, params: ExecuteCommandParams) -> Result<Option<Value>> {
    match params.command.as_str() {
        apply_all_fixes::NAME => apply_all_fixes::run(context, &params.arguments).await,
        other => Err(Error::invalid_params(format!(
            "culint has no command `{other}`; its commands are {}",
            commands::ALL.join(", ")
        ))),
    }
}
