"""Run bench.py's latency replay through each client and way of getting diagnostics, and check
that every keystroke was answered and measured, and written out by --samples.

Usage: check.py CULINT-BINARY
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "lsp_latency" / "bench.py"
EDITS = 24

sys.path.insert(0, str(BENCH.parent))
from corpus import module_level_script, training_script  # noqa: E402


def replay(servers, client, mode, samples):
    """Each server's latency summary, by its command line; every keystroke's sample goes to the
    file `samples`."""
    command = [sys.executable, str(BENCH), "--only", "latency", "--edits", str(EDITS), "--client", client, *mode]
    command += ["--samples", str(samples)]
    for server in servers:
        command += ["--server", server]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[1:])} failed:\n{done.stderr}")
    return {server: result["latency"] for server, result in json.loads(done.stdout).items()}


def problems_of_samples(samples, result):
    """What is wrong with one server's --samples against its summary."""
    if [sample["keystroke"] for sample in samples] != list(range(EDITS)):
        return [f"samples of keystrokes {[sample['keystroke'] for sample in samples]}, not each of {EDITS}"]
    problems = []
    if any(not 0 < sample["received_ms"] <= sample["ms"] for sample in samples):
        problems.append("a sample's latencies are out of order")
    # The summary rounds to hundredths, the samples to thousandths.
    if abs(max(sample["ms"] for sample in samples) - result["max_ms"]) > 0.006:
        problems.append("the slowest sample is not the summary's max")
    # Each fragment is typed and then deleted again, a character at a time.
    if not any(sample["deleted"] for sample in samples) or not all(
        sample["deleted"] != bool(sample["typed"]) for sample in samples
    ):
        problems.append("the samples do not tell typed from deleted")
    return problems


# The size of the script each mode edits, made once.
SCRIPT_BYTES = {script.__name__: len(script(10_000).encode()) for script in (training_script, module_level_script)}


def problems_of(result, client, mode):
    problems = []
    script = "module_level_script" if "--module-level" in mode else "training_script"
    if result["file_bytes"] != SCRIPT_BYTES[script]:
        problems.append(f"the script edited is not {script}'s")
    if result["client"] != client:
        problems.append(f"replayed by {result['client']}")
    if result["edits"] != EDITS:
        problems.append(f"{result['edits']} keystrokes measured, not {EDITS}")
    if not 0 < result["received_p50_ms"] <= result["p50_ms"] <= result["max_ms"]:
        problems.append("the latencies are out of order")
    if "--pull" in mode and result["unchanged_reports"] == 0:
        # Typing at the end of a line moves no finding: a pulling client is told so.
        problems.append("no pulled report was unchanged")
    return problems


def main():
    culint = sys.argv[1]
    alone = f"{culint} server"
    # The same server twice, told apart by their command lines, to take the keystrokes in turns.
    pair = [alone, f"{culint} server --log-file /dev/null"]
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        samples_file = Path(scratch) / "samples.json"
        for client in ("python", "node"):
            modes = [([alone], []), ([alone], ["--pull"]), (pair, ["--paired"])]
            if client == "python":
                # The script at module level, whose statements are parsed anew on each keystroke:
                # once, through one client, as it is slow in a debug build.
                modes.append(([alone], ["--module-level"]))
            for servers, mode in modes:
                name = " ".join([client, *mode])
                results = replay(servers, client, mode, samples_file)
                samples = json.loads(samples_file.read_text())
                for server, result in results.items():
                    print(f"{name}: {EDITS} keystrokes to {server}, p50 {result['p50_ms']} ms (debug build)")
                    problems = problems_of(result, client, mode)
                    problems += problems_of_samples(samples.get(server, []), result)
                    failures += [f"{name}, {server}: {p}" for p in problems]
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
