// What the VS Code end-to-end test expects from workspace-template/: which findings culint
// reports, where to hover, which quick fix to apply and what the file reads afterwards.

import { existsSync } from "node:fs";

/** With an NVIDIA driver the probe reports memory; without one it says so in one line. */
const hasNvidiaDriver = existsSync("/dev/nvidiactl");

export const SCENARIO = {
  file: "train.py",
  /** Every one of these codes must show up in the Problems panel. */
  expectedCodes: ["CUL201", "CUL202", "CUL303"],
  hover: {
    code: "CUL201",
    /** Hover over the first occurrence of this text: the call inside the step loop. */
    text: "torch.cuda.empty_cache()",
    /** Headings of the rule doc that hover must show. */
    expectText: ["What it does", "Why is this bad?"],
  },
  fix: {
    code: "CUL202",
    /** The flagged call is the first occurrence of `text` after the line holding `after`. */
    text: "torch.cuda.empty_cache()",
    after: "def release(",
    /** Part of the quick fix's title in the lightbulb menu. */
    title: "after the memory is released",
    expected: (before) =>
      before.replace(
        "    torch.cuda.empty_cache()\n    del model, optimizer\n",
        "    del model, optimizer\n    torch.cuda.empty_cache()\n",
      ),
  },
  /** "culint: Fix all" then applies the remaining safe fix (CUL303) and leaves the unsafe one
   * (CUL201) alone. */
  fixAll: {
    code: "CUL303",
    expected: (before) => before.replace("torch.cuda.amp.autocast()", 'torch.amp.autocast("cuda")'),
  },
  explain: {
    /** A log in the workspace; the test selects all of it and runs "culint: Explain error". */
    file: "oom.log",
    /** The knowledge entry's id: culint's explanation names it, the log does not. */
    expectText: /cuda\/oom-/,
  },
  /** A notebook (a copy of tests/fixtures/notebooks/train_across_cells.ipynb) opened in the
   * notebook editor: its cells' findings show in the Problems panel and as squiggles in the
   * cells. CUL503 is found only in the notebook, in its fifth cell. */
  notebook: {
    file: "train.ipynb",
    expectedCodes: ["CUL503"],
  },
  probe: hasNvidiaDriver
    ? { expectText: /free/i, statusText: /GPUs? [0-9.]+ [MG]iB free/ }
    : { expectText: /no NVIDIA driver/i, statusText: /GPU: none/ },
};
