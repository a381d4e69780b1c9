//! Malicious configuration, through the built binary: a pyproject.toml or culint.toml from an
//! untrusted checkout may only select rules and set options. Huge values, deep nesting, paths that
//! leave the project and unknown keys are refused with an error that names the file (exit 2), and
//! no value is ever run as a program.

mod cli_support;

use std::path::Path;

use cli_support::{Run, STEP_LOOP, culint, project};

/// Check a project whose culint.toml is `config`, expecting a configuration error.
fn refused(config: &str) -> (tempfile::TempDir, Run) {
    let dir = project(&[("culint.toml", config.as_bytes()), ("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check"]);
    assert_eq!(run.code, 2, "config {:.200}: {}{}", config, run.stdout, run.stderr);
    assert!(run.stdout.is_empty(), "no findings printed under a broken configuration: {}", run.stdout);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(run.stderr.starts_with("error: ") && run.stderr.contains("culint.toml: "), "{}", run.stderr);
    (dir, run)
}

#[test]
fn huge_values_are_refused() {
    let (_, run) = refused("max-file-size = 9223372036854775807\n");
    assert!(run.stderr.contains("`max-file-size` at the top level: 9223372036854775807 bytes is more than"), "{}", {
        run.stderr
    });
    let (_, run) = refused("max-file-size = \"1e30 GB\"\n");
    assert!(run.stderr.contains("`max-file-size`"), "{}", run.stderr);
    let (_, run) = refused("max-file-size = -1\n");
    assert!(run.stderr.contains("expected a positive size"), "{}", run.stderr);
    // A 5 MB configuration file is refused before it is parsed; a list of 100,000 unknown
    // selectors is refused with the key named.
    let (_, run) = refused(&format!("select = [\"{}\"]\n", "C".repeat(5_000_000)));
    assert!(run.stderr.contains("too large for a configuration file"), "{:.300}", run.stderr);
    let (_, run) = refused(&format!("ignore = [{}]\n", vec!["\"CUL999\""; 100_000].join(", ")));
    assert!(run.stderr.contains("`ignore` at the top level"), "{:.300}", run.stderr);
}

#[test]
fn deep_nesting_is_refused_without_a_crash() {
    for depth in [1_000, 100_000] {
        let (_, run) = refused(&format!("select = {}{}\n", "[".repeat(depth), "]".repeat(depth)));
        assert!(run.stderr.contains("culint.toml"), "{:.300}", run.stderr);
        let tables: String = (0..depth.min(5_000)).map(|i| format!("[t{i}]\n")).collect();
        let nested = format!("severity = {}\"error\"{}\n", "{ a = ".repeat(depth), " }".repeat(depth));
        let (_, run) = refused(&nested);
        assert!(run.stderr.contains("culint.toml"), "{:.300}", run.stderr);
        let (_, run) = refused(&tables);
        assert!(run.stderr.contains("unknown key `t0`"), "{:.300}", run.stderr);
    }
}

#[test]
fn knowledge_dirs_outside_the_project_are_refused() {
    let (_, run) = refused("knowledge-dirs = [\"../../etc\"]\n");
    assert!(run.stderr.contains("`knowledge-dirs` at the top level: directory `../../etc`"), "{}", run.stderr);
    let (_, run) = refused("knowledge-dirs = [\"/etc\"]\n");
    assert!(run.stderr.contains("outside"), "{}", run.stderr);
    assert!(run.stderr.contains("knowledge directories must stay inside the project"), "{}", run.stderr);

    #[cfg(unix)]
    {
        // A link inside the project that points out of it is resolved before the check.
        let dir = project(&[("culint.toml", b"knowledge-dirs = [\"kb\"]\n"), ("train.py", STEP_LOOP.as_bytes())]);
        std::os::unix::fs::symlink("/etc", dir.path().join("kb")).unwrap();
        let run = culint(dir.path(), &["check"]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("directory `kb` resolves to /etc, outside"), "{}", run.stderr);
    }
}

#[test]
fn unknown_keys_are_refused_with_the_known_ones_listed() {
    let (_, run) = refused("select = [\"CUL201\"]\nplugins = [\"evil\"]\n");
    assert!(run.stderr.contains("unknown key `plugins` at the top level; expected one of `select`"), "{}", run.stderr);

    let pyproject = "[project]\nname = \"x\"\n[tool.culint]\nsubprocess = \"rm -rf /\"\n";
    let dir = project(&[("pyproject.toml", pyproject.as_bytes()), ("train.py", STEP_LOOP.as_bytes())]);
    let run = culint(dir.path(), &["check"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("pyproject.toml: unknown key `subprocess` in [tool.culint]"), "{}", run.stderr);
}

/// Every string value a configuration can hold, set to a shell command that would leave a marker
/// file behind if anything ever ran it.
#[test]
fn configuration_never_runs_a_program() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let command = format!("$(touch {0}) `touch {0}`; touch {0}", marker.display());
    let quoted = toml_string(&command);
    let configs = [
        format!("select = [{quoted}]\n"),
        format!("ignore = [{quoted}]\n"),
        format!("output-format = {quoted}\n"),
        format!("max-file-size = {quoted}\n"),
        format!("knowledge-dirs = [{quoted}]\n"),
        format!("severity = {{ {quoted} = \"error\" }}\n"),
    ];
    for config in &configs {
        let (_, run) = refused(config);
        assert!(!marker.exists(), "{config} ran a program: {}", run.stderr);
    }
    // Path patterns are data too: the same text is accepted as a pattern (it matches no file) and
    // runs nothing.
    for accepted in [format!("exclude = [{quoted}]\n"), format!("per-file-ignores = {{ {quoted} = [\"CUL201\"] }}\n")] {
        let project_dir = project(&[("culint.toml", accepted.as_bytes()), ("train.py", STEP_LOOP.as_bytes())]);
        let run = culint(project_dir.path(), &["check", "--select", "CUL201"]);
        assert_eq!(run.code, 1, "{accepted}: {}", run.stderr);
        assert!(!marker.exists(), "{accepted} ran a program");
        assert_no_program_runs_in(project_dir.path());
    }
}

fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `culint check` starts no child process: run it under a PATH where every common program is a
/// script that records its own invocation.
#[cfg(unix)]
fn assert_no_program_runs_in(project: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("invoked.log");
    for program in ["sh", "bash", "python", "python3", "git", "pip", "nvidia-smi", "uv", "env"] {
        let path = bin.path().join(program);
        std::fs::write(&path, format!("#!/bin/sh\necho {program} >> {}\n", log.display())).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let output = cli_support::culint_command(project)
        .args(["check", "--select", "CUL201"])
        .env("PATH", bin.path())
        .output()
        .expect("culint runs");
    assert!(output.status.code().is_some(), "culint exited normally");
    assert!(!log.exists(), "culint ran: {}", std::fs::read_to_string(&log).unwrap_or_default());
}

#[cfg(not(unix))]
fn assert_no_program_runs_in(_project: &Path) {}
