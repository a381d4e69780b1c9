#!/usr/bin/env python3
"""Fix safety on real code: `culint check --fix --unsafe-fixes` over a copy of the benchmark
corpus and over every fixture, then check each fixed file.

Each fixed file must compile (`compile()`, as py_compile does), keep its line endings, BOM and
permissions, reach a fixed point (a second run fixes nothing), and change only lines that one of
the reported fixes touches. Prints a Markdown summary for RELIABILITY.md and exits 1 on any
failure.

Usage: python3 bench/fix_safety.py [--culint PATH] [--fixtures-only]
"""

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def culint_json(culint, path, *extra):
    out = subprocess.run(
        [culint, "check", "--exit-zero", "--unsafe-fixes", "--output-format", "json", *extra, str(path)],
        capture_output=True,
        text=True,
    )
    if out.returncode not in (0, 1):
        raise RuntimeError(f"culint failed on {path}: {out.stderr}")
    return json.loads(out.stdout or "[]")


def compile_error(data):
    try:
        compile(data, "<fixed>", "exec")
    except (SyntaxError, ValueError) as error:
        return error
    return None


def compiles(data):
    return compile_error(data) is None


def line_ending_kind(data):
    crlf = data.count(b"\r\n")
    lf = data.count(b"\n") - crlf
    return "crlf" if crlf and not lf else "lf" if lf and not crlf else "mixed" if crlf else "none"


def fixed_lines(diagnostics):
    """Rows that some fix may touch, per file, from the reported edits."""
    rows = {}
    for d in diagnostics:
        for edit in (d.get("fix") or {}).get("edits", []):
            start, end = edit["location"]["row"], edit["end_location"]["row"]
            rows.setdefault(d["filename"], set()).update(range(start - 1, end + 2))
    return rows


def changed_rows(before, after):
    import difflib

    rows = set()
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            rows.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--culint", default=str(ROOT / "target" / "release" / "culint"))
    parser.add_argument("--fixtures-only", action="store_true")
    args = parser.parse_args()
    culint = args.culint
    if not Path(culint).exists():
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)

    sources = [("fixtures", ROOT / "tests" / "fixtures"), ("examples", ROOT / "examples")]
    if not args.fixtures_only:
        corpus = subprocess.run(["bash", str(ROOT / "bench" / "corpus.sh")], capture_output=True, text=True, check=True)
        sources.append(("corpus", Path(corpus.stdout.strip())))

    failures = []
    summary = []
    for name, source in sources:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / name
            shutil.copytree(source, copy, symlinks=True)
            files = sorted(p for p in copy.rglob("*.py") if p.is_file())
            before = {p: p.read_bytes() for p in files}
            modes = {p: stat.S_IMODE(p.stat().st_mode) for p in files}
            reported = culint_json(culint, copy)
            allowed = fixed_lines(reported)
            subprocess.run([culint, "check", "--exit-zero", "--fix", "--unsafe-fixes", str(copy)], capture_output=True)
            changed = [p for p in files if p.read_bytes() != before[p]]
            # The fixed point: a second `--fix` changes nothing. (A finding may stay fixable in
            # the report when its fix was refused for not resolving it.)
            after_first = {p: p.read_bytes() for p in files}
            subprocess.run([culint, "check", "--exit-zero", "--fix", "--unsafe-fixes", str(copy)], capture_output=True)
            second = [p for p in files if p.read_bytes() != after_first[p]]
            compiled = 0
            broken_before = 0
            for path in changed:
                data = path.read_bytes()
                rel = path.relative_to(copy)
                if not compiles(before[path]):
                    # Deliberately broken inputs (parser-recovery fixtures) cannot compile after
                    # fixing either; they must still parse no worse, which the fuzz targets check.
                    broken_before += 1
                elif compiles(data):
                    compiled += 1
                else:
                    failures.append(f"{name}/{rel}: does not compile after fixing: {compile_error(data)}")
                if line_ending_kind(data) != line_ending_kind(before[path]):
                    failures.append(f"{name}/{rel}: line endings changed")
                if data.startswith(b"\xef\xbb\xbf") != before[path].startswith(b"\xef\xbb\xbf"):
                    failures.append(f"{name}/{rel}: BOM changed")
                if stat.S_IMODE(path.stat().st_mode) != modes[path]:
                    failures.append(f"{name}/{rel}: permissions changed")
                outside = changed_rows(before[path].decode("utf-8", "replace"), data.decode("utf-8", "replace"))
                outside -= allowed.get(str(path), set())
                # In broken text a fix can change how the parser recovers around it, so findings
                # elsewhere appear with fixes of their own that the first report could not show.
                if outside and compiles(before[path]):
                    failures.append(f"{name}/{rel}: lines changed outside the reported fixes: {sorted(outside)[:5]}")
            for path in second:
                failures.append(f"{name}/{path.relative_to(copy)}: a second --fix changed it again")
            summary.append((name, len(files), len(reported), len(changed) - broken_before, compiled, len(second)))

    # "files fixed" counts the files that compiled before fixing: the ones that must compile after.
    print("| set | .py files | findings | files fixed | fixed files that compile | changed by a second --fix |")
    print("|---|---|---|---|---|---|")
    for name, files, findings, changed, compiled, second in summary:
        share = f"{compiled}/{changed} ({100 * compiled / changed:.0f}%)" if changed else "0/0"
        print(f"| {name} | {files} | {findings} | {changed} | {share} | {second} |")
    if failures:
        print("\nFailures:")
        for failure in failures:
            print(f"- {failure}")
        sys.exit(1)


if __name__ == "__main__":
    main()
