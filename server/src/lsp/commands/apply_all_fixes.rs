//! `culint.applyAllFixes`: fix a whole document through `workspace/applyEdit`.
//!
//! Arguments: the document's URI, as a string or as `{"uri": "..."}`. Returns
//! `{"applied": bool, "fixes": n}`.

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::Uri;

use crate::lsp::context::{ServerContext, unknown_document};
use crate::lsp::edits::{fix_all, text_edits, workspace_edit};

pub const NAME: &str = "culint.applyAllFixes";

pub async fn run(context: &ServerContext, arguments: &[Value]) -> Result<Option<Value>> {
    let uri = document_argument(arguments)?;
    if !context.session.lock().features.apply_edit {
        return Err(Error {
            code: tower_lsp_server::jsonrpc::ErrorCode::InvalidRequest,
            message: format!(
                "{NAME} needs workspace/applyEdit, which this client does not support; use the \
                 `source.fixAll.culint` code action instead"
            )
            .into(),
            data: None,
        });
    }
    if let Some(fixed) = crate::lsp::notebooks::fix_all(context, &uri).await {
        // A notebook cell: the fixes of the whole notebook.
        let (edit, fixes) = fixed?;
        let Some(edit) = edit else { return Ok(Some(json!({"applied": false, "fixes": 0}))) };
        let response = context.client.apply_edit(edit).await?;
        return Ok(Some(json!({"applied": response.applied, "fixes": if response.applied { fixes } else { 0 }})));
    }
    let (snapshot, encoding, versioned) = {
        let session = context.session.lock();
        let snapshot = session.snapshot(&uri).ok_or_else(|| unknown_document(&uri))?;
        (snapshot, session.features.encoding, session.features.versioned_edits)
    };
    let input = snapshot.clone();
    let outcome = context.blocking("apply all fixes", move || fix_all(&input)).await?;
    if outcome.edits.is_empty() {
        return Ok(Some(json!({"applied": false, "fixes": 0})));
    }
    let mapper = snapshot.positions(encoding);
    let edit = workspace_edit(&uri, versioned.then_some(snapshot.version), text_edits(&outcome.edits, &mapper));
    let response = context.client.apply_edit(edit).await?;
    Ok(Some(json!({"applied": response.applied, "fixes": if response.applied { outcome.fixed } else { 0 }})))
}

/// The document a command acts on: its first argument, a URI string or an object with `uri`.
pub fn document_argument(arguments: &[Value]) -> Result<Uri> {
    let text = match arguments.first() {
        Some(Value::String(uri)) => Some(uri.as_str()),
        Some(Value::Object(object)) => object.get("uri").and_then(Value::as_str),
        _ => None,
    };
    let Some(text) = text else {
        return Err(Error::invalid_params(format!(
            "{NAME} takes the document's URI as its first argument, a string or {{\"uri\": \"file:///...\"}}"
        )));
    };
    text.parse().map_err(|e| Error::invalid_params(format!("{NAME}: `{text}` is not a URI: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_a_uri_string_or_object() {
        let uri = "file:///w/train.py";
        assert_eq!(document_argument(&[json!(uri)]).unwrap().as_str(), uri);
        assert_eq!(document_argument(&[json!({"uri": uri})]).unwrap().as_str(), uri);
        let missing = document_argument(&[]).unwrap_err();
        assert!(missing.message.contains("takes the document's URI"), "{}", missing.message);
        assert!(document_argument(&[json!(42)]).is_err());
        assert!(document_argument(&[json!("not a uri with spaces")]).is_err());
    }
}
