#!/usr/bin/env python3
"""Time `culint check` over the benchmark corpus next to ruff and TorchFix, in the same run.

Usage: python3 bench/check_speed.py [--runs N]
Fetches the corpus (bench/corpus.sh), builds culint in release mode, installs ruff and torchfix
into a virtual environment under the cache, then prints a Markdown table for BENCHMARKS.md.
This is a benchmark, not a test: it asserts nothing about time, only that the prefilter leaves
the findings unchanged.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("CULINT_BENCH_CACHE", Path.home() / ".cache" / "culint-bench"))
TORCHFIX_SAMPLE = 300


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, **kwargs)


def timed(cmd, env=None):
    """Wall seconds and peak resident memory (MiB) of one command, via GNU time."""
    result = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", *cmd],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    wall, peak_kib = result.stderr.strip().splitlines()[-1].split()
    return float(wall), int(peak_kib) / 1024


def best_of(runs, cmd, env=None):
    samples = [timed(cmd, env) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), max(s[1] for s in samples)


def findings(binary, corpus, env=None):
    out = subprocess.run(
        [binary, "check", "--exit-zero", "--output-format", "json", str(corpus)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=True,
    ).stdout
    return sorted((d["filename"], d["location"]["row"], d["location"]["column"], d["code"]) for d in json.loads(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--torchfix-sample", type=int, default=TORCHFIX_SAMPLE,
                        help="torch files to time TorchFix on (0 skips it: it needs minutes per hundred files)")
    args = parser.parse_args()

    corpus = Path(run(["bash", str(ROOT / "bench" / "corpus.sh")], capture_output=True, text=True).stdout.strip())
    files = sorted(corpus.rglob("*.py"))
    size = sum(f.stat().st_size for f in files)
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    torch_files = [f for f in files if b"torch" in f.read_bytes()]

    run(["cargo", "build", "--release", "--quiet"], cwd=ROOT)
    culint = str(ROOT / "target" / "release" / "culint")
    venv = CACHE / "venv"
    if not (venv / "bin" / "torchfix").exists():
        run([sys.executable, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "--quiet", "ruff==0.17.6", "torchfix==0.7.0"])
    ruff = str(venv / "bin" / "ruff")
    torchfix = str(venv / "bin" / "torchfix")

    with_prefilter = findings(culint, corpus)
    without_prefilter = findings(culint, corpus, {"CULINT_NO_PREFILTER": "1"})
    if with_prefilter != without_prefilter:
        sys.exit(f"the prefilter changed the findings: {len(with_prefilter)} vs {len(without_prefilter)}")

    culint_time = best_of(args.runs, [culint, "check", "--exit-zero", "--output-format", "concise", str(corpus)])
    no_filter_time = best_of(
        1, [culint, "check", "--exit-zero", "--output-format", "concise", str(corpus)], {"CULINT_NO_PREFILTER": "1"}
    )
    ruff_time = best_of(args.runs, [ruff, "check", "--no-cache", "--exit-zero", "--quiet", str(corpus)])
    sample = [str(f) for f in torch_files[:args.torchfix_sample]]
    torchfix_time = best_of(1, [torchfix, *sample]) if sample else None

    culint_version = subprocess.run([culint, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"### `culint check` over the corpus ({date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} cores)\n")
    print(f"Corpus: {len(files)} files, {lines:,} lines, {size / 1e6:.0f} MB; {len(torch_files)} mention torch. "
          f"{culint_version}; findings: {len(with_prefilter)} (identical with the prefilter off).\n")
    print("| tool | files | wall (median) | files/s | peak RSS | culint is |")
    print("|---|---|---|---|---|---|")
    rows = [
        ("culint check", len(files), culint_time),
        ("culint check, prefilter off", len(files), no_filter_time),
        ("ruff check --no-cache (default rules)", len(files), ruff_time),
    ]
    if torchfix_time:
        rows.append((f"torchfix (first {len(sample)} torch files)", len(sample), torchfix_time))
    for name, count, (wall, peak) in rows:
        per_file_ratio = (wall / count) / (culint_time[0] / len(files))
        print(f"| {name} | {count} | {wall:.2f} s | {count / wall:,.0f} | {peak:.0f} MiB | "
              f"{'—' if name == 'culint check' else f'{per_file_ratio:.1f}× faster per file'} |")


if __name__ == "__main__":
    main()
