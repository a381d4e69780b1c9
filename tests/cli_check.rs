//! `culint check` end to end, through the built binary: exit codes, formats, fixes, stdin,
//! configuration and the files it skips.

mod cli_support;

use cli_support::{CLEAN, STEP_LOOP, culint, culint_stdin, project, write};

#[test]
fn exit_codes_say_clean_findings_or_error() {
    let dir = project(&[("clean.py", CLEAN.as_bytes())]);
    let clean = culint(dir.path(), &["check"]);
    assert_eq!((clean.code, clean.stdout.as_str()), (0, "All checks passed!\n"), "{}", clean.stderr);

    write(&dir.path().join("train.py"), STEP_LOOP.as_bytes());
    let findings = culint(dir.path(), &["check"]);
    assert_eq!(findings.code, 1, "{}", findings.stderr);
    assert!(findings.stdout.contains("CUL201"), "{}", findings.stdout);
    assert!(findings.stdout.contains("Found 1 error."), "{}", findings.stdout);

    assert_eq!(culint(dir.path(), &["check", "--exit-zero"]).code, 0);

    let usage = culint(dir.path(), &["check", "--select", "CUL9999"]);
    assert_eq!(usage.code, 2);
    assert!(usage.stderr.contains("--select: unknown rule selector `CUL9999`"), "{}", usage.stderr);
    assert!(usage.stdout.is_empty());
}

#[test]
fn quiet_prints_findings_only_and_silent_prints_nothing_but_errors() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes()), ("notes.py", b"\xff\xfe not text")]);
    let normal = culint(dir.path(), &["check", "--output-format", "concise"]);
    assert!(normal.stdout.contains("Found 1 error."), "{}", normal.stdout);
    assert!(normal.stderr.contains("warning:"), "the undecodable file is warned about: {}", normal.stderr);

    let quiet = culint(dir.path(), &["check", "-q", "--output-format", "concise"]);
    assert_eq!(quiet.code, 1);
    assert_eq!(quiet.stdout.lines().count(), 1, "{}", quiet.stdout);
    assert!(quiet.stdout.contains("CUL201"), "{}", quiet.stdout);
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
    let diff = culint(dir.path(), &["check", "--quiet", "--diff", "--unsafe-fixes"]);
    assert!(diff.stdout.contains("+++ "), "{}", diff.stdout);
    assert!(diff.stderr.is_empty(), "no \"Would fix\" line: {}", diff.stderr);

    let silent = culint(dir.path(), &["check", "-s"]);
    assert_eq!((silent.code, silent.stdout.as_str(), silent.stderr.as_str()), (1, "", ""));
    let report = dir.path().join("report.txt");
    let to_file = culint(dir.path(), &["check", "--silent", "--output-file", report.to_str().unwrap()]);
    assert_eq!(to_file.code, 1);
    assert!(std::fs::read_to_string(&report).unwrap().contains("CUL201"));
    let missing = culint(dir.path(), &["check", "-s", "missing.py"]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("missing.py"), "errors still show: {}", missing.stderr);
    assert_eq!(culint(dir.path(), &["check", "-q", "-s"]).code, 2, "the two flags conflict");
}

#[test]
fn selection_by_code_prefix_and_name() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    for selector in ["CUL201", "CUL2", "empty-cache-in-step-loop", "ALL"] {
        let run = culint(dir.path(), &["check", "--select", selector, "--output-format", "concise"]);
        assert_eq!(run.code, 1, "{selector}: {}", run.stderr);
    }
    for ignore in ["CUL201", "CUL2", "empty-cache-in-step-loop"] {
        let run = culint(dir.path(), &["check", "--ignore", ignore]);
        assert!(!run.stdout.contains("CUL201"), "{ignore}: {}", run.stdout);
    }
    let extended =
        culint(dir.path(), &["check", "--select", "empty-cache-before-release", "--extend-select", "CUL201"]);
    assert!(extended.stdout.contains("CUL201"), "{}", extended.stdout);
}

#[test]
fn concise_lines_point_at_the_call() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL201"]);
    let line = run.stdout.lines().next().expect("a finding");
    let row = STEP_LOOP.lines().position(|l| l.contains("empty_cache")).unwrap() + 1;
    assert!(line.starts_with(&format!("train.py:{row}:5: CUL201 ")), "{line}");
}

#[test]
fn github_annotations_carry_the_location_and_title() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "github", "--select", "CUL201"]);
    let row = STEP_LOOP.lines().position(|l| l.contains("empty_cache")).unwrap() + 1;
    let expected = format!(
        "::warning file=train.py,line={row},col=5,endLine={row},endColumn=29,title=CUL201 empty-cache-in-step-loop::"
    );
    assert!(run.stdout.starts_with(&expected), "{}", run.stdout);
    assert_eq!(run.stdout.lines().count(), 1, "no summary in the github format");
}

#[test]
fn json_has_ruff_fields_and_culint_extras() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "json", "--select", "CUL201"]);
    assert_eq!(run.code, 1);
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    let finding = &findings[0];
    let row = STEP_LOOP.lines().position(|l| l.contains("empty_cache")).unwrap() + 1;
    assert_eq!(finding["code"], "CUL201");
    assert_eq!(finding["name"], "empty-cache-in-step-loop");
    assert_eq!(finding["location"], serde_json::json!({ "row": row, "column": 5 }));
    assert_eq!(finding["end_location"], serde_json::json!({ "row": row, "column": 29 }));
    assert_eq!(finding["noqa_row"], row);
    assert_eq!(finding["severity"], "warning");
    assert!(finding["url"].as_str().unwrap().ends_with("docs/rules/CUL201.md"));
    let filename = finding["filename"].as_str().unwrap();
    assert!(std::path::Path::new(filename).is_absolute() && filename.ends_with("train.py"), "{filename}");
    let fix = &finding["fix"];
    assert_eq!(fix["applicability"], "unsafe");
    assert!(fix["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(!fix["edits"].as_array().unwrap().is_empty());
}

#[test]
fn sarif_lists_every_rule_and_locates_results() {
    let dir = project(&[("src/train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "sarif", "--select", "CUL201"]);
    let log: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is JSON");
    assert_eq!(log["version"], "2.1.0");
    let run0 = &log["runs"][0];
    let rules = run0["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), culint::rules::RULES.len());
    let rule = rules.iter().find(|r| r["id"] == "CUL201").expect("CUL201 is listed");
    assert_eq!(rule["name"], "empty-cache-in-step-loop");
    assert_eq!(rule["defaultConfiguration"]["level"], "warning");
    assert!(rule["helpUri"].as_str().unwrap().ends_with("CUL201.md"));
    let result = &run0["results"][0];
    assert_eq!(result["ruleId"], "CUL201");
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/train.py");
    assert_eq!(location["region"]["startColumn"], 5);
}

#[test]
fn statistics_count_findings_per_rule() {
    let two = format!("{STEP_LOOP}\nfor batch in loader:\n    loss.backward()\n    torch.cuda.empty_cache()\n");
    let dir = project(&[("a.py", two.as_bytes()), ("b.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--statistics", "--select", "CUL201"]);
    assert!(run.stdout.starts_with("3\tCUL201\t[ ] empty-cache-in-step-loop\n"), "{}", run.stdout);
    assert!(run.stdout.contains("Found 3 errors."));
    let json = culint(dir.path(), &["check", "--statistics", "--select", "CUL201", "--output-format", "json"]);
    let counts: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(counts[0]["count"], 3);
}

#[test]
fn output_file_receives_the_report() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "json", "--output-file", "report.json"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    let report = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&report).unwrap()[0]["code"].is_string());
}

#[test]
fn fix_keeps_crlf_line_endings() {
    let crlf = STEP_LOOP.replace('\n', "\r\n");
    let dir = project(&[("train.py", crlf.as_bytes())]);
    let run = culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--select", "CUL201"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("fixed, 0 remaining"), "{}", run.stdout);
    let fixed = std::fs::read_to_string(dir.path().join("train.py")).unwrap();
    assert_ne!(fixed, crlf);
    assert_eq!(fixed.matches('\n').count(), fixed.matches("\r\n").count(), "only CRLF endings: {fixed:?}");
    assert_eq!(culint(dir.path(), &["check", "--select", "CUL201"]).code, 0, "the fix is stable");
}

#[test]
fn fix_keeps_the_byte_order_mark_and_positions() {
    let with_bom = format!("\u{feff}{STEP_LOOP}");
    let dir = project(&[("train.py", with_bom.as_bytes())]);
    let report = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL201"]);
    assert!(report.stdout.contains(":5: CUL201"), "columns count from after the mark: {}", report.stdout);

    let run = culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--select", "CUL201"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let fixed = std::fs::read_to_string(dir.path().join("train.py")).unwrap();
    assert!(fixed.starts_with('\u{feff}') && !fixed[3..].contains('\u{feff}'), "{fixed:?}");
    assert!(fixed.contains("torch.cuda.empty_cache()"), "the call moved, not dropped: {fixed}");
}

#[cfg(unix)]
#[test]
fn fix_keeps_permissions_and_refuses_read_only_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project(&[("run.py", STEP_LOOP.as_bytes()), ("locked.py", STEP_LOOP.as_bytes())]);
    let run_py = dir.path().join("run.py");
    let locked = dir.path().join("locked.py");
    std::fs::set_permissions(&run_py, std::fs::Permissions::from_mode(0o751)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();

    let run = culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--select", "CUL201"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("locked.py: cannot write the fixed file: the file is read-only"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&locked).unwrap(), STEP_LOOP);
    assert!(run.stdout.contains("locked.py"), "the unfixed file's finding is still reported: {}", run.stdout);
    assert_eq!(std::fs::metadata(&locked).unwrap().permissions().mode() & 0o777, 0o444);

    assert_ne!(std::fs::read_to_string(&run_py).unwrap(), STEP_LOOP);
    assert_eq!(std::fs::metadata(&run_py).unwrap().permissions().mode() & 0o777, 0o751);
}

#[test]
fn safe_fixes_only_without_unsafe_fixes() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--fix", "--select", "CUL201"]);
    assert_eq!(run.code, 1);
    assert_eq!(std::fs::read_to_string(dir.path().join("train.py")).unwrap(), STEP_LOOP, "CUL201's fix is unsafe");
    let hint = culint(dir.path(), &["check", "--select", "CUL201"]);
    assert!(hint.stdout.contains("1 hidden fix can be enabled with the `--unsafe-fixes` option"), "{}", hint.stdout);

    write(&dir.path().join("culint.toml"), b"unsafe-fixes = true\n");
    let configured = culint(dir.path(), &["check", "--fix", "--select", "CUL201"]);
    assert_eq!(configured.code, 0, "{}{}", configured.stdout, configured.stderr);
}

/// A fix is built on the tree, and around a syntax error the tree is the parser's guess: an
/// unclosed call swallows the lines after it. So a file that does not parse is reported, never
/// fixed, and the user is told where it breaks.
#[test]
fn fix_leaves_a_file_that_does_not_parse_as_it_is() {
    let broken = format!("{STEP_LOOP}\nprint(\"unclosed\",\n");
    let dir = project(&[("train.py", broken.as_bytes())]);
    let report = culint(dir.path(), &["check", "--unsafe-fixes", "--select", "CUL201"]);
    assert!(report.stdout.contains("CUL201"), "the finding is still reported: {}", report.stdout);
    assert!(!report.stdout.contains("fixable"), "but not offered as fixable: {}", report.stdout);

    let run = culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--select", "CUL201"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("train.py")).unwrap(), broken);
    assert!(run.stderr.contains("train.py:14:1: no fixes applied: the file has a syntax error here"), "{}", run.stderr);

    let mended = format!("{STEP_LOOP}\nprint(\"closed\")\n");
    write(&dir.path().join("train.py"), mended.as_bytes());
    let run = culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--select", "CUL201"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("no fixes applied"), "{}", run.stderr);
    assert_ne!(std::fs::read_to_string(dir.path().join("train.py")).unwrap(), mended);
}

#[test]
fn diff_prints_the_change_and_writes_nothing() {
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check", "--diff", "--unsafe-fixes", "--select", "CUL201"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.starts_with("--- train.py\n+++ train.py\n@@"), "{}", run.stdout);
    assert!(run.stdout.lines().any(|l| l.starts_with('-') && l.contains("empty_cache")), "{}", run.stdout);
    assert!(run.stderr.contains("Would fix 1 error."), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(dir.path().join("train.py")).unwrap(), STEP_LOOP);

    let nothing = culint(dir.path(), &["check", "--diff", "--select", "CUL201"]);
    assert_eq!((nothing.code, nothing.stdout.as_str()), (0, ""), "no safe fix, no diff");
}

#[test]
fn stdin_is_linted_under_its_stdin_filename() {
    let dir = project(&[("sub/culint.toml", b"[per-file-ignores]\n\"ignored.py\" = [\"CUL201\"]\n")]);
    let run = culint_stdin(
        dir.path(),
        &["check", "-", "--stdin-filename", "sub/train.py", "--output-format", "concise"],
        STEP_LOOP.as_bytes(),
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.starts_with("sub/train.py:"), "{}", run.stdout);

    let ignored = culint_stdin(dir.path(), &["check", "-", "--stdin-filename", "sub/ignored.py"], STEP_LOOP.as_bytes());
    assert_eq!(ignored.code, 0, "the config beside the stdin filename applies: {}", ignored.stdout);

    let fixed = culint_stdin(
        dir.path(),
        &["check", "-", "--fix", "--unsafe-fixes", "--select", "CUL201"],
        STEP_LOOP.as_bytes(),
    );
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    assert!(fixed.stdout.starts_with("import torch") && fixed.stdout != STEP_LOOP, "fixed source on stdout");
    assert!(fixed.stderr.contains("1 fixed"), "{}", fixed.stderr);
}

#[test]
fn configuration_errors_exit_2_and_name_the_file() {
    let dir = project(&[
        ("train.py", STEP_LOOP.as_bytes()),
        ("pyproject.toml", b"[tool.culint]\nselect = [\"CUL201\"]\nfoo = 1\n"),
    ]);
    let run = culint(dir.path(), &["check"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("pyproject.toml: unknown key `foo` in [tool.culint]; expected one of `select`"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("unknown key").count(), 1, "reported once: {}", run.stderr);

    let missing = culint(dir.path(), &["check", "--config", "nope.toml"]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("nope.toml: cannot read"), "{}", missing.stderr);
}

#[test]
fn per_file_ignores_exclude_and_gitignore() {
    let dir = project(&[
        ("pyproject.toml", b"[tool.culint]\nexclude = [\"generated\"]\n[tool.culint.per-file-ignores]\n\"tests/**\" = [\"empty-cache-in-step-loop\"]\n"),
        ("train.py", STEP_LOOP.as_bytes()),
        ("tests/test_loop.py", STEP_LOOP.as_bytes()),
        ("generated/loop.py", STEP_LOOP.as_bytes()),
        ("scratch/loop.py", STEP_LOOP.as_bytes()),
        (".gitignore", b"scratch/\n"),
    ]);
    let run = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL201"]);
    let files: Vec<&str> =
        run.stdout.lines().filter_map(|l| l.split(':').next()).filter(|f| f.ends_with(".py")).collect();
    assert_eq!(files, ["train.py"], "{}", run.stdout);
}

#[test]
fn suppression_comments_silence_findings() {
    for comment in ["# culint: ignore[CUL201]", "# noqa: CUL201", "# culint: ignore[empty-cache-in-step-loop]"] {
        let text = STEP_LOOP.replace("torch.cuda.empty_cache()", &format!("torch.cuda.empty_cache()  {comment}"));
        let dir = project(&[("train.py", text.as_bytes())]);
        let run = culint(dir.path(), &["check", "--select", "CUL201"]);
        assert_eq!(run.code, 0, "{comment}: {}", run.stdout);
    }
    let file_level = format!("# culint: ignore-file\n{STEP_LOOP}");
    let dir = project(&[("train.py", file_level.as_bytes())]);
    assert_eq!(culint(dir.path(), &["check"]).code, 0);
}

#[test]
fn unreadable_and_skipped_files_do_not_stop_the_run() {
    let mut latin1 = b"import torch\n# caf".to_vec();
    latin1.extend([0xe9, b'\n']);
    latin1.extend(STEP_LOOP.as_bytes());
    let dir = project(&[
        ("train.py", STEP_LOOP.as_bytes()),
        ("latin1.py", &latin1),
        ("blob.py", b"torch\0\x01\x02"),
        ("culint.toml", b"max-file-size = 2000\n"),
        ("huge.py", format!("{STEP_LOOP}{}", "# padding\n".repeat(300)).as_bytes()),
    ]);
    let run = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL201", "."]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.starts_with("train.py:"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("CUL201").count(), 1, "{}", run.stdout);
    assert!(run.stderr.contains("warning: latin1.py: skipped: not valid UTF-8"), "{}", run.stderr);
    assert!(run.stderr.contains("warning: blob.py: skipped: binary file"), "{}", run.stderr);
    assert!(run.stderr.contains("warning: huge.py: skipped: 3"), "{}", run.stderr);

    let missing = culint(dir.path(), &["check", "--select", "CUL201", "train.py", "missing.py"]);
    assert_eq!(missing.code, 2, "an IO error wins over findings");
    assert!(missing.stderr.contains("error: missing.py: "), "{}", missing.stderr);
    assert!(missing.stdout.contains("CUL201"), "the other file is still checked: {}", missing.stdout);
}

#[test]
fn files_with_syntax_errors_are_still_linted() {
    let broken = format!("{STEP_LOOP}\ndef broken(:\n    pass\n");
    let dir = project(&[("train.py", broken.as_bytes())]);
    let run = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL201"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("CUL201"), "{}", run.stdout);

    let with_errors = culint(dir.path(), &["check", "--output-format", "concise", "--show-syntax-errors"]);
    assert!(with_errors.stdout.contains("syntax-error SyntaxError"), "{}", with_errors.stdout);
}

#[test]
fn explicitly_named_files_of_any_extension_are_checked() {
    let dir = project(&[("job.txt", STEP_LOOP.as_bytes()), ("notes.txt", STEP_LOOP.as_bytes())]);
    assert_eq!(culint(dir.path(), &["check"]).code, 0, "directories only yield .py files");
    let run = culint(dir.path(), &["check", "job.txt", "--output-format", "concise"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.starts_with("job.txt:"), "{}", run.stdout);
}

#[test]
fn hardware_flags_are_validated() {
    let dir = project(&[("clean.py", CLEAN.as_bytes())]);
    assert_eq!(
        culint(dir.path(), &["check", "--gpus", "2", "--gpu-memory", "80GiB", "--compute-capability", "8.0"]).code,
        0
    );
    let bad = culint(dir.path(), &["check", "--gpu-memory", "80 parsecs"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("unknown unit `parsecs`"), "{}", bad.stderr);
    let bad_cc = culint(dir.path(), &["check", "--compute-capability", "eight"]);
    assert_eq!(bad_cc.code, 2);
}

#[test]
fn version_is_printed() {
    let dir = project(&[]);
    let run = culint(dir.path(), &["--version"]);
    assert_eq!((run.code, run.stdout.trim()), (0, concat!("culint ", env!("CARGO_PKG_VERSION"))));
}

#[test]
fn installed_packages_and_hidden_directories_are_not_searched() {
    let dir = project(&[
        ("train.py", STEP_LOOP.as_bytes()),
        ("venv/lib/python3.12/site-packages/torch/loop.py", STEP_LOOP.as_bytes()),
        (".venv/lib/loop.py", STEP_LOOP.as_bytes()),
        ("build/lib/loop.py", STEP_LOOP.as_bytes()),
    ]);
    let run = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL201"]);
    assert_eq!(run.stdout.lines().filter(|l| l.contains("CUL201")).count(), 1, "{}", run.stdout);
    let named = culint(dir.path(), &["check", "--output-format", "concise", "--select", "CUL201", "build"]);
    assert!(named.stdout.starts_with("build/lib/loop.py:"), "{}", named.stdout);
}

#[test]
fn an_empty_directory_passes_with_a_warning() {
    let dir = project(&[("README.md", b"# nothing here\n")]);
    let run = culint(dir.path(), &["check"]);
    assert_eq!(run.code, 0);
    assert!(run.stderr.contains("no Python files found"), "{}", run.stderr);
}

#[test]
fn probe_reads_the_gpu_or_says_why_not() {
    let dir = project(&[("clean.py", CLEAN.as_bytes())]);
    let run = culint(dir.path(), &["check", "--probe", "--probe-device", "0"]);
    match run.code {
        // A machine with a GPU and a driver.
        0 => assert_eq!(run.stdout, "All checks passed!\n"),
        // No driver or no device: one clear line that names the way out.
        2 => {
            assert!(run.stderr.starts_with("error: --probe: "), "{}", run.stderr);
            assert!(run.stderr.contains("give the facts with --gpus, --gpu-memory"), "{}", run.stderr);
            assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        }
        other => panic!("unexpected exit {other}: {}{}", run.stdout, run.stderr),
    }
    assert_eq!(culint(dir.path(), &["check", "--probe-device", "1"]).code, 2, "--probe-device needs --probe");
}

#[test]
fn a_config_named_with_a_relative_path_anchors_its_globs_at_its_directory() {
    let dir = project(&[
        ("ci/culint.toml", b"exclude = [\"legacy/*.py\"]\n[per-file-ignores]\n\"experiments/**\" = [\"CUL201\"]\n"),
        ("ci/legacy/old.py", STEP_LOOP.as_bytes()),
        ("ci/experiments/try.py", STEP_LOOP.as_bytes()),
        ("ci/train.py", STEP_LOOP.as_bytes()),
    ]);
    let run = culint(
        dir.path(),
        &["check", "--config", "ci/culint.toml", "--select", "CUL201", "--output-format", "concise", "ci"],
    );
    let files: Vec<&str> =
        run.stdout.lines().filter_map(|l| l.split(':').next()).filter(|f| f.ends_with(".py")).collect();
    assert_eq!(files, ["ci/train.py"], "{}{}", run.stdout, run.stderr);
}

#[test]
fn excluded_stdin_filenames_are_not_linted() {
    let dir = project(&[("culint.toml", b"exclude = [\"vendored\"]\n")]);
    let args = ["check", "-", "--stdin-filename", "vendored/loop.py", "--select", "CUL201"];
    let run = cli_support::culint_stdin(dir.path(), &args, STEP_LOOP.as_bytes());
    assert_eq!((run.code, run.stdout.as_str()), (0, "All checks passed!\n"), "{}", run.stderr);

    let mut fix_args = args.to_vec();
    fix_args.push("--fix");
    let fixed = cli_support::culint_stdin(dir.path(), &fix_args, STEP_LOOP.as_bytes());
    assert_eq!(fixed.stdout, STEP_LOOP, "an excluded file passes through --fix unchanged");
}

#[test]
fn configured_severity_reaches_every_format() {
    let dir = project(&[
        ("train.py", STEP_LOOP.as_bytes()),
        (
            "pyproject.toml",
            b"[tool.culint]\nselect = [\"CUL201\"]\n[tool.culint.severity]\nempty-cache-in-step-loop = \"error\"\n",
        ),
    ]);
    let github = culint(dir.path(), &["check", "--output-format", "github"]);
    assert!(github.stdout.starts_with("::error file=train.py,"), "{}", github.stdout);
    let full = culint(dir.path(), &["check"]);
    assert!(full.stdout.starts_with("error[CUL201]: "), "{}", full.stdout);
    let sarif = culint(dir.path(), &["check", "--output-format", "sarif"]);
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    assert_eq!(log["runs"][0]["results"][0]["level"], "error");
}

#[test]
fn output_format_comes_from_the_configuration_unless_given() {
    let dir = project(&[
        ("train.py", STEP_LOOP.as_bytes()),
        ("culint.toml", b"output-format = \"concise\"\nselect = [\"CUL201\"]\n"),
    ]);
    let configured = culint(dir.path(), &["check"]);
    assert!(configured.stdout.starts_with("train.py:12:5: CUL201 "), "{}", configured.stdout);
    let given = culint(dir.path(), &["check", "--output-format", "github"]);
    assert!(given.stdout.starts_with("::warning file=train.py,"), "{}", given.stdout);
}

/// An fp32 step loop on CUDA, as a test and as a training script would write it.
const FP32_LOOP: &str = "import torch\n\nmodel = torch.nn.Linear(4, 4).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor _ in range(3):\n    opt.zero_grad()\n    model(torch.randn(2, 4).cuda()).sum().backward()\n    opt.step()\n";

#[test]
fn show_context_says_what_each_file_is_and_tests_are_held_to_what_tests_cause() {
    let dir = project(&[
        ("tests/test_step.py", FP32_LOOP.as_bytes()),
        ("examples/train.py", FP32_LOOP.as_bytes()),
        ("pkg/modeling.py", b"import torch\n"),
    ]);
    let run = culint(dir.path(), &["check", "--show-context", "--output-format", "concise", "--exit-zero"]);
    let out = run.stdout.replace('\\', "/");
    assert!(out.contains("tests/test_step.py: test (pytest collects `test_step.py` by its name)"), "{out}");
    assert!(out.contains("examples/train.py: example (it is in `examples/`)"), "{out}");
    assert!(out.contains("pkg/modeling.py: library ("), "{out}");
    // The fp32 loop is a finding in the example, not in the test.
    assert!(out.contains("examples/train.py:7:") && out.contains("CUL302"), "{out}");
    assert!(!out.contains("tests/test_step.py:7:"), "{out}");

    let json = culint(dir.path(), &["check", "--output-format", "json", "--exit-zero"]);
    let findings: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(findings[0]["code_kind"]["kind"], "example", "{}", json.stdout);
}

#[test]
fn configured_code_kind_overrides_the_judgement() {
    let dir = project(&[
        ("pyproject.toml", b"[tool.culint]\ncode-kind = { \"tests/**\" = \"entry-point\" }\n"),
        ("tests/test_step.py", FP32_LOOP.as_bytes()),
    ]);
    let run = culint(dir.path(), &["check", "--show-context", "--output-format", "concise", "--exit-zero"]);
    let out = run.stdout.replace('\\', "/");
    assert!(out.contains("tests/test_step.py: entry-point (the configuration's `code-kind`"), "{out}");
    assert!(out.contains("tests/test_step.py:7:") && out.contains("CUL302"), "{out}");

    let bad =
        project(&[("pyproject.toml", b"[tool.culint]\ncode-kind = { \"x/**\" = \"benchmark\" }\n"), ("a.py", b"")]);
    let run = culint(bad.path(), &["check"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("expected one of \"test\", \"example\", \"entry-point\", \"library\""),
        "{}",
        run.stderr
    );
}

#[test]
fn cuda_amp_fix_is_unsafe_below_the_declared_torch_floor() {
    let script = b"import torch\n\nscaler = torch.cuda.amp.GradScaler()\n";
    let old = project(&[("pyproject.toml", b"[project]\ndependencies = [\"torch>=2.0\"]\n"), ("train.py", script)]);
    let run = culint(old.path(), &["check", "--output-format", "json", "--exit-zero"]);
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(findings[0]["fix"]["applicability"], "unsafe", "{}", run.stdout);
    let title = findings[0]["fix"]["message"].as_str().unwrap();
    assert!(title.contains("needs torch 2.3 or newer, and the project declares torch >= 2.0"), "{title}");
    culint(old.path(), &["check", "--fix", "--exit-zero"]);
    assert_eq!(std::fs::read(old.path().join("train.py")).unwrap(), script, "a safe --fix leaves it");

    let new = project(&[("pyproject.toml", b"[project]\ndependencies = [\"torch>=2.4\"]\n"), ("train.py", script)]);
    let run = culint(new.path(), &["check", "--output-format", "json", "--exit-zero"]);
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(findings[0]["fix"]["applicability"], "safe", "{}", run.stdout);
}

/// An fp32 step loop whose forward runs in a helper culint cannot see: a preview finding.
const UNSEEN_HELPER_LOOP: &str = "import torch\n\nfrom engine import log_step\n\nmodel = torch.nn.Linear(4, 4).cuda()\nfor x in range(10):\n    log_step(x)\n    loss = model(torch.randn(2, 4).cuda()).sum()\n    loss.backward()\n";

#[test]
fn findings_carry_their_facts_and_preview_ones_show_only_when_asked() {
    let dir = project(&[("train.py", FP32_LOOP.as_bytes()), ("helper_loop.py", UNSEEN_HELPER_LOOP.as_bytes())]);
    let full = culint(dir.path(), &["check", "--exit-zero"]);
    assert!(
        full.stdout.contains("note: rests on: device: CUDA, from `model = torch.nn.Linear(4, 4).cuda()` (line 3)"),
        "{}",
        full.stdout
    );
    assert!(!full.stdout.contains("helper_loop.py") && !full.stdout.contains("(preview)"), "{}", full.stdout);

    let json = culint(dir.path(), &["check", "--output-format", "json", "--exit-zero"]);
    let findings: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(findings.as_array().unwrap().len(), 1, "{}", json.stdout);
    assert_eq!(findings[0]["preview"], false);
    assert!(findings[0]["facts"][0].as_str().unwrap().starts_with("device: CUDA"), "{}", json.stdout);
    assert_eq!(findings[0]["assumptions"], serde_json::json!([]));

    let preview = culint(dir.path(), &["check", "--preview", "--output-format", "concise", "--exit-zero"]);
    let line = preview
        .stdout
        .lines()
        .find(|l| l.starts_with("helper_loop.py:9:"))
        .unwrap_or_else(|| panic!("{}", preview.stdout));
    assert!(line.ends_with("(preview)"), "{line}");
    let full = culint(dir.path(), &["check", "--preview", "--exit-zero", "helper_loop.py"]);
    assert!(full.stdout.contains("note: assumes: `log_step(x)` (line 7) is not followed"), "{}", full.stdout);
    let sarif =
        culint(dir.path(), &["check", "--preview", "--output-format", "sarif", "--exit-zero", "helper_loop.py"]);
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let properties = &log["runs"][0]["results"][0]["properties"];
    assert_eq!(properties["preview"], true, "{}", sarif.stdout);
    assert!(properties["assumptions"][0].as_str().unwrap().contains("log_step"), "{}", sarif.stdout);

    // The configuration turns preview on; the command line turns it off again.
    write(&dir.path().join("pyproject.toml"), b"[tool.culint]\npreview = true\n");
    let configured = culint(dir.path(), &["check", "--output-format", "concise", "--exit-zero"]);
    assert!(configured.stdout.contains("helper_loop.py:9:"), "{}", configured.stdout);
    let off = culint(dir.path(), &["check", "--no-preview", "--output-format", "concise", "--exit-zero"]);
    assert!(!off.stdout.contains("helper_loop.py"), "{}", off.stdout);
}

#[test]
fn fix_applies_no_fix_of_a_hidden_preview_finding() {
    let dir = project(&[("helper_loop.py", UNSEEN_HELPER_LOOP.as_bytes())]);
    culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--exit-zero"]);
    assert_eq!(std::fs::read_to_string(dir.path().join("helper_loop.py")).unwrap(), UNSEEN_HELPER_LOOP);
    culint(dir.path(), &["check", "--preview", "--fix", "--unsafe-fixes", "--exit-zero"]);
    assert!(std::fs::read_to_string(dir.path().join("helper_loop.py")).unwrap().contains("torch.autocast"));
}
