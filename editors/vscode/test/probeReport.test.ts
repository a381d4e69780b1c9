import assert from "node:assert/strict";
import { test } from "node:test";

import { formatBytes, summarizeProbe, summarizeProbeFailure } from "../src/probeReport";

const GIB = 2 ** 30;

test("a structured report gives the status bar the free memory of every device", () => {
  const summary = summarizeProbe({
    markdown: "# GPU probe\n",
    gpus: [
      { name: "NVIDIA H100", free_bytes: 70 * GIB, total_bytes: 80 * GIB },
      { name: "NVIDIA H100", free_bytes: 10.5 * GIB, total_bytes: 80 * GIB },
    ],
  });
  assert.equal(summary.markdown, "# GPU probe\n");
  assert.equal(summary.statusText, "2 GPUs 80.5 GiB free");
  assert.equal(summary.tooltip, "NVIDIA H100: 70.0 GiB free of 80.0 GiB\nNVIDIA H100: 10.5 GiB free of 80.0 GiB");
});

test("a text report's free-memory figure is found in the text", () => {
  const summary = summarizeProbe("# GPU 0: NVIDIA A10\n\n- memory: 22.1 GiB free of 24.0 GiB\n");
  assert.equal(summary.statusText, "GPU 22.1 GiB free");
});

test("a report without a figure shows no status text", () => {
  assert.equal(summarizeProbe({ report: "no devices" }).statusText, undefined);
});

test("a refused probe is shown as a report and a short status, not an error", () => {
  const summary = summarizeProbeFailure("no NVIDIA driver: libcuda.so.1 could not be loaded\nmore detail");
  assert.equal(summary.statusText, "GPU: none");
  assert.equal(summary.tooltip, "no NVIDIA driver: libcuda.so.1 could not be loaded");
  assert.match(summary.markdown, /no NVIDIA driver/);
});

test("a refused probe's report from the error data is shown when there is one", () => {
  const summary = summarizeProbeFailure("no NVIDIA driver", { unavailable: "no NVIDIA driver", markdown: "# culint probe\n" });
  assert.equal(summary.markdown, "# culint probe\n");
  assert.equal(summary.tooltip, "no NVIDIA driver");
});

test("the server's report shape: devices with free_bytes and total_bytes", () => {
  const summary = summarizeProbe({
    markdown: "# culint probe\n",
    devices: [{ index: 0, name: "NVIDIA A10", free_bytes: 22 * GIB, total_bytes: 24 * GIB }],
  });
  assert.equal(summary.statusText, "GPU 22.0 GiB free");
  assert.equal(summary.tooltip, "NVIDIA A10: 22.0 GiB free of 24.0 GiB");
});

test("a text report's 'free: N GiB' figure is found too", () => {
  assert.equal(summarizeProbe("GPU 0\nfree: 3.5 GiB\n").statusText, "GPU 3.5 GiB free");
});

test("sizes under a GiB are shown in MiB", () => {
  assert.equal(formatBytes(512 * 2 ** 20), "512 MiB");
  assert.equal(formatBytes(1.25 * GIB), "1.3 GiB");
});
