"""Documents and client-side helpers shared by the tests."""

import asyncio

from lsprotocol import types

URI = "file:///tmp/culint-e2e/train.py"

# CUL202 (safe fix) on line 4; CUL201 (unsafe fix) on line 10; CUL202 again on line 13 after CJK
# text and an emoji on the same line, so its column differs between UTF-8 (22) and UTF-16 (16).
CJK_PREFIX = '    s = "显存😀"; '

TRAINING_SCRIPT = """import torch

# 显存 cleanup 😀
def release(model):
    torch.cuda.empty_cache()
    del model

for batch in loader:
    loss = model(batch)
    loss.backward()
    torch.cuda.empty_cache()

def cleanup(cache):
    s = "显存😀"; torch.cuda.empty_cache()
    del cache
"""


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def offset_of(text: str, position: types.Position, encoding: str) -> int:
    """The string index of an LSP position, counting characters in the negotiated encoding."""
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    count = 0
    for index, char in enumerate(line.rstrip("\r\n")):
        if count >= position.character:
            return start + index
        count += units(char, encoding)
    return start + len(line.rstrip("\r\n"))


def apply_edits(text: str, edits, encoding: str) -> str:
    spans = [
        (offset_of(text, e.range.start, encoding), offset_of(text, e.range.end, encoding), e.new_text)
        for e in edits
    ]
    for start, end, new_text in sorted(spans, reverse=True):
        text = text[:start] + new_text + text[end:]
    return text


def edits_of(edit: types.WorkspaceEdit):
    if edit.document_changes:
        return [e for change in edit.document_changes for e in change.edits]
    return [e for edits in edit.changes.values() for e in edits]


async def diagnostics(client, uri: str, version: int):
    """The diagnostics of `uri` at `version`: pulled or pushed, whichever the session uses."""
    if client.pull:
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return report.items
    for _ in range(200):
        if uri in client.diagnostics and client.diagnostic_versions.get(uri) == version:
            return client.diagnostics[uri]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics for {uri} version {version}; have {client.diagnostic_versions}")
