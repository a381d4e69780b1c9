//! `culint.explain`: explain a CUDA / cuBLAS error text (a message, a traceback, a log) as
//! Markdown, with the same engine as `culint explain`.
//!
//! Arguments: the text, or `{"text": "...", "lang": "zh"}`; the language defaults to the
//! client's locale. Returns the Markdown as a string.

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};

use crate::explain::explain_markdown;
use crate::knowledge::Lang;
use crate::lsp::context::ServerContext;

pub const NAME: &str = "culint.explain";

pub async fn run(context: &ServerContext, arguments: &[Value]) -> Result<Option<Value>> {
    let (text, lang) = arguments_of(arguments, context.session.lock().lang)?;
    let markdown = context.blocking("explain", move || explain_markdown(&text, lang)).await?;
    if markdown.trim().is_empty() {
        return Ok(Some(Value::String(
            "culint recognises no CUDA, cuBLAS, cuDNN or NCCL error in this text. Paste the whole error message \
             or traceback, as the job printed it."
                .to_owned(),
        )));
    }
    Ok(Some(Value::String(markdown)))
}

fn arguments_of(arguments: &[Value], default_lang: Lang) -> Result<(String, Lang)> {
    let (text, lang) = match arguments.first() {
        Some(Value::String(text)) => (Some(text.as_str()), None),
        Some(Value::Object(object)) => {
            (object.get("text").and_then(Value::as_str), object.get("lang").and_then(Value::as_str))
        }
        _ => (None, None),
    };
    let Some(text) = text else {
        return Err(Error::invalid_params(format!(
            "{NAME} takes the error text as its first argument, a string or {{\"text\": \"...\", \"lang\": \"en\"}}"
        )));
    };
    let lang = match lang {
        None => default_lang,
        Some(tag) => Lang::parse(tag)
            .ok_or_else(|| Error::invalid_params(format!("{NAME}: unknown language `{tag}`; use `en` or `zh`")))?,
    };
    Ok((text.to_owned(), lang))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::lsp::testing::{TestClient, basic_capabilities};

    #[test]
    fn reads_text_and_language() {
        assert_eq!(arguments_of(&[json!("boom")], Lang::En).unwrap(), ("boom".to_owned(), Lang::En));
        assert_eq!(arguments_of(&[json!({"text": "boom", "lang": "zh-CN"})], Lang::En).unwrap().1, Lang::Zh);
        assert!(arguments_of(&[json!({"text": "boom", "lang": "klingon"})], Lang::En).is_err());
        assert!(arguments_of(&[], Lang::En).is_err());
    }

    #[tokio::test]
    async fn explains_an_out_of_memory_error() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let error = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
                     capacity of 79.25 GiB of which 1.06 GiB is free.";
        let markdown = client
            .request("workspace/executeCommand", json!({"command": "culint.explain", "arguments": [error]}))
            .await
            .unwrap();
        let markdown = markdown.as_str().unwrap();
        assert!(markdown.contains("cuda/oom"), "{markdown}");

        let nothing = client
            .request("workspace/executeCommand", json!({"command": "culint.explain", "arguments": ["all good"]}))
            .await
            .unwrap();
        assert!(nothing.as_str().unwrap().starts_with("culint recognises no CUDA"), "{nothing}");
        client.shutdown().await;
    }
}
