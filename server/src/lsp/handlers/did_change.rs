//! `textDocument/didChange`: apply incremental changes to the rope and the tree, in order, then
//! re-lint in the background for clients that do not pull.

use tower_lsp_server::ls_types::{DidChangeTextDocumentParams, MessageType, TextDocumentContentChangeEvent};

use crate::lsp::context::ServerContext;
use crate::lsp::position::PositionEncoding;
use crate::lsp::session::OpenDocument;

pub async fn did_change(context: &ServerContext, params: DidChangeTextDocumentParams) {
    let uri = params.text_document.uri;
    let version = params.text_document.version;
    // Applied before the first `await`, so changes land in the order the client sent them.
    let applied = context
        .guarded("didChange", || {
            let mut session = context.session.lock();
            let encoding = session.features.encoding;
            let push = !session.features.pull_diagnostics;
            let Some(open) = session.documents.get_mut(&uri) else {
                return Ok(Err(format!("culint: ignored a change to {}, which is not open", uri.as_str())));
            };
            let applied = apply_changes(open, &params.content_changes, version, encoding);
            let text = open.document().shared_text();
            session.overlay(&uri, Some(text));
            session.note_active(&uri);
            Ok(applied.map(|()| push))
        })
        .await;
    match applied {
        Ok(Ok(true)) => context.spawn_publish(uri),
        Ok(Ok(false)) | Err(_) => {}
        Ok(Err(problem)) => context.log(MessageType::ERROR, problem).await,
    }
}

/// Apply the changes of one notification, each to the text the previous one produced.
pub fn apply_changes(
    open: &mut OpenDocument,
    changes: &[TextDocumentContentChangeEvent],
    version: i32,
    encoding: PositionEncoding,
) -> Result<(), String> {
    if version <= open.document().version() {
        crate::lsp::log::write(&format!(
            "culint: version {version} is not newer than {}; applying the change anyway",
            open.document().version()
        ));
    }
    open.revision += 1;
    let applied = apply_each(open, changes, encoding);
    open.reparse();
    open.set_version(version);
    applied
}

/// Apply each change to the text, up to one that cannot be placed.
fn apply_each(
    open: &mut OpenDocument,
    changes: &[TextDocumentContentChangeEvent],
    encoding: PositionEncoding,
) -> Result<(), String> {
    for change in changes {
        let Some(range) = change.range else {
            open.replace(&change.text);
            continue;
        };
        if let Err(error) =
            open.positions(encoding).text_range(range).map(|byte_range| open.edit(byte_range, &change.text))
        {
            return Err(format!(
                "culint: a change was dropped because its {error}; the server's copy of the file may now differ \
                 from the editor's: close and reopen the file"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tower_lsp_server::ls_types::{Position, Range};

    use super::*;
    use crate::document::Document;
    use crate::parse::parse;

    fn change(start: (u32, u32), end: (u32, u32), text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range {
                start: Position { line: start.0, character: start.1 },
                end: Position { line: end.0, character: end.1 },
            }),
            range_length: None,
            text: text.to_owned(),
        }
    }

    #[test]
    fn applies_a_batch_in_order_in_utf16() {
        let mut open = OpenDocument::new(Document::new("# 显存 😀\nx = 1\r\ny = 2\n", 1), None);
        let changes = [
            change((0, 7), (0, 7), "!"),  // after the emoji, which takes two UTF-16 units
            change((1, 4), (1, 5), "42"), // x = 42
            change((2, 0), (2, 0), "z = 3\n"),
            change((3, 4), (3, 5), "7"), // y = 7: the line is the one the change before added
        ];
        apply_changes(&mut open, &changes, 2, PositionEncoding::Utf16).unwrap();
        let text = open.document().text().to_owned();
        assert_eq!(text, "# 显存 😀!\nx = 42\r\nz = 3\ny = 7\n");
        assert_eq!(open.document().version(), 2);
        assert_eq!(open.revision, 1);
        // Reparsed by the change itself, not on demand.
        let tree = open.document().cached_tree().expect("the change reparsed the text");
        assert_eq!(tree.root_node().to_sexp(), parse(&text, None).root_node().to_sexp());
    }

    #[test]
    fn utf8_positions_count_bytes() {
        let mut open = OpenDocument::new(Document::new("# 显存\nx\n", 1), None);
        apply_changes(&mut open, &[change((0, 8), (0, 8), "!")], 2, PositionEncoding::Utf8).unwrap();
        assert_eq!(open.document().text(), "# 显存!\nx\n");
    }

    #[test]
    fn full_text_changes_replace_the_document() {
        let mut open = OpenDocument::new(Document::new("a\n", 1), None);
        let full = TextDocumentContentChangeEvent { range: None, range_length: None, text: "b = 1\n".to_owned() };
        apply_changes(&mut open, &[full, change((0, 0), (0, 1), "c")], 5, PositionEncoding::Utf16).unwrap();
        assert_eq!(open.document().text(), "c = 1\n");
        assert_eq!(open.document().version(), 5);
    }

    /// A change without a range is applied as an edit of the bytes that differ: the statements
    /// around them are shared with the tree before (tree-sitter's reparse reuses their nodes), as
    /// after a change with a range. A parse from scratch would share none.
    #[test]
    fn a_full_text_change_is_reparsed_incrementally() {
        let before = "import torch\n\ndef f():\n    return 1\n\n# 显存 😀\nx = f()\n";
        let mut open = OpenDocument::new(Document::new(before, 1), None);
        let old = open.document().cached_tree().expect("parsed").clone();
        let after = before.replace("return 1", "return 2");
        let full = TextDocumentContentChangeEvent { range: None, range_length: None, text: after.clone() };
        apply_changes(&mut open, &[full], 2, PositionEncoding::Utf16).unwrap();
        assert_eq!(open.document().text(), after);
        let tree = open.document().cached_tree().expect("the change reparsed the text");
        assert_eq!(tree.root_node().to_sexp(), parse(&after, None).root_node().to_sexp());
        let first_statement = |tree: &tree_sitter::Tree| tree.root_node().child(0).expect("a statement").id();
        assert_eq!(first_statement(tree), first_statement(&old), "the unchanged import was parsed again");
        // Positions follow the new text: the line starts were edited too.
        let last_line = open
            .positions(PositionEncoding::Utf16)
            .text_range(Range { start: Position { line: 6, character: 0 }, end: Position { line: 6, character: 7 } });
        assert_eq!(last_line.map(|range| &after[range.start..range.end]), Ok("x = f()"));
    }

    #[test]
    fn a_change_past_the_end_is_refused_with_a_reason() {
        let mut open = OpenDocument::new(Document::new("a\n", 1), None);
        let error = apply_changes(&mut open, &[change((9, 0), (9, 1), "x")], 2, PositionEncoding::Utf16).unwrap_err();
        assert!(error.contains("position 9:0 is past the end"), "{error}");
        assert_eq!(open.document().text(), "a\n");
        // The changes before the one refused are applied and parsed.
        let changes = [change((0, 0), (0, 0), "b"), change((9, 0), (9, 1), "x")];
        assert!(apply_changes(&mut open, &changes, 3, PositionEncoding::Utf16).is_err());
        assert_eq!(open.document().text(), "ba\n");
        let tree = open.document().cached_tree().expect("the change reparsed the text");
        assert_eq!(tree.root_node().to_sexp(), parse("ba\n", None).root_node().to_sexp());
    }
}

#[cfg(test)]
mod protocol_tests {
    use serde_json::json;

    use crate::lsp::testing::{TestClient, basic_capabilities, position, uri};

    fn edit(file: &str, version: i64, start: (u32, u32), end: (u32, u32), text: &str) -> serde_json::Value {
        json!({
            "textDocument": {"uri": file, "version": version},
            "contentChanges": [{"range": {"start": position(start.0, start.1), "end": position(end.0, end.1)}, "text": text}]
        })
    }

    #[tokio::test]
    async fn incremental_edits_update_diagnostics_per_version() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"showSyntaxErrors": true})).await;
        let file = uri("train.py");
        client.open(&file, "# 注释\nx = 1\n").await;
        assert!(client.diagnostics(&file, 1).await.is_empty());

        // Break line 1 after a CJK comment line: the range must be in UTF-16 units of line 1.
        client.notify("textDocument/didChange", edit(&file, 2, (1, 5), (1, 5), " +")).await;
        let broken = client.diagnostics(&file, 2).await;
        assert_eq!(broken.len(), 1, "{broken:#?}");
        assert_eq!(broken[0]["range"]["start"]["line"], 1);

        client.notify("textDocument/didChange", edit(&file, 3, (1, 5), (1, 7), "")).await;
        assert!(client.diagnostics(&file, 3).await.is_empty());
        client.shutdown().await;
    }

    /// Keystrokes inside a comment are not reparsed (see `Document::edit_text`): the findings
    /// still follow them. CUL202's fix moves the flagged line with its comment, so it carries the
    /// comment as typed; and a suppression typed into the comment takes effect.
    #[tokio::test]
    async fn typing_inside_a_comment_updates_the_fix_and_the_suppression() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        let file = uri("release.py");
        let line = "    torch.cuda.empty_cache()  # free";
        client
            .open(&file, &format!("import torch\n\ndef step(batch):\n    out = batch * 2\n{line}\n    del out\n"))
            .await;
        assert_eq!(client.diagnostics(&file, 1).await.len(), 1);
        let mut version = 1;
        let end = line.len() as u32;
        for (i, typed) in " now".char_indices() {
            version += 1;
            let at = end + i as u32;
            client.notify("textDocument/didChange", edit(&file, version, (4, at), (4, at), &typed.to_string())).await;
        }
        let found = client.diagnostics(&file, version).await;
        let moved = found.first().and_then(|d| d["data"].as_str()).is_some_and(|data| data.contains("# free now"));
        assert!(found.len() == 1 && moved, "the fix moves the comment as typed: {found:#?}");
        // "free now" out a character at a time, then a suppression in.
        for at in (32..end + 4).rev() {
            version += 1;
            client.notify("textDocument/didChange", edit(&file, version, (4, at), (4, at + 1), "")).await;
        }
        for (i, typed) in "culint: ignore[CUL202]".char_indices() {
            version += 1;
            let at = 32 + i as u32;
            client.notify("textDocument/didChange", edit(&file, version, (4, at), (4, at), &typed.to_string())).await;
        }
        assert_eq!(client.diagnostics(&file, version).await, Vec::<serde_json::Value>::new());
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_burst_of_edits_ends_with_diagnostics_for_the_last_version() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({"showSyntaxErrors": true})).await;
        let file = uri("burst.py");
        client.open(&file, "x = 1\n").await;
        for version in 2..=40 {
            let text = if version % 2 == 0 { "(" } else { ")" };
            let column = (version - 2) as u32;
            client.notify("textDocument/didChange", edit(&file, version, (0, 5 + column), (0, 5 + column), text)).await;
        }
        // 39 edits: 20 "(" and 19 ")", so the final text is unbalanced.
        let last = client.diagnostics(&file, 40).await;
        assert!(!last.is_empty());
        let versions: Vec<i64> = client
            .received("textDocument/publishDiagnostics")
            .iter()
            .filter_map(|m| m["params"]["version"].as_i64())
            .collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "published out of order: {versions:?}");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_change_to_an_unknown_document_is_logged_and_the_server_goes_on() {
        let (mut client, _) = TestClient::start(basic_capabilities(), json!({})).await;
        client.notify("textDocument/didChange", edit(&uri("nope.py"), 2, (0, 0), (0, 0), "x")).await;
        let log = client
            .wait_for(|m| {
                m["method"] == "window/logMessage"
                    && m["params"]["message"].as_str().is_some_and(|text| text.contains("nope.py"))
            })
            .await;
        assert!(log["params"]["message"].as_str().unwrap().contains("which is not open"), "{log}");
        client.shutdown().await;
    }
}
