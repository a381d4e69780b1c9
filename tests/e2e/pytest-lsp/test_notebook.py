"""Jupyter notebooks through a real LSP client (notebookDocument/* as VS Code sends them), and
`culint check --fix` on a notebook checked by nbformat's own validator."""

import asyncio
import copy
import difflib
import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
from lsprotocol import types

from documents import apply_edits, edits_of

CULINT = os.environ.get("CULINT_BIN", "culint")
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "notebooks" / "train_across_cells.ipynb"
NOTEBOOK_URI = "file:///tmp/culint-e2e/train_across_cells.ipynb"


def cell_uri(index: int) -> str:
    return f"vscode-notebook-cell:/tmp/culint-e2e/train_across_cells.ipynb#W{index}"


def open_fixture(client):
    """Open the fixture as VS Code does: a notebook document and a text document per cell."""
    notebook = nbformat.read(FIXTURE, as_version=4)
    cells, documents = [], []
    for index, cell in enumerate(notebook.cells):
        code = cell.cell_type == "code"
        cells.append(
            types.NotebookCell(
                kind=types.NotebookCellKind.Code if code else types.NotebookCellKind.Markup,
                document=cell_uri(index),
            )
        )
        documents.append(
            types.TextDocumentItem(
                uri=cell_uri(index), language_id="python" if code else "markdown", version=1, text=cell.source
            )
        )
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=NOTEBOOK_URI, notebook_type="jupyter-notebook", version=1, cells=cells
            ),
            cell_text_documents=documents,
        )
    )
    return notebook


async def pushed(client, uri: str, version):
    """The diagnostics pushed for a cell at `version` (`None`: withdrawn): notebooks are pushed
    in every profile."""
    for _ in range(200):
        if uri in client.diagnostics and uri in client.diagnostic_versions and client.diagnostic_versions[uri] == version:
            return client.diagnostics[uri]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics for {uri} version {version}; have {client.diagnostic_versions}")


async def test_notebook_cells_get_their_findings(client):
    open_fixture(client)
    # The session selects CUL2: the training cell (the fifth) empties the cache on every step.
    items = await pushed(client, cell_uri(4), 1)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in items] == [("CUL201", 6, 4)]
    assert list(await pushed(client, cell_uri(1), 1)) == []
    assert cell_uri(0) not in client.diagnostics, "a markdown cell is no part of the program"


async def test_notebook_quick_fix_and_edit(client):
    notebook = open_fixture(client)
    source = notebook.cells[4].source
    cul201 = (await pushed(client, cell_uri(4), 1))[0]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=cell_uri(4)),
            range=cul201.range,
            context=types.CodeActionContext(diagnostics=[cul201], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert actions[0].title == "Move `empty_cache()` after the step loop (unsafe)"
    fixed = apply_edits(source, edits_of(actions[0].edit), client.encoding)
    assert fixed.rstrip("\n").endswith("\ntorch.cuda.empty_cache()"), fixed
    assert "    torch.cuda.empty_cache()" not in fixed, fixed

    # The edit, as the client sends it after applying the fix: the finding goes.
    lines = source.split("\n")
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=NOTEBOOK_URI, version=2),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=cell_uri(4), version=2),
                            changes=[
                                types.TextDocumentContentChangePartial(
                                    range=types.Range(
                                        start=types.Position(line=len(lines) - 2, character=len(lines[-2])),
                                        end=types.Position(line=len(lines) - 1, character=len(lines[-1])),
                                    ),
                                    text="",
                                )
                            ],
                        )
                    ]
                )
            ),
        )
    )
    assert list(await pushed(client, cell_uri(4), 2)) == []

    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=NOTEBOOK_URI),
            cell_text_documents=[types.TextDocumentIdentifier(uri=cell_uri(i)) for i in range(len(notebook.cells))],
        )
    )
    await pushed(client, cell_uri(4), None)
    assert list(client.diagnostics[cell_uri(4)]) == [], "closing withdraws the cells' diagnostics"


def test_fix_leaves_a_valid_notebook_with_its_outputs(tmp_path):
    path = tmp_path / FIXTURE.name
    shutil.copy(FIXTURE, path)
    before = nbformat.read(path, as_version=4)
    run = subprocess.run(
        [CULINT, "check", "--fix", "--unsafe-fixes", str(path)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    after = nbformat.read(path, as_version=4)
    nbformat.validate(after)

    assert after.metadata == before.metadata
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]
    changed = [i for i, (a, b) in enumerate(zip(after.cells, before.cells)) if a.source != b.source]
    assert changed == [4], changed
    unchanged = copy.deepcopy(after)
    unchanged.cells[4].source = before.cells[4].source
    assert unchanged == before, "nothing but the fixed cell's source changed"
    # Every line of the file the fix took away was a line of the fixed cell's source.
    removed = [line[2:] for line in difflib.ndiff(FIXTURE.read_text().splitlines(), path.read_text().splitlines())
               if line.startswith("- ")]
    sources = {json.dumps(line, ensure_ascii=False) for line in before.cells[4].source.splitlines(keepends=True)}
    assert removed and all(line.strip().rstrip(",") in sources for line in removed), removed

    again = subprocess.run([CULINT, "check", "--fix", "--unsafe-fixes", str(path)], capture_output=True, text=True)
    assert again.returncode == 0 and "All checks passed!" in again.stdout, again.stdout + again.stderr
    assert nbformat.read(path, as_version=4) == after
