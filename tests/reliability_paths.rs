//! `culint check` on hostile file systems, through the built binary: symbolic-link loops,
//! unreadable files, files deleted while the run is under way, awkward path names, read-only files
//! under `--fix`, and files over the size limit. Each case must end with a clear line on stderr and
//! the run must go on with the other files.

mod cli_support;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use cli_support::{Run, STEP_LOOP, culint, culint_command, project, write};

/// Wait for `child`, failing the test instead of hanging when a walk never ends.
fn finish_within(mut child: Child, limit: Duration) -> Run {
    let started = Instant::now();
    while child.try_wait().expect("culint can be waited for").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("culint was still running after {limit:?}: a walk that never ends");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("culint's output").into()
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    culint_command(dir).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("culint runs")
}

#[cfg(unix)]
#[test]
fn symlink_loops_end_with_an_error_line_not_a_hang() {
    use std::os::unix::fs::symlink;
    let dir = project(&[("train.py", STEP_LOOP.as_bytes())]);
    // A directory that contains itself, and two files that point at each other.
    symlink(".", dir.path().join("again")).unwrap();
    symlink("b.py", dir.path().join("a.py")).unwrap();
    symlink("a.py", dir.path().join("b.py")).unwrap();

    let walked = finish_within(spawn(dir.path(), &["check", "--select", "CUL201", "--output-format", "concise"]), {
        Duration::from_secs(60)
    });
    assert_eq!(walked.code, 1, "{}", walked.stderr);
    assert_eq!(walked.stdout.matches("CUL201").count(), 1, "train.py once, not once per loop: {}", walked.stdout);
    assert!(!walked.stderr.contains("panicked"), "{}", walked.stderr);

    let named = finish_within(spawn(dir.path(), &["check", "--select", "CUL201", "a.py", "train.py"]), {
        Duration::from_secs(60)
    });
    assert_eq!(named.code, 2, "an unreadable path is an error: {}", named.stderr);
    assert!(named.stderr.contains("error: a.py: Too many levels of symbolic links"), "{}", named.stderr);
    assert!(named.stdout.contains("train.py"), "the run went on: {}", named.stdout);
}

#[cfg(unix)]
#[test]
fn unreadable_files_are_reported_and_the_run_goes_on() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project(&[("train.py", STEP_LOOP.as_bytes()), ("secret.py", STEP_LOOP.as_bytes())]);
    let secret = dir.path().join("secret.py");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&secret).is_ok() {
        // Root (as in many CI containers) reads a mode-000 file anyway: there is nothing to deny.
        eprintln!("skipped: running with privileges that read mode-000 files (root), so no read can be denied");
        return;
    }
    let run = culint(dir.path(), &["check", "--select", "CUL201", "--output-format", "concise"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("error: secret.py: Permission denied"), "{}", run.stderr);
    assert!(run.stdout.starts_with("train.py:"), "the run went on: {}", run.stdout);
}

/// Delete files while `culint check` is linting them. Whatever the timing, every file either
/// yields its finding or one error line that names it, and nothing panics. The race is run until
/// a deletion lands between the walk and the read (the case under test), a few times at most.
#[test]
fn files_deleted_during_the_run_give_error_lines_and_the_run_goes_on() {
    const FILES: usize = 300;
    let mut caught_mid_run = false;
    for _attempt in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..FILES {
            write(&dir.path().join(format!("train_{i:03}.py")), STEP_LOOP.as_bytes());
        }
        let child = spawn(dir.path(), &["check", "--select", "CUL201", "--output-format", "concise"]);
        // Delete the odd files from the last one down, spread over a few hundred milliseconds:
        // the walk sorts by name and linting starts at the front, so some deletions land after
        // the walk and before the read.
        for i in (0..FILES).rev().filter(|i| i % 2 == 1) {
            let _ = std::fs::remove_file(dir.path().join(format!("train_{i:03}.py")));
            std::thread::sleep(Duration::from_millis(2));
        }
        let run = finish_within(child, Duration::from_secs(120));
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error: ")).collect();
        for line in &errors {
            assert!(line.ends_with(": No such file or directory (os error 2)"), "an unclear error line: {line}");
        }
        for i in (0..FILES).filter(|i| i % 2 == 0) {
            let name = format!("train_{i:03}.py:");
            assert!(run.stdout.contains(&name), "{name} survived and must be reported:\n{}", run.stderr);
        }
        for i in (0..FILES).filter(|i| i % 2 == 1) {
            // Deleted before the walk: never mentioned; after the read: reported; in between: one error.
            let name = format!("train_{i:03}.py");
            let reported = run.stdout.contains(&format!("{name}:"));
            let errored = errors.iter().any(|l| l.starts_with(&format!("error: {name}:")));
            assert!(!(reported && errored), "{name} both reported and missing");
        }
        assert_eq!(run.code, if errors.is_empty() { 1 } else { 2 }, "{}", run.stderr);
        if !errors.is_empty() {
            caught_mid_run = true;
            break;
        }
    }
    if !caught_mid_run {
        eprintln!("note: every deletion landed before the walk; the mid-run case was not exercised this time");
    }
}

#[cfg(unix)]
#[test]
fn paths_with_spaces_and_non_utf8_bytes_are_linted() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = project(&[("my project/train step.py", STEP_LOOP.as_bytes())]);
    let latin1_name = dir.path().join("my project").join(OsStr::from_bytes(b"caf\xe9.py"));
    if std::fs::write(&latin1_name, STEP_LOOP).is_err() {
        eprintln!("skipped: this file system refuses non-UTF-8 file names");
        return;
    }
    let run = culint(dir.path(), &["check", "--select", "CUL201", "--output-format", "concise", "my project"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("my project/train step.py:"), "{}", run.stdout);
    // Not UTF-8, so printed lossily, but reported, as its own file.
    assert!(run.stdout.contains("my project/caf\u{fffd}.py:"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("CUL201").count(), 2, "{}", run.stdout);

    let fixed = culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--select", "CUL201", "my project"]);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    assert_ne!(std::fs::read(&latin1_name).unwrap(), STEP_LOOP.as_bytes(), "the file with the odd name was fixed");
}

#[cfg(unix)]
#[test]
fn fix_on_a_read_only_file_says_so_and_changes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project(&[("frozen.py", STEP_LOOP.as_bytes())]);
    let frozen = dir.path().join("frozen.py");
    std::fs::set_permissions(&frozen, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = culint(dir.path(), &["check", "--fix", "--unsafe-fixes", "--select", "CUL201"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("error: frozen.py: cannot write the fixed file: the file is read-only; the file is unchanged"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&frozen).unwrap(), STEP_LOOP);
    assert_eq!(std::fs::metadata(&frozen).unwrap().permissions().mode() & 0o777, 0o444);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left behind: {leftovers:?}");
}

#[test]
fn files_over_the_size_limit_are_skipped_with_a_note() {
    let padding = "# padding\n".repeat(2000);
    let big = format!("{STEP_LOOP}{padding}");
    let dir = project(&[
        ("culint.toml", b"max-file-size = \"10KB\"\n"),
        ("big.py", big.as_bytes()),
        ("train.py", STEP_LOOP.as_bytes()),
    ]);
    let run = culint(dir.path(), &["check", "--select", "CUL201", "--output-format", "concise"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let note = format!("warning: big.py: skipped: {} bytes is over `max-file-size` (10000 bytes)", big.len());
    assert!(run.stderr.contains(&note), "{}", run.stderr);
    assert!(run.stdout.starts_with("train.py:") && !run.stdout.contains("big.py"), "{}", run.stdout);

    // The default limit (10 MB) applies without any configuration.
    let huge = format!("{STEP_LOOP}{}", "#".repeat(10_000_001));
    let bare = project(&[("huge.py", huge.as_bytes())]);
    let run = culint(bare.path(), &["check", "--select", "CUL201"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("warning: huge.py: skipped:"), "{}", run.stderr);
}
