"""Top-1 accuracy of `culint explain` on the GPU-produced set and the public-report set, and the
matches on ordinary tracebacks (which must be none).

Run from the repository root after `cargo build`:
    python3 bench/explain_accuracy/score.py [path/to/culint]
Prints one line per miss and the three figures; exits 1 when a target is missed (97% top-1 on
each set, 0 matches on ordinary tracebacks). tests/explain_accuracy.rs checks the same through
the library.
"""

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = ROOT / "bench/explain_accuracy"
CULINT = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target/debug/culint")
TARGET = 0.97


def top1(text: str):
    result = subprocess.run(
        [CULINT, "explain", "--format", "json", "--no-lint", "--file", "-"],
        input=text, capture_output=True, text=True, timeout=60,
    )
    if result.returncode not in (0, 1):
        raise SystemExit(f"culint explain failed: {result.stderr}")
    findings = json.loads(result.stdout)["findings"] if result.stdout.strip() else []
    return findings[0]["id"] if findings else None


def score(name, cases):
    misses = [(label, got, where) for where, label, text in cases if (got := top1(text)) != label]
    for label, got, where in misses:
        print(f"  miss [{name}] {where}: expected {label}, got {got}")
    right = len(cases) - len(misses)
    return right, len(cases)


gpu = []
for line in (HERE / "gpu_labels.tsv").read_text().splitlines():
    if line.startswith("#") or not line.strip():
        continue
    file, label = line.split("\t")
    text = (ROOT / "tests/fixtures/explain/gpu" / file).read_text()
    gpu.append((file, None if label == "none" else label, text))
public = [(f"#{c['n']} {c['url']}", c["label"], c["text"]) for c in map(json.loads, (HERE / "public.jsonl").read_text().splitlines())]
ordinary = [(p.name, None, p.read_text()) for p in sorted((HERE / "ordinary").glob("*.log"))]
ordinary += [(f, None, t) for f, label, t in gpu if label is None]

ok = True
for name, cases in [("gpu", [c for c in gpu if c[1]]), ("public", public)]:
    right, total = score(name, cases)
    print(f"{name}: {right}/{total} top-1 = {100 * right / total:.1f}%")
    ok &= right / total >= TARGET
right, total = score("ordinary", ordinary)
print(f"ordinary tracebacks: {total - right} of {total} matched something")
ok &= right == total
sys.exit(0 if ok else 1)
