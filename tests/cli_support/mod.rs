//! Helpers shared by the `culint` end-to-end tests: run the built binary in a directory.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A training loop that empties the cache every step (CUL201).
pub const STEP_LOOP: &str = include_str!("../fixtures/cli/step_loop.py");
/// A file that mentions torch but has nothing to report.
pub const CLEAN: &str = include_str!("../fixtures/cli/clean.py");

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code().expect("culint exited normally"),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }
}

pub fn culint_command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_culint"));
    command.current_dir(dir).env_remove("NO_COLOR").env_remove("FORCE_COLOR").stdin(Stdio::null());
    command
}

/// Run `culint ARGS` in `dir`.
pub fn culint(dir: &Path, args: &[&str]) -> Run {
    culint_command(dir).args(args).output().expect("culint runs").into()
}

/// Run `culint ARGS` in `dir` with `input` on standard input.
pub fn culint_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Run {
    let mut child = culint_command(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("culint runs");
    child.stdin.take().expect("stdin is piped").write_all(input).expect("stdin takes the input");
    child.wait_with_output().expect("culint finishes").into()
}

/// A temporary project directory with the given files.
pub fn project(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (path, contents) in files {
        write(&dir.path().join(path), contents);
    }
    dir
}

pub fn write(path: &Path, contents: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("directories");
    std::fs::write(path, contents).expect("file written");
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
