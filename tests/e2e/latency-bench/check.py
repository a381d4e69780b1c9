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


def replay(servers, client, mode):
    """Each server's latency summary, by its command line."""
    command = [sys.executable, str(BENCH), "--only", "latency", "--edits", str(EDITS), "--client", client, *mode]
    for server in servers:
        command += ["--server", server]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[1:])} failed:\n{done.stderr}")
    return {server: result["latency"] for server, result in json.loads(done.stdout).items()}


def problems_of(result, client, pulled):
    problems = []
    if result["client"] != client:
        problems.append(f"replayed by {result['client']}")
    if result["edits"] != EDITS:
        problems.append(f"{result['edits']} keystrokes measured, not {EDITS}")
    if not 0 < result["received_p50_ms"] <= result["p50_ms"] <= result["max_ms"]:
        problems.append("the latencies are out of order")
    if pulled and result["unchanged_reports"] == 0:
        # Typing at the end of a line moves no finding: a pulling client is told so.
        problems.append("no pulled report was unchanged")
    return problems


def main():
    culint = sys.argv[1]
    alone = f"{culint} server"
    # The same server twice, told apart by their command lines, to take the keystrokes in turns.
    pair = [alone, f"{culint} server --log-file /dev/null"]
    failures = []
    for client in ("python", "node"):
        for servers, mode in (([alone], []), ([alone], ["--pull"]), (pair, ["--paired"])):
            name = " ".join([client, *mode])
            for server, result in replay(servers, client, mode).items():
                print(f"{name}: {EDITS} keystrokes to {server}, p50 {result['p50_ms']} ms (debug build)")
                failures += [f"{name}, {server}: {p}" for p in problems_of(result, client, "--pull" in mode)]
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
