//! `culint check` on Jupyter notebooks, through the built binary: findings by cell in every
//! format, the cells read as one program, IPython lines skipped, and fixes that change the cell
//! sources and nothing else.

mod cli_support;

use cli_support::{culint, culint_stdin, project, write};
use serde_json::Value;

/// The model is built and cast to bf16 in cell 3 and trained in cell 5 (after a markdown cell),
/// whose loop keeps its zeroed gradients (CUL503, safe fix) and empties the cache every step
/// (CUL201, unsafe fix). Cell 2 has line magics and a shell escape, cell 5 starts with `%%time`.
const ACROSS_CELLS: &str = include_str!("fixtures/notebooks/train_across_cells.ipynb");
/// IPython everywhere: `%pip`, `x = !cmd`, `%%writefile` and `%%bash` cells whose bodies hold a
/// step loop that empties the cache, a markdown cell with the same loop, and a code cell with a
/// string whose lines start with `%` and `!`, a help line, and a shell escape inside the loop.
const MAGICS: &str = include_str!("fixtures/notebooks/magics.ipynb");

fn source_of(notebook: &str, cell: usize) -> String {
    let value: Value = serde_json::from_str(notebook).unwrap();
    match &value["cells"][cell]["source"] {
        Value::String(text) => text.clone(),
        Value::Array(lines) => lines.iter().map(|l| l.as_str().unwrap()).collect(),
        other => panic!("not a source: {other}"),
    }
}

#[test]
fn findings_are_reported_by_cell_and_line_in_the_text_formats() {
    let dir = project(&[("train.ipynb", ACROSS_CELLS.as_bytes())]);
    let concise = culint(dir.path(), &["check", "--output-format", "concise"]);
    assert_eq!(concise.code, 1, "{}", concise.stderr);
    let lines: Vec<&str> = concise.stdout.lines().take(2).collect();
    assert!(lines[0].starts_with("train.ipynb:cell 5:6:5: CUL503 [*] "), "{}", concise.stdout);
    assert!(lines[1].starts_with("train.ipynb:cell 5:7:5: CUL201 "), "{}", concise.stdout);

    let full = culint(dir.path(), &["check", "--select", "CUL201", "--no-color"]);
    assert!(full.stdout.contains("--> train.ipynb:cell 5:7:5\n"), "{}", full.stdout);
    // The frame is cut from the cell, numbered by its lines, with its `%%time` line as it is.
    assert!(full.stdout.contains("7 |     torch.cuda.empty_cache()\n"), "{}", full.stdout);
    assert!(!full.stdout.contains("culint cell"), "no program text shows: {}", full.stdout);

    let github = culint(dir.path(), &["check", "--output-format", "github", "--select", "CUL201"]);
    assert!(
        github.stdout.starts_with("::warning file=train.ipynb,line=7,col=5,endLine=7,endColumn=29,"),
        "{}",
        github.stdout
    );
    assert!(github.stdout.contains("::cell 5: `torch.cuda.empty_cache()` runs on every step"), "{}", github.stdout);
}

#[test]
fn json_and_sarif_keep_the_cell_as_well_as_the_line() {
    let dir = project(&[("train.ipynb", ACROSS_CELLS.as_bytes()), ("script.py", b"import torch\n")]);
    let json = culint(dir.path(), &["check", "--output-format", "json", "--unsafe-fixes"]);
    let findings: Value = serde_json::from_str(&json.stdout).unwrap();
    let cul201 = findings.as_array().unwrap().iter().find(|f| f["code"] == "CUL201").unwrap();
    assert_eq!(cul201["cell"], 5);
    assert_eq!(cul201["location"], serde_json::json!({"row": 7, "column": 5}));
    assert_eq!(cul201["noqa_row"], 7);
    assert!(cul201["filename"].as_str().unwrap().ends_with("train.ipynb"));
    let edits = cul201["fix"]["edits"].as_array().unwrap();
    assert!(!edits.is_empty() && edits.iter().all(|e| e["cell"] == 5), "{edits:?}");

    let sarif = culint(dir.path(), &["check", "--output-format", "sarif"]);
    let log: Value = serde_json::from_str(&sarif.stdout).unwrap();
    let result = log["runs"][0]["results"].as_array().unwrap().iter().find(|r| r["ruleId"] == "CUL201").unwrap();
    assert_eq!(result["properties"]["cell"], 5);
    let region = &result["locations"][0]["physicalLocation"]["region"];
    assert_eq!((region["startLine"].as_u64(), region["startColumn"].as_u64()), (Some(7), Some(5)));
    assert_eq!(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "train.ipynb");
}

/// The cells are one program: the bf16 cast in cell 3 is the model the loop in cell 5 trains,
/// so the loop is not in fp32 (no CUL302). The same loop in a notebook of its own is.
#[test]
fn the_cells_are_read_as_one_program() {
    let alone = ACROSS_CELLS.replace(".cuda().bfloat16()", ".cuda()");
    let dir = project(&[("together.ipynb", ACROSS_CELLS.as_bytes()), ("fp32.ipynb", alone.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL302"]);
    assert!(!run.stdout.contains("together.ipynb"), "{}", run.stdout);
    assert!(run.stdout.contains("fp32.ipynb:cell 5:"), "{}", run.stdout);

    // And the notebook finds what the script of its code cells finds, at the same lines.
    let script: String = [1, 2, 4]
        .iter()
        .map(|&cell| {
            let source = source_of(ACROSS_CELLS, cell);
            let python: Vec<&str> =
                source.lines().map(|l| if l.trim_start().starts_with(['%', '!']) { "" } else { l }).collect();
            python.join("\n") + "\n"
        })
        .collect();
    let dir = project(&[("train.ipynb", ACROSS_CELLS.as_bytes()), ("train.py", script.as_bytes())]);
    let json = culint(dir.path(), &["check", "--output-format", "json", "--unsafe-fixes"]);
    let findings: Value = serde_json::from_str(&json.stdout).unwrap();
    let codes = |suffix: &str| -> Vec<String> {
        let mut codes: Vec<String> = findings
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["filename"].as_str().unwrap().ends_with(suffix))
            .map(|f| f["code"].as_str().unwrap().to_owned())
            .collect();
        codes.sort();
        codes
    };
    assert_eq!(codes("train.ipynb"), codes("train.py"));
    assert_eq!(codes("train.ipynb"), ["CUL201", "CUL503"]);
}

#[test]
fn magics_shell_escapes_help_and_other_languages_are_skipped() {
    let dir = project(&[("magics.ipynb", MAGICS.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "concise", "--show-syntax-errors"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let found: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("magics.ipynb")).collect();
    // Only the code cell's loop: not the `%%writefile` or `%%bash` bodies, not the markdown,
    // and no syntax error from an IPython line or from the string's `%`/`!` lines.
    assert_eq!(found.len(), 2, "{}", run.stdout);
    assert!(found.iter().all(|l| l.starts_with("magics.ipynb:cell 5:")), "{}", run.stdout);
    assert!(found.iter().any(|l| l.starts_with("magics.ipynb:cell 5:12:5: CUL201 ")), "{}", run.stdout);
}

#[test]
fn fix_rewrites_only_the_cell_sources_and_reaches_a_fixed_point() {
    let dir = project(&[("train.ipynb", ACROSS_CELLS.as_bytes())]);
    let path = dir.path().join("train.ipynb");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let fixed = culint(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    assert!(fixed.stdout.contains("Found 2 errors (2 fixed, 0 remaining)."), "{}", fixed.stdout);
    let after = std::fs::read_to_string(&path).unwrap();

    // Byte for byte the notebook as it was, but for the two lines of the loop the fixes changed.
    let expected = ACROSS_CELLS
        .replace("\"    optimizer.zero_grad(set_to_none=False)\\n\"", "\"    optimizer.zero_grad()\\n\"")
        .replace("\"    torch.cuda.empty_cache()\"", "\"torch.cuda.empty_cache()\"");
    assert_ne!(expected, ACROSS_CELLS);
    assert_eq!(after, expected);
    assert!(source_of(&after, 4).starts_with("%%time\n"), "the cell magic is kept");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left behind");

    let again = culint(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    assert_eq!((again.code, again.stdout.as_str()), (0, "All checks passed!\n"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected, "a fixed point");
}

#[test]
fn a_source_written_as_one_string_stays_one_string() {
    let notebook = r#"{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": "import torch\nfor batch in loader:\n    loss = model(batch.cuda()).sum()\n    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad(set_to_none=False)\n"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}"#;
    let dir = project(&[("one.ipynb", notebook.as_bytes())]);
    let fixed = culint(dir.path(), &["check", "--fix", "--select", "CUL503"]);
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    let after = std::fs::read_to_string(dir.path().join("one.ipynb")).unwrap();
    assert_eq!(after, notebook.replace("zero_grad(set_to_none=False)", "zero_grad()"));
}

#[test]
fn diff_shows_the_notebook_change_and_writes_nothing() {
    let dir = project(&[("train.ipynb", ACROSS_CELLS.as_bytes())]);
    let diff = culint(dir.path(), &["check", "--diff"]);
    assert_eq!(diff.code, 1, "{}", diff.stderr);
    assert!(diff.stdout.contains("-    \"    optimizer.zero_grad(set_to_none=False)\\n\",\n"), "{}", diff.stdout);
    assert!(diff.stdout.contains("+    \"    optimizer.zero_grad()\\n\",\n"), "{}", diff.stdout);
    assert_eq!(std::fs::read_to_string(dir.path().join("train.ipynb")).unwrap(), ACROSS_CELLS);
}

#[test]
fn stdin_reads_a_notebook_named_by_stdin_filename() {
    let dir = project(&[]);
    let run = culint_stdin(
        dir.path(),
        &["check", "--output-format", "concise", "--stdin-filename", "train.ipynb", "-"],
        ACROSS_CELLS.as_bytes(),
    );
    assert!(run.stdout.contains("train.ipynb:cell 5:7:5: CUL201"), "{}{}", run.stdout, run.stderr);
    let fixed =
        culint_stdin(dir.path(), &["check", "--fix", "--stdin-filename", "train.ipynb", "-"], ACROSS_CELLS.as_bytes());
    let printed = fixed.stdout;
    assert!(printed.starts_with("{\n \"cells\": ["), "{printed}");
    assert!(printed.contains("\"    optimizer.zero_grad()\\n\""), "{printed}");
}

#[test]
fn directories_include_notebooks_and_bad_notebooks_are_reported() {
    let r_notebook = ACROSS_CELLS.replace("\"name\": \"python\"", "\"name\": \"R\"");
    let dir = project(&[
        ("nb/train.ipynb", ACROSS_CELLS.as_bytes()),
        ("nb/analysis.ipynb", r_notebook.as_bytes()),
        (".ipynb_checkpoints/train-checkpoint.ipynb", ACROSS_CELLS.as_bytes()),
    ]);
    let run = culint(dir.path(), &["check", "--output-format", "concise"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("nb/train.ipynb:cell 5:"), "{}", run.stdout);
    assert!(!run.stdout.contains("checkpoint"), "hidden directories are skipped: {}", run.stdout);
    assert!(
        run.stderr.contains("nb/analysis.ipynb: skipped: not a Python notebook (its language is R)"),
        "{}",
        run.stderr
    );

    write(&dir.path().join("nb/broken.ipynb"), b"{\"cells\": [");
    let broken = culint(dir.path(), &["check", "--output-format", "concise"]);
    assert_eq!(broken.code, 2, "{}", broken.stdout);
    assert!(broken.stderr.contains("nb/broken.ipynb: not a valid notebook: "), "{}", broken.stderr);
    write(&dir.path().join("nb/broken.ipynb"), b"{\"nbformat\": 3, \"worksheets\": []}");
    let old = culint(dir.path(), &["check", "nb/broken.ipynb"]);
    assert!(old.stderr.contains("nbformat 3 notebooks are not supported"), "{}", old.stderr);
}
