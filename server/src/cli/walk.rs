//! Which files `culint check` looks at: `.py` files and `.ipynb` notebooks under the given
//! directories, in parallel, honouring `.gitignore` and each configuration's `exclude`, plus
//! every file named explicitly.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::{WalkBuilder, WalkState};

use crate::config::{ConfigError, Resolver};

/// Directories never searched, whatever the configuration says: installed packages and build
/// output, where findings are not the user's to fix (hidden directories such as `.venv` and
/// `.git` are skipped as well). Naming such a directory explicitly still checks it.
pub const DEFAULT_EXCLUDES: &[&str] =
    &["venv", "site-packages", "node_modules", "__pypackages__", "build", "dist", "_build", "buck-out"];

/// What a walk found: files to lint, and problems to report.
#[derive(Debug, Default)]
pub struct Walk {
    /// Sorted and without duplicates.
    pub files: Vec<PathBuf>,
    /// Paths that could not be read, as `path: reason`.
    pub io_errors: Vec<String>,
    pub config_errors: Vec<ConfigError>,
}

/// Collect the files under `paths`. Explicitly named files are linted whatever their extension,
/// but a configuration's `exclude` still applies to them, so that pre-commit, which names every
/// staged file, honours it.
pub fn collect_files(paths: &[PathBuf], resolver: &Arc<Resolver>) -> Walk {
    let found = Arc::new(Mutex::new(Walk::default()));
    let mut directories = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Err(error) => lock(&found).io_errors.push(format!("{}: {error}", path.display())),
            Ok(metadata) if metadata.is_dir() => directories.push(path.clone()),
            Ok(_) => match resolver.is_excluded(path) {
                Ok(true) => {}
                Ok(false) => lock(&found).files.push(path.clone()),
                Err(error) => lock(&found).config_errors.push(error),
            },
        }
    }
    if let Some((first, rest)) = directories.split_first() {
        let mut builder = WalkBuilder::new(first);
        for directory in rest {
            builder.add(directory);
        }
        let filter_resolver = resolver.clone();
        let filter_found = found.clone();
        builder
            // `.gitignore` counts even outside a git checkout (a copied project, a tarball).
            .require_git(false)
            .filter_entry(move |entry| {
                // The roots themselves were named on the command line.
                if entry.depth() == 0 {
                    return true;
                }
                if entry.file_type().is_some_and(|t| t.is_dir())
                    && DEFAULT_EXCLUDES.iter().any(|name| entry.file_name() == *name)
                {
                    return false;
                }
                match filter_resolver.is_excluded(entry.path()) {
                    Ok(excluded) => !excluded,
                    Err(error) => {
                        lock(&filter_found).config_errors.push(error);
                        false
                    }
                }
            });
        builder.build_parallel().run(|| {
            let found = found.clone();
            Box::new(move |entry| {
                match entry {
                    Ok(entry) => {
                        if entry.file_type().is_some_and(|t| t.is_file()) && is_lintable(entry.path()) {
                            lock(&found).files.push(entry.into_path());
                        }
                    }
                    // ignore's errors already name the path.
                    Err(error) => lock(&found).io_errors.push(error.to_string()),
                }
                WalkState::Continue
            })
        });
    }
    let mut walk = std::mem::take(&mut *lock(&found));
    // `culint check` walks `.` by default: report `train.py`, not `./train.py`.
    for file in &mut walk.files {
        if let Ok(stripped) = file.strip_prefix(".") {
            *file = stripped.to_path_buf();
        }
    }
    walk.files.sort();
    walk.files.dedup();
    walk.io_errors.sort();
    walk.config_errors.sort_by(|a, b| a.path.cmp(&b.path));
    walk.config_errors.dedup();
    walk
}

fn is_lintable(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "py") || crate::notebook::is_notebook(path)
}

fn lock(walk: &Mutex<Walk>) -> std::sync::MutexGuard<'_, Walk> {
    walk.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
