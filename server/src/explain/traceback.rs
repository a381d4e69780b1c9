//! Python traceback frames of an error, and the user's own files among them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::streams::Stream;
use crate::lint::{LintContext, LintSettings, lint_text};
use crate::text::LineIndex;

/// `File "train.py", line 88, in <module>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Frame {
    /// The path as printed in the log.
    pub file: String,
    pub line: usize,
    pub function: Option<String>,
}

static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>\S+))?"#)
        .expect("frame pattern compiles")
});

/// A traceback starts here; its frames end at the error line.
const TRACEBACK_START: &str = "Traceback (most recent call last):";
/// How far back from the error line to look for its frames when no traceback header is found.
const MAX_TRACEBACK_LINES: usize = 400;

/// The frames of the traceback that ends at stream line `error_line`, outermost first.
pub fn frames_before(stream: &Stream, error_line: usize) -> Vec<Frame> {
    let mut frames = Vec::new();
    let first = error_line.saturating_sub(MAX_TRACEBACK_LINES);
    for index in (first..=error_line).rev() {
        let line = stream.line(index);
        if let Some(c) = FRAME.captures(line) {
            frames.push(Frame {
                file: c["file"].to_owned(),
                line: c["line"].parse().unwrap_or(0),
                function: c.name("function").map(|m| m.as_str().to_owned()),
            });
        }
        if line.contains(TRACEBACK_START) {
            break;
        }
    }
    frames.reverse();
    frames
}

/// Library and interpreter frames are not the user's code.
fn is_library_path(file: &str) -> bool {
    file.starts_with('<')
        || ["site-packages", "dist-packages", "/lib/python", "\\lib\\python"].iter().any(|marker| file.contains(marker))
}

/// Where a printed path lives on this machine: as printed, relative to `root`, or, for a log
/// from another machine, the longest trailing part of it that exists under `root`
/// (`/workspace/proj/src/train.py` → `src/train.py`).
pub fn resolve(file: &str, root: &Path) -> Option<PathBuf> {
    if is_library_path(file) || !file.ends_with(".py") {
        return None;
    }
    let printed = Path::new(file);
    if printed.is_absolute() && printed.is_file() {
        return Some(printed.to_path_buf());
    }
    // Split on both separators: logs from Windows machines print `C:\proj\train.py`.
    let parts: Vec<&str> = file
        .split(['/', '\\'])
        .filter(|part| !part.is_empty() && *part != "." && *part != ".." && !part.ends_with(':'))
        .collect();
    (0..parts.len()).find_map(|skip| {
        let candidate = parts[skip..].iter().fold(root.to_path_buf(), |path, part| path.join(part));
        candidate.is_file().then_some(candidate)
    })
}

/// A frame of the user's own code, found on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocalFrame {
    /// The file on this machine, relative to the root when it is inside it.
    pub path: String,
    #[serde(skip)]
    pub resolved: PathBuf,
    pub line: usize,
    pub function: Option<String>,
    /// The source line as it reads now, which may differ from the run that failed.
    pub source: Option<String>,
}

/// The frames whose files exist under `root`, each file read once.
pub fn local_frames(frames: &[Frame], root: &Path) -> Vec<LocalFrame> {
    let mut texts: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for frame in frames {
        let Some(resolved) = resolve(&frame.file, root) else {
            continue;
        };
        let text = texts.entry(resolved.clone()).or_insert_with(|| std::fs::read_to_string(&resolved).ok());
        let source = text
            .as_deref()
            .and_then(|text| text.lines().nth(frame.line.wrapping_sub(1)))
            .map(|line| line.trim().to_owned());
        out.push(LocalFrame {
            path: display_path(&resolved, root),
            resolved,
            line: frame.line,
            function: frame.function.clone(),
            source,
        });
    }
    out
}

fn display_path(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// A lint finding in a file of the traceback.
#[derive(Clone, Debug, Serialize)]
pub struct CodeFinding {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub code: &'static str,
    pub name: &'static str,
    pub message: String,
    /// The traceback line it is near, when that is why it was picked.
    pub near_frame_line: Option<usize>,
}

/// Findings within this many lines of a frame are shown as likely causes.
pub const NEAR_LINES: usize = 10;

/// Lint each file of `frames` and keep the findings near a frame, or of a rule in
/// `related_rules` anywhere in the file (such as CUL101 for an out-of-memory on GPU 0).
pub fn likely_causes(frames: &[LocalFrame], related_rules: &[String]) -> Vec<CodeFinding> {
    let mut lines_by_file: BTreeMap<(&PathBuf, &str), Vec<usize>> = BTreeMap::new();
    for frame in frames {
        lines_by_file.entry((&frame.resolved, frame.path.as_str())).or_default().push(frame.line);
    }
    let settings = LintSettings::default();
    let mut out = Vec::new();
    for ((path, shown), frame_lines) in lines_by_file {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let index = LineIndex::new(&text);
        for diagnostic in lint_text(
            &text,
            LintContext { path: Some(path), project: None, code_kind: None, preview: false },
            &settings,
        ) {
            let line = index.line_of(diagnostic.range.start) + 1;
            let near =
                frame_lines.iter().copied().filter(|f| f.abs_diff(line) <= NEAR_LINES).min_by_key(|f| f.abs_diff(line));
            if near.is_none() && !related_rules.iter().any(|code| code == diagnostic.code) {
                continue;
            }
            let line_start = index.line_start(line - 1);
            out.push(CodeFinding {
                path: shown.to_owned(),
                line,
                column: text[line_start..diagnostic.range.start].chars().count() + 1,
                code: diagnostic.code,
                name: diagnostic.name,
                message: diagnostic.message.to_string(),
                near_frame_line: near,
            });
        }
    }
    out
}

/// A line of the user's code that puts a module or tensor on a device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub path: String,
    pub line: usize,
    pub source: String,
}

/// `.to(...)`, `.cuda(...)`, `.cpu()`, `device=...`, `torch.device(...)`, `set_device(...)`.
static PLACEMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\.(?:to|cuda|cpu)\(|\bdevice\s*=[^=]|\btorch\.device\(|\bset_device\(")
        .expect("placement pattern compiles")
});

/// Placements listed per report: enough to see where the model and the batch go.
pub const MAX_PLACEMENTS: usize = 20;

/// The lines of the frames' files that place modules and tensors on devices, in file order.
pub fn placements(frames: &[LocalFrame]) -> Vec<Placement> {
    let mut files: Vec<(&PathBuf, &str)> = Vec::new();
    for frame in frames {
        if !files.iter().any(|(path, _)| *path == &frame.resolved) {
            files.push((&frame.resolved, frame.path.as_str()));
        }
    }
    let mut out = Vec::new();
    for (path, shown) in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for (index, line) in text.lines().enumerate() {
            let code = line.split('#').next().unwrap_or_default();
            if PLACEMENT.is_match(code) {
                out.push(Placement { path: shown.to_owned(), line: index + 1, source: line.trim().to_owned() });
                if out.len() == MAX_PLACEMENTS {
                    return out;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_frames_are_not_resolved() {
        let root = Path::new(".");
        assert_eq!(resolve("/usr/lib/python3.10/site-packages/torch/nn/modules/linear.py", root), None);
        assert_eq!(resolve("<frozen runpy>", root), None);
        assert_eq!(resolve("notes.txt", root), None);
    }

    #[test]
    fn foreign_absolute_paths_resolve_by_suffix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/train.py"), "x = 1\n").unwrap();
        let resolved = resolve("/workspace/project/src/train.py", dir.path()).unwrap();
        assert_eq!(resolved, dir.path().join("src/train.py"));
        assert_eq!(resolve("/workspace/project/src/missing.py", dir.path()), None);
        let windows = resolve(r"C:\Users\me\project\src\train.py", dir.path()).unwrap();
        assert_eq!(windows, dir.path().join("src/train.py"));
        assert_eq!(resolve("src/train.py", dir.path()).unwrap(), dir.path().join("src/train.py"));
    }
}
