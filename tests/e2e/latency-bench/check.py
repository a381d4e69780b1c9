"""Run bench.py's latency replay through each client and way of getting diagnostics, and check
that every keystroke was answered and measured.

Usage: check.py CULINT-BINARY
"""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "lsp_latency" / "bench.py"
EDITS = 24


def replay(culint, client, mode):
    command = [sys.executable, str(BENCH), "--server", f"{culint} server", "--only", "latency"]
    command += ["--edits", str(EDITS), "--client", client, *mode]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[1:])} failed:\n{done.stderr}")
    return json.loads(done.stdout)[f"{culint} server"]["latency"]


def main():
    culint = sys.argv[1]
    failures = []
    for client in ("python", "node"):
        for mode in ([], ["--pull"]):
            result = replay(culint, client, mode)
            name = " ".join([client, *mode])
            problems = []
            if result["client"] != client:
                problems.append(f"replayed by {result['client']}")
            if result["edits"] != EDITS:
                problems.append(f"{result['edits']} keystrokes measured, not {EDITS}")
            if not 0 < result["received_p50_ms"] <= result["p50_ms"] <= result["max_ms"]:
                problems.append("the latencies are out of order")
            if mode and result["unchanged_reports"] == 0:
                # Typing at the end of a line moves no finding: a pulling client is told so.
                problems.append("no pulled report was unchanged")
            print(f"{name}: {EDITS} keystrokes, p50 {result['p50_ms']} ms (debug build)")
            failures += [f"{name}: {problem}" for problem in problems]
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
