#!/usr/bin/env python3
"""Score a run of run_repos.sh against the hand review in review.tsv.

Each finding (project, path, line, rule) of the plain and the hardware run is looked up in the
review; the share of reviewed findings that are right is the figure the README states. Findings
with no review row are listed with --unreviewed, so that a new run can be reviewed by hand.
    score_repos.py RESULTS_DIR [--unreviewed]
"""
import collections
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).parent
LINE = re.compile(r"^(?:\./)?(?P<path>[^:]+):(?P<line>\d+):\d+: (?P<rule>CUL\d+) (?P<message>.*)$")


def projects():
    rows = {}
    for line in (HERE / "projects.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            name, repo, commit, _ = line.split("\t")
            rows[name] = (repo, commit)
    return rows


def review():
    rows = {}
    for line in (HERE / "review.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        project, commit, path, line_no, rule, verdict, reason = line.split("\t")
        assert verdict in ("right", "wrong"), line
        rows[(project, path, int(line_no), rule)] = (commit, verdict, reason)
    return rows


def findings(results):
    found = {}
    for name in projects():
        for run in ("plain", "hw"):
            file = results / f"{name}.{run}.txt"
            if not file.exists():
                continue
            for text in file.read_text().splitlines():
                m = LINE.match(text)
                if m:
                    key = (name, m["path"], int(m["line"]), m["rule"])
                    found.setdefault(key, (run, m["message"]))
    return found


def main():
    results = pathlib.Path(sys.argv[1])
    known, reviewed, found = projects(), review(), findings(pathlib.Path(results))
    per_project = collections.defaultdict(collections.Counter)
    per_rule = collections.defaultdict(collections.Counter)
    unreviewed = []
    for key, (run, message) in sorted(found.items()):
        row = reviewed.get(key)
        verdict = "unreviewed"
        if row:
            if row[0] != known[key[0]][1]:
                print(f"stale review row (commit {row[0]}): {key}", file=sys.stderr)
            verdict = row[1]
        else:
            unreviewed.append((key, run, message))
        per_project[key[0]][verdict] += 1
        per_rule[key[3]][verdict] += 1
    print(f"{'project':28} {'findings':>8} {'right':>6} {'wrong':>6} {'unreviewed':>10}")
    total = collections.Counter()
    for name in known:
        c = per_project[name]
        total.update(c)
        print(f"{name:28} {sum(c.values()):8} {c['right']:6} {c['wrong']:6} {c['unreviewed']:10}")
    print(f"{'all':28} {sum(total.values()):8} {total['right']:6} {total['wrong']:6} {total['unreviewed']:10}")
    print()
    for rule in sorted(per_rule):
        c = per_rule[rule]
        print(f"{rule}: {sum(c.values())} findings, {c['right']} right, {c['wrong']} wrong, {c['unreviewed']} unreviewed")
    judged = total["right"] + total["wrong"]
    if judged:
        print(f"\nright: {total['right']}/{judged} = {100 * total['right'] / judged:.0f}% of reviewed findings")
    if "--unreviewed" in sys.argv:
        for (project, path, line, rule), run, message in unreviewed:
            print(f"{project}\t{known[project][1]}\t{path}\t{line}\t{rule}\t?\t{run}: {message}")


if __name__ == "__main__":
    main()
