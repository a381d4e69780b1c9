//! `textDocument/hover`: the rule's documentation over a flagged range, or over a code in a
//! suppression comment.

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{Hover, HoverContents, HoverParams, MarkupContent, MarkupKind};

use crate::knowledge::Lang;
use crate::lsp::context::{ServerContext, unknown_document};
use crate::lsp::position::PositionMapper;
pub use crate::lsp::rule_docs::{diagnostic_hover, rule_markdown};
use crate::rules::{RULES, Rule};
use crate::suppression::{comments, selector_matches};
use crate::text::TextRange;

pub async fn hover(context: &ServerContext, params: HoverParams) -> Result<Option<Hover>> {
    let uri = params.text_document_position_params.text_document.uri;
    let position = params.text_document_position_params.position;
    if let Some(hover) = crate::lsp::notebooks::hover(context, &uri, position) {
        return hover.map_err(Error::invalid_params);
    }
    let (snapshot, encoding, lang) = {
        let session = context.session.lock();
        (session.snapshot(&uri).ok_or_else(|| unknown_document(&uri))?, session.features.encoding, session.lang)
    };
    let offset = snapshot
        .positions(encoding)
        .offset(position)
        .map_err(|e| Error::invalid_params(format!("culint: hover: {e}")))?;

    let input = snapshot.clone();
    if let Some((range, markdown)) =
        context.blocking("hover", move || suppression_code_hover(&input.text, &input.tree(), offset, lang)).await?
    {
        return Ok(Some(markdown_hover(markdown, range, &snapshot.text, encoding)));
    }

    let Some((linted, diagnostics)) = context.lint_current(&uri).await? else { return Ok(None) };
    if linted.revision != snapshot.revision {
        return Ok(None);
    }
    let Some((range, markdown)) = diagnostic_hover(&diagnostics, offset, lang) else { return Ok(None) };
    Ok(Some(markdown_hover(markdown, range, &snapshot.text, encoding)))
}

fn markdown_hover(
    markdown: String,
    range: TextRange,
    text: &str,
    encoding: crate::lsp::position::PositionEncoding,
) -> Hover {
    Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
        range: Some(PositionMapper::new(text, encoding).range(range)),
    }
}

/// The doc of the rule a code in `# culint: ignore[...]` or `# noqa: ...` names; a prefix lists
/// the rules it covers.
pub fn suppression_code_hover(
    text: &str,
    tree: &tree_sitter::Tree,
    offset: usize,
    lang: Lang,
) -> Option<(TextRange, String)> {
    let comment = comments(text, tree).into_iter().find(|c| c.start <= offset && offset <= c.end)?;
    let &(start, end) = comment.code_ranges.iter().find(|(start, end)| *start <= offset && offset <= *end)?;
    let selector = &text[start..end];
    let matching: Vec<&Rule> = RULES.iter().copied().filter(|r| selector_matches(selector, r.code, r.name)).collect();
    let markdown = match matching.as_slice() {
        [] => format!("`{selector}` matches no culint rule, so this part of the comment has no effect."),
        [rule] => rule_markdown(rule, lang),
        rules => {
            let list: Vec<String> = rules.iter().map(|r| format!("- **{}** `{}`", r.code, r.name)).collect();
            format!("`{selector}` covers {} rules:\n\n{}", rules.len(), list.join("\n"))
        }
    };
    Some((TextRange::new(start, end), markdown))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Diagnostic, Severity};
    use crate::parse::parse;

    fn finding(code: &'static str, range: TextRange) -> Diagnostic {
        Diagnostic {
            code,
            name: "some-rule",
            range,
            message: format!("{code} message").into(),
            severity: Severity::Warning,
            fix: None,
            knowledge: None,
            related: Vec::new(),
            deprecated: false,
            facts: Vec::new(),
            assumptions: Vec::new(),
        }
    }

    #[test]
    fn hover_picks_the_narrowest_finding_under_the_cursor() {
        let outer = finding("CUL998", TextRange::new(0, 20));
        let inner = finding("CUL999", TextRange::new(5, 9));
        let (range, markdown) = diagnostic_hover(&[outer, inner], 6, Lang::En).unwrap();
        assert_eq!(range, TextRange::new(5, 9));
        assert!(markdown.starts_with("**CUL999**: CUL999 message"), "{markdown}");
        assert!(markdown.contains("**CUL998**"), "{markdown}");
        assert!(
            diagnostic_hover(&[finding("CUL999", TextRange::new(5, 9))], 9, Lang::En).is_none(),
            "end is exclusive"
        );
    }

    #[test]
    fn hover_over_an_unknown_code_in_a_comment_says_so() {
        let text = "x = 1  # culint: ignore[CUL999x]\n";
        let tree = parse(text, None);
        let at = text.find("999").unwrap();
        let (range, markdown) = suppression_code_hover(text, &tree, at, Lang::En).unwrap();
        assert_eq!(&text[range.start..range.end], "CUL999x");
        assert!(markdown.contains("matches no culint rule"), "{markdown}");
        assert!(suppression_code_hover(text, &tree, text.find("x =").unwrap(), Lang::En).is_none());
    }
}

#[cfg(test)]
mod protocol_tests {
    use serde_json::json;

    use crate::lsp::testing::{TRAINING_SCRIPT, TestClient, basic_capabilities, position, uri};

    #[tokio::test]
    async fn hover_over_a_finding_shows_the_rule_doc() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"select": ["CUL2"]})).await;
        let file = uri("train.py");
        client.open(&file, TRAINING_SCRIPT).await;
        let result = client
            .request("textDocument/hover", json!({"textDocument": {"uri": file}, "position": position(10, 12)}))
            .await
            .unwrap();
        let markdown = result["contents"]["value"].as_str().unwrap();
        assert!(markdown.starts_with("### CUL201 `empty-cache-in-step-loop`"), "{markdown}");
        assert!(markdown.contains("## What it does"), "{markdown}");
        assert!(!markdown.contains("# empty-cache-in-step-loop (CUL201)"), "the title appears once: {markdown}");
        assert!(markdown.contains("`cuda/oom-fragmentation`"), "the linked knowledge entry follows: {markdown}");
        assert_eq!(result["range"]["start"], position(10, 4));
        let nothing = client
            .request("textDocument/hover", json!({"textDocument": {"uri": file}, "position": position(8, 2)}))
            .await
            .unwrap();
        assert_eq!(nothing, json!(null));
        client.shutdown().await;
    }

    #[tokio::test]
    async fn hover_over_codes_in_suppression_comments() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let file = uri("ignored.py");
        client.open(&file, "# 😀\ntorch.cuda.empty_cache()  # culint: ignore[CUL202, CUL2]\n").await;
        let hover = |character| json!({"textDocument": {"uri": file}, "position": position(1, character)});
        let exact = client.request("textDocument/hover", hover(45)).await.unwrap();
        assert!(exact["contents"]["value"].as_str().unwrap().starts_with("### CUL202 `empty-cache-before-release`"));
        let prefix = client.request("textDocument/hover", hover(53)).await.unwrap();
        let markdown = prefix["contents"]["value"].as_str().unwrap();
        let covered = crate::rules::RULES.iter().filter(|r| r.code.starts_with("CUL2")).count();
        assert!(markdown.starts_with(&format!("`CUL2` covers {covered} rules")), "{markdown}");
        assert!(markdown.contains("- **CUL201** `empty-cache-in-step-loop`"), "{markdown}");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn hover_over_a_suppression_code_and_bad_positions() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let file = uri("hover.py");
        client.open(&file, "# 显存\nx = 1  # culint: ignore[CUL999x]\n").await;
        let hover = |line, character| json!({"textDocument": {"uri": file}, "position": position(line, character)});

        let result = client.request("textDocument/hover", hover(1, 27)).await.unwrap();
        assert_eq!(result["contents"]["kind"], "markdown");
        assert!(result["contents"]["value"].as_str().unwrap().contains("`CUL999x` matches no culint rule"));
        assert_eq!(result["range"], json!({"start": position(1, 24), "end": position(1, 31)}));

        assert_eq!(client.request("textDocument/hover", hover(1, 0)).await.unwrap(), json!(null));

        let past_end = client.request("textDocument/hover", hover(9, 3)).await.unwrap_err();
        assert_eq!(past_end["code"], -32602);
        assert!(past_end["message"].as_str().unwrap().contains("past the end"), "{past_end}");

        let unknown = json!({"textDocument": {"uri": uri("other.py")}, "position": position(0, 0)});
        assert_eq!(client.request("textDocument/hover", unknown).await.unwrap_err()["code"], -32602);

        let malformed = json!({"textDocument": {"uri": file}, "position": {"line": "one"}});
        assert_eq!(client.request("textDocument/hover", malformed).await.unwrap_err()["code"], -32602);

        // Still serving after all of that.
        assert!(client.request("textDocument/hover", hover(1, 27)).await.is_ok());
        client.shutdown().await;
    }
}
