//! `culint explain` as a user runs it: inputs, formats, languages and exit codes.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn culint() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_culint"));
    command.env_remove("NO_COLOR");
    command
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/explain").join(name)
}

fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child =
        culint().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn error_text_as_arguments() {
    let output = culint()
        .args(["explain", "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling", "`cublasLtMatmul(`"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.starts_with("[cublas/not-supported]"), "{stdout}");
    assert!(stdout.contains("Call site: cublasLtMatmul"));
    assert!(!stdout.contains('\u{1b}'), "no colour when stdout is not a terminal");
}

#[test]
fn log_file_with_json_output() {
    let log = fixture("torchrun_cublas_alloc_failed.log");
    let output = culint().args(["explain", "--format", "json", "--file"]).arg(&log).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["findings"][0]["id"], "cublas/alloc-failed");
    assert_eq!(json["findings"][0]["ranks"], serde_json::json!(["rank0", "rank1", "rank2", "rank3"]));
}

#[test]
fn log_on_stdin_in_chinese() {
    let log = std::fs::read_to_string(fixture("oom_old_fragmentation.log")).unwrap();
    let output = run_with_stdin(&["explain", "--lang", "zh-CN", "--color", "never"], &log);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("碎片化导致的 CUDA 显存不足"), "{stdout}");
    assert!(stdout.contains("诊断：碎片化"), "{stdout}");
}

#[test]
fn auto_language_follows_the_locale() {
    let output = culint()
        .args(["explain", "--lang", "auto", "CUDA error: invalid device ordinal"])
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", "zh_CN.UTF-8")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("GPU 序号不存在"), "{}", text(&output.stdout));
}

#[test]
fn nothing_known_exits_1_with_a_message() {
    let output = culint().args(["explain", "--file"]).arg(fixture("no_cuda_error.log")).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("no known CUDA, cuBLAS, cuDNN or NCCL error found in") && stderr.contains("13 lines"),
        "{stderr}"
    );

    let output = culint().args(["explain", "--format", "json", "KeyError: 'x'"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["matched"], false);
}

#[test]
fn usage_errors_exit_2() {
    let missing = culint().args(["explain", "--file", "/nonexistent/train.log"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("cannot read /nonexistent/train.log"));

    let both = culint().args(["explain", "--file", "x.log", "some text"]).output().unwrap();
    assert_eq!(both.status.code(), Some(2));

    let language = culint().args(["explain", "--lang", "fr", "x"]).output().unwrap();
    assert_eq!(language.status.code(), Some(2));
    assert!(text(&language.stderr).contains("unknown language `fr`: use `en`, `zh` or `auto`"));

    let dir = culint().args(["explain", "--knowledge-dir", "/nonexistent/kb", "x"]).output().unwrap();
    assert_eq!(dir.status.code(), Some(2));
    assert!(text(&dir.stderr).contains("/nonexistent/kb"));

    let entry = culint().args(["explain", "--entry", "cublas/nope"]).output().unwrap();
    assert_eq!(entry.status.code(), Some(2));
    assert!(text(&entry.stderr).contains("no entry `cublas/nope`"));
}

#[test]
fn list_and_show_entries() {
    let list = culint().args(["explain", "--list"]).output().unwrap();
    assert_eq!(list.status.code(), Some(0));
    let stdout = text(&list.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("cublas/alloc-failed ")), "{stdout}");
    assert!(stdout.lines().count() >= 17);

    let entry = culint().args(["explain", "--entry", "cuda/oom-fragmentation", "--lang", "zh"]).output().unwrap();
    assert_eq!(entry.status.code(), Some(0));
    assert!(text(&entry.stdout).starts_with("### 碎片化导致的 CUDA 显存不足"));
}

const XID_ENTRY: &str = r#"
id = "team/xid-79"
title.en = "GPU fell off the bus"
cause.en = "Hardware or power fault."
[match]
patterns = ['GPU has fallen off the bus']
examples = ["NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", "GPU has fallen off the bus"]
[[workarounds]]
action.en = "Drain the node."
when.en = "Always."
code = "scontrol update nodename=$HOST state=drain"
sources = ["https://docs.nvidia.com/deploy/xid-errors/index.html"]
"#;

#[test]
fn user_knowledge_directory_is_used() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("xid.toml"), XID_ENTRY).unwrap();
    let output = culint()
        .args(["explain", "--knowledge-dir"])
        .arg(dir.path())
        .arg("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("[team/xid-79] GPU fell off the bus"));
}

#[test]
fn configured_knowledge_dirs_are_used() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("kb")).unwrap();
    std::fs::write(project.path().join("kb/xid.toml"), XID_ENTRY).unwrap();
    std::fs::write(project.path().join("culint.toml"), "knowledge-dirs = [\"kb\"]\n").unwrap();
    let output = culint().current_dir(project.path()).args(["explain", "GPU has fallen off the bus"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("[team/xid-79]"));

    std::fs::write(project.path().join("culint.toml"), "knowledge-dirs = 3\n").unwrap();
    let output = culint().current_dir(project.path()).args(["explain", "x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("culint.toml"), "{}", text(&output.stderr));
}
