//! Glob patterns of `exclude` and `per-file-ignores`, relative to the directory of the
//! configuration file that declares them.

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobMatcher};

/// One glob. A pattern without `/` (`__init__.py`, `build`, `test_*.py`) matches any file or
/// directory of that name at any depth, as in `.gitignore`; a pattern with `/` (`tests/**`,
/// `scripts/*.py`) matches the path relative to the configuration directory.
#[derive(Clone, Debug)]
pub struct PathPattern {
    source: String,
    matcher: GlobMatcher,
    anchored: bool,
}

impl PathPattern {
    pub fn new(pattern: &str) -> Result<Self, String> {
        let trimmed = pattern.trim();
        let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        if trimmed.is_empty() {
            return Err(format!("`{pattern}` is an empty pattern"));
        }
        let anchored = trimmed.contains('/');
        let glob: Glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("`{pattern}` is not a valid glob: {}", e.kind()))?;
        Ok(Self { source: pattern.to_owned(), matcher: glob.compile_matcher(), anchored })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `path` (absolute, or relative to the current directory) matches, with `root` the
    /// directory the pattern is relative to.
    pub fn matches(&self, root: &Path, path: &Path) -> bool {
        let relative = relative_to(root, path);
        if self.anchored {
            return self.matcher.is_match(&relative);
        }
        relative.components().any(|c| matches!(c, Component::Normal(name) if self.matcher.is_match(name)))
    }
}

/// A list of patterns that matches when any of them does.
#[derive(Clone, Debug, Default)]
pub struct PathPatterns {
    patterns: Vec<PathPattern>,
}

impl PathPatterns {
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, String> {
        let patterns = patterns.iter().map(|p| PathPattern::new(p.as_ref())).collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn matches(&self, root: &Path, path: &Path) -> bool {
        self.patterns.iter().any(|p| p.matches(root, path))
    }
}

/// `path` relative to `root` when it lies inside it, else `path` itself, without `.` components.
fn relative_to(root: &Path, path: &Path) -> PathBuf {
    let stripped = path.strip_prefix(root).unwrap_or(path);
    stripped.components().filter(|c| !matches!(c, Component::CurDir)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        PathPattern::new(pattern).unwrap().matches(Path::new("/repo"), Path::new(path))
    }

    #[test]
    fn bare_names_match_at_any_depth() {
        assert!(matches("__init__.py", "/repo/pkg/__init__.py"));
        assert!(matches("build", "/repo/build/gen.py"));
        assert!(matches("build/", "/repo/sub/build/gen.py"));
        assert!(matches("test_*.py", "/repo/tests/test_train.py"));
        assert!(!matches("test_*.py", "/repo/tests/train.py"));
    }

    #[test]
    fn patterns_with_a_slash_are_relative_to_the_config_directory() {
        assert!(matches("tests/**", "/repo/tests/unit/test_a.py"));
        assert!(matches("./scripts/*.py", "/repo/scripts/run.py"));
        assert!(!matches("scripts/*.py", "/repo/scripts/deep/run.py"));
        assert!(!matches("tests/**", "/repo/src/tests_helper.py"));
        assert!(!matches("tests/**", "/elsewhere/tests/x.py"));
    }

    #[test]
    fn invalid_globs_are_reported() {
        assert!(PathPattern::new("a/[b").unwrap_err().contains("not a valid glob"));
        assert!(PathPattern::new("  ").unwrap_err().contains("empty pattern"));
    }
}
