// Reads the result of the server's `culint.probe` command: the markdown to show, and the free GPU
// memory for the status bar.
//
// Kept free of the `vscode` module so it can be unit-tested under plain Node.

export interface ProbeSummary {
  /** The report as markdown. */
  markdown: string;
  /** Short status-bar text, e.g. "GPU 71.3 GiB free"; absent when the report has no figure. */
  statusText?: string;
  /** One line per device for the status bar's tooltip. */
  tooltip?: string;
}

interface DeviceMemory {
  name: string;
  freeBytes: number;
  totalBytes?: number;
}

export function summarizeProbe(result: unknown): ProbeSummary {
  const markdown = reportMarkdown(result);
  const devices = deviceMemory(result);
  if (devices.length === 0) {
    const free = freeMemoryFromText(markdown);
    return free === undefined ? { markdown } : { markdown, statusText: `GPU ${free} free`, tooltip: `${free} free` };
  }
  const totalFree = devices.reduce((sum, device) => sum + device.freeBytes, 0);
  const label = devices.length === 1 ? "GPU" : `${devices.length} GPUs`;
  const tooltip = devices
    .map((device) => {
      const total = device.totalBytes === undefined ? "" : ` of ${formatBytes(device.totalBytes)}`;
      return `${device.name}: ${formatBytes(device.freeBytes)} free${total}`;
    })
    .join("\n");
  return { markdown, statusText: `${label} ${formatBytes(totalFree)} free`, tooltip };
}

/** The report for a probe the server refused, e.g. on a machine with no NVIDIA driver: the
 * server's error message is the one-line reason, its `data` the report (with `markdown`). */
export function summarizeProbeFailure(message: string, data?: unknown): ProbeSummary {
  const reason = message.split("\n")[0].trim();
  const markdown =
    isRecord(data) && typeof data.markdown === "string"
      ? data.markdown
      : `# GPU probe\n\nThe probe could not run: ${message.trim()}\n`;
  return { markdown, statusText: "GPU: none", tooltip: reason };
}

export function formatBytes(bytes: number): string {
  const gib = bytes / 2 ** 30;
  if (gib >= 1) {
    return `${gib.toFixed(1)} GiB`;
  }
  return `${Math.round(bytes / 2 ** 20)} MiB`;
}

function reportMarkdown(result: unknown): string {
  if (typeof result === "string") {
    return result;
  }
  if (isRecord(result)) {
    for (const key of ["markdown", "text", "report"]) {
      const value = result[key];
      if (typeof value === "string") {
        return value;
      }
    }
  }
  return "# GPU probe\n\n```json\n" + JSON.stringify(result, null, 2) + "\n```\n";
}

function deviceMemory(result: unknown): DeviceMemory[] {
  if (!isRecord(result)) {
    return [];
  }
  const list = [result.gpus, result.devices].find(Array.isArray);
  if (!list) {
    return [];
  }
  const devices: DeviceMemory[] = [];
  list.forEach((entry: unknown, index: number) => {
    if (!isRecord(entry)) {
      return;
    }
    const freeBytes = firstNumber(entry, ["free_bytes", "memory_free_bytes", "freeBytes", "free_memory_bytes"]);
    if (freeBytes === undefined) {
      return;
    }
    const totalBytes = firstNumber(entry, ["total_bytes", "memory_total_bytes", "totalBytes", "total_memory_bytes"]);
    const name = typeof entry.name === "string" ? entry.name : `GPU ${index}`;
    devices.push({ name, freeBytes, totalBytes });
  });
  return devices;
}

/** Finds the first free-memory figure in a text report: "12.3 GiB free" or "free: 12.3 GiB". */
function freeMemoryFromText(text: string): string | undefined {
  const size = "([0-9]+(?:\\.[0-9]+)?\\s*[KMGT]i?B)";
  const sizeThenFree = new RegExp(`${size}\\s+free`, "i").exec(text);
  const freeThenSize = new RegExp(`free(?: memory)?\\s*[:=]\\s*${size}`, "i").exec(text);
  const first = [sizeThenFree, freeThenSize]
    .filter((match): match is RegExpExecArray => match !== null)
    .sort((a, b) => a.index - b.index)[0];
  return first?.[1];
}

function firstNumber(record: Record<string, unknown>, keys: string[]): number | undefined {
  for (const key of keys) {
    const value = record[key];
    if (typeof value === "number" && Number.isFinite(value)) {
      return value;
    }
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
