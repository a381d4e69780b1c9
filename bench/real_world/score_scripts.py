#!/usr/bin/env python3
"""Score culint against the hand labels of real training scripts.

scripts.tsv lists the labelled scripts (repository, path, commit, style); labels.tsv every place a
rule should fire in them (repository, path, commit, line, rule, why). Each script is checked in
its project's checkout (CORPUS/NAME, made by checkout.sh), so project helpers resolve as they
would for the user. A finding that matches a label (same file, line and rule) is a true positive,
any other is a false positive; a label with no finding is a miss.
    CULINT=target/release/culint CORPUS=/tmp/corpus score_scripts.py [--list]
"""
import collections
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent


def rows(name):
    for line in (HERE / name).read_text().splitlines():
        if line and not line.startswith("#"):
            yield line.split("\t")


def main():
    culint = os.path.realpath(os.environ.get("CULINT", HERE / "../../target/release/culint"))
    corpus = pathlib.Path(os.environ.get("CORPUS", "/tmp/corpus"))
    names = {repo: (name, commit) for name, repo, commit, _ in rows("projects.tsv")}
    labels = collections.defaultdict(set)
    for repo, path, commit, line, rule, _ in rows("labels.tsv"):
        labels[(repo, path)].add((int(line), rule))
    tp, fp, fn = collections.Counter(), collections.Counter(), collections.Counter()
    listing = []
    scripts = list(rows("scripts.tsv"))
    for repo, path, commit, _ in scripts:
        name, project_commit = names[repo]
        root = corpus / name
        if project_commit != commit or (root / ".culint-commit").read_text().strip() != commit:
            sys.exit(f"{repo}:{path}: the checkout is not at {commit}; run checkout.sh")
        out = subprocess.run([culint, "check", "--output-format", "json", "--exit-zero", path],
                             cwd=root, capture_output=True, text=True, check=True).stdout
        found = {(d["location"]["row"], d["code"]) for d in json.loads(out)}
        expected = labels[(repo, path)]
        for line, rule in sorted(found | expected):
            hit, wanted = (line, rule) in found, (line, rule) in expected
            verdict = "TP" if hit and wanted else "FP" if hit else "FN"
            {"TP": tp, "FP": fp, "FN": fn}[verdict][rule] += 1
            listing.append(f"{verdict} {rule} {repo}/{path}:{line}")
    if "--list" in sys.argv:
        print("\n".join(listing))
    print(f"{len(scripts)} scripts, {sum(len(v) for v in labels.values())} labels")
    print(f"{'rule':8} {'labels':>6} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>9} {'recall':>7}")
    def line(rule, t, f, n):
        p = f"{t / (t + f):.2f}" if t + f else "-"
        r = f"{t / (t + n):.2f}" if t + n else "-"
        print(f"{rule:8} {t + n:6} {t:4} {f:4} {n:4} {p:>9} {r:>7}")
    for rule in sorted(set(tp) | set(fp) | set(fn)):
        line(rule, tp[rule], fp[rule], fn[rule])
    line("all", sum(tp.values()), sum(fp.values()), sum(fn.values()))


if __name__ == "__main__":
    main()
