"""culint server through a real LSP client library, in a UTF-16 push session and a UTF-8 pull
session."""

import json

import pytest
from lsprotocol import types

from documents import CJK_PREFIX, TRAINING_SCRIPT, URI, apply_edits, diagnostics, edits_of, units

DOC = types.TextDocumentIdentifier(uri=URI)


def open_script(client, text=TRAINING_SCRIPT):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=URI, language_id="python", version=1, text=text)
        )
    )


def change(client, version, start, end, text):
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=text
                )
            ],
        )
    )


def by_code(items, code):
    """The first finding of `code`."""
    found = [d for d in items if d.code == code]
    assert found, f"no {code} in {items}"
    return found[0]


async def test_negotiates_the_encoding_each_client_offers(client):
    expected = {"vscode-utf16": "utf-16", "neovim-utf8": "utf-8"}[client.profile]
    assert client.encoding == expected
    assert client.pull == (client.profile == "neovim-utf8")


async def test_diagnostics_follow_incremental_edits(client):
    open_script(client)
    items = await diagnostics(client, URI, 1)
    assert [(d.code, d.range.start.line) for d in items] == [("CUL202", 4), ("CUL201", 10), ("CUL202", 13)]
    cul201 = items[1]
    assert cul201.source == "culint"
    assert cul201.code_description.href.endswith("/docs/rules/CUL201.md")
    # `data` is the JSON text of `[version, [title, applicability, edits]]`, pushed or pulled.
    data = json.loads(cul201.data)
    assert data[1][1] == "unsafe"
    # After `    s = "显存😀"; ` on line 13: 16 UTF-16 units, 22 UTF-8 bytes.
    assert items[2].range.start == types.Position(13, units(CJK_PREFIX, client.encoding))

    # Delete line 4 (`torch.cuda.empty_cache()` before `del model`): that CUL202 goes away.
    change(client, 2, (4, 0), (5, 0), "")
    items = await diagnostics(client, URI, 2)
    assert [(d.code, d.range.start.line) for d in items] == [("CUL201", 9), ("CUL202", 12)]

    # Type a comment one character at a time at the end of the CJK line; the finding stays put.
    version = 2
    end_of_line = units(CJK_PREFIX + "torch.cuda.empty_cache()", client.encoding)
    for char in "  # 注意":
        version += 1
        change(client, version, (12, end_of_line), (12, end_of_line), char)
        end_of_line += units(char, client.encoding)
    items = await diagnostics(client, URI, version)
    assert [(d.code, d.range.start.line) for d in items] == [("CUL201", 9), ("CUL202", 12)]
    assert items[1].range.start.character == units(CJK_PREFIX, client.encoding)

    # Finish the comment as a suppression: the finding on that line disappears.
    version += 1
    change(client, version, (12, end_of_line), (12, end_of_line), "  # culint: ignore[CUL202]")
    items = await diagnostics(client, URI, version)
    assert [(d.code, d.range.start.line) for d in items] == [("CUL201", 9)]


async def test_pulled_reports_stay_unchanged_while_no_finding_moves(client):
    if not client.pull:
        pytest.skip("this profile pushes diagnostics")
    open_script(client)

    async def pull(previous):
        return await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=DOC, previous_result_id=previous)
        )

    first = await pull(None)
    assert first.kind == "full"
    # Type a comment at the end of the first line: every finding keeps its line and column.
    typed, version, column = "  # 注意", 1, len("import torch")
    for char in typed:
        version += 1
        change(client, version, (0, column), (0, column), char)
        column += units(char, client.encoding)
        report = await pull(first.result_id)
        assert report.kind == "unchanged", f"after typing {char!r}"
        assert report.result_id == first.result_id

    # The quick fix of a finding the client kept from the first report, whose data names version
    # 1, is built for the text as it is now.
    cul202 = by_code(first.items, "CUL202")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=DOC,
            range=cul202.range,
            context=types.CodeActionContext(diagnostics=[cul202], only=[types.CodeActionKind.QuickFix]),
        )
    )
    text = TRAINING_SCRIPT.replace("import torch", "import torch" + typed, 1)
    fixed = apply_edits(text, edits_of(actions[0].edit), client.encoding)
    assert fixed.startswith("import torch  # 注意\n"), fixed
    assert "    del model\n    torch.cuda.empty_cache()\n" in fixed

    # A line added on top moves every finding: a full report under a new id.
    version += 1
    change(client, version, (0, 0), (0, 0), "import gc\n")
    moved = await pull(first.result_id)
    assert moved.kind == "full"
    assert moved.result_id != first.result_id
    assert [d.range.start.line for d in moved.items] == [5, 11, 14]


async def test_quick_fix_and_disable_comment(client):
    open_script(client)
    items = await diagnostics(client, URI, 1)
    cul202 = by_code(items, "CUL202")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=DOC,
            range=cul202.range,
            context=types.CodeActionContext(diagnostics=[cul202], only=[types.CodeActionKind.QuickFix]),
        )
    )
    titles = [a.title for a in actions]
    assert titles == ["Move `empty_cache()` after the memory is released", "Disable CUL202 for this line"]
    fix, disable = actions
    assert fix.is_preferred
    fixed = apply_edits(TRAINING_SCRIPT, edits_of(fix.edit), client.encoding)
    assert "    del model\n    torch.cuda.empty_cache()\n" in fixed
    disabled = apply_edits(TRAINING_SCRIPT, edits_of(disable.edit), client.encoding)
    assert "    torch.cuda.empty_cache()  # culint: ignore[CUL202]\n" in disabled

    # Apply the fix as an editor would, then see the finding gone.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=e.range, text=e.new_text) for e in
                             sorted(edits_of(fix.edit), key=lambda e: (e.range.start.line, e.range.start.character),
                                    reverse=True)],
        )
    )
    assert [d.code for d in await diagnostics(client, URI, 2)] == ["CUL201", "CUL202"]


async def test_unsafe_fix_is_offered_but_not_preferred(client):
    open_script(client)
    cul201 = by_code(await diagnostics(client, URI, 1), "CUL201")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=DOC,
            range=cul201.range,
            context=types.CodeActionContext(diagnostics=[cul201], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert actions[0].title == "Move `empty_cache()` after the step loop (unsafe)"
    assert not actions[0].is_preferred


async def test_fix_all_applies_only_safe_fixes(client):
    open_script(client)
    await diagnostics(client, URI, 1)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=DOC,
            range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll]),
        )
    )
    assert [a.kind for a in actions] == ["source.fixAll.culint"]
    fixed = apply_edits(TRAINING_SCRIPT, edits_of(actions[0].edit), client.encoding)
    assert "    del model\n    torch.cuda.empty_cache()\n" in fixed
    assert "    loss.backward()\n    torch.cuda.empty_cache()\n" in fixed, "the unsafe CUL201 fix stays out"


async def test_apply_all_fixes_command(client):
    open_script(client)
    await diagnostics(client, URI, 1)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="culint.applyAllFixes", arguments=[URI])
    )
    assert result == {"applied": True, "fixes": 1}
    assert len(client.applied_edits) == 1
    fixed = apply_edits(TRAINING_SCRIPT, edits_of(client.applied_edits[0]), client.encoding)
    assert "    del model\n    torch.cuda.empty_cache()\n" in fixed


async def test_hover_shows_the_rule_doc(client):
    open_script(client)
    await diagnostics(client, URI, 1)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=DOC, position=types.Position(10, 10))
    )
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith("### CUL201 `empty-cache-in-step-loop`")
    assert "## Why is this bad?" in hover.contents.value
    assert hover.range.start == types.Position(10, 4)

    column = units(CJK_PREFIX + "torch.cuda.", client.encoding)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=DOC, position=types.Position(13, column))
    )
    assert hover.contents.value.startswith("### CUL202 `empty-cache-before-release`")
    assert hover.range.start == types.Position(13, units(CJK_PREFIX, client.encoding))


async def test_errors_leave_the_server_running(client):
    open_script(client)
    await diagnostics(client, URI, 1)
    try:
        await client.text_document_hover_async(
            types.HoverParams(text_document=DOC, position=types.Position(500, 0))
        )
    except Exception as error:  # pygls raises the JSON-RPC error
        assert "past the end" in str(error)
    else:
        raise AssertionError("a position past the end must be an error")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=DOC, position=types.Position(4, 6))
    )
    assert hover.contents.value.startswith("### CUL202")
