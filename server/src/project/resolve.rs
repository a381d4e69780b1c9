//! Where Python would find a module: the project root, the search bases for an import, and the
//! file that holds a dotted module name.

use std::path::{Path, PathBuf};

/// Files or folders whose presence marks the root of a Python project.
const ROOT_MARKERS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg", ".git"];

/// The nearest ancestor of `dir` (itself included) that holds a project marker, else `dir`.
pub(super) fn project_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|ancestor| ROOT_MARKERS.iter().any(|marker| ancestor.join(marker).exists()))
        .unwrap_or(dir)
        .to_path_buf()
}

/// A dotted import name taken apart: `..pkg.mod.func` has two leading dots and the parts
/// `pkg`, `mod`, `func`.
pub(super) struct DottedName<'q> {
    /// Leading dots: 0 for an absolute import, 1 for `.mod`, 2 for `..mod`.
    pub level: usize,
    pub parts: Vec<&'q str>,
}

impl<'q> DottedName<'q> {
    pub fn parse(qualified: &'q str) -> Self {
        let rest = qualified.trim_start_matches('.');
        let level = qualified.len() - rest.len();
        Self { level, parts: rest.split('.').filter(|p| !p.is_empty()).collect() }
    }

    pub fn is_relative(&self) -> bool {
        self.level > 0
    }
}

/// The folder a relative import of `level` dots starts from: the importing file's folder for one
/// dot, its parent for two, and so on.
pub(super) fn relative_base(file_dir: &Path, level: usize) -> Option<PathBuf> {
    file_dir.ancestors().nth(level.saturating_sub(1)).map(Path::to_path_buf)
}

/// Where an absolute import is searched: next to the importing file, then the project root, then
/// a `src/` layout under the root. Duplicates are dropped, order is kept.
pub(super) fn absolute_bases(file_dir: &Path, root: &Path) -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::with_capacity(3);
    for base in [file_dir.to_path_buf(), root.to_path_buf(), root.join("src")] {
        if !bases.contains(&base) && base.is_dir() {
            bases.push(base);
        }
    }
    bases
}

/// The file of module `parts` under `base`: `a/b.py` or `a/b/__init__.py`; no parts means the
/// package `base` itself. `exists` decides whether a path counts as a file (the language server
/// also knows unsaved buffers).
pub(super) fn module_file(base: &Path, parts: &[&str], exists: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    let package = parts.iter().fold(base.to_path_buf(), |path, part| path.join(part));
    if !parts.is_empty() {
        let mut file = package.clone().into_os_string();
        file.push(".py");
        let file = PathBuf::from(file);
        if exists(&file) {
            return Some(file);
        }
    }
    let init = package.join("__init__.py");
    exists(&init).then_some(init)
}

/// Whether `name` is a top-level module or package of the project under `base` (a namespace
/// package folder counts): an import of it that cannot be resolved is a missing project module,
/// not a library.
pub(super) fn names_project_module(base: &Path, name: &str) -> bool {
    base.join(format!("{name}.py")).is_file() || base.join(name).is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names_split_level_and_parts() {
        let name = DottedName::parse("..pkg.mod.func");
        assert_eq!((name.level, name.parts), (2, vec!["pkg", "mod", "func"]));
        let name = DottedName::parse("utils.init");
        assert_eq!((name.level, name.parts), (0, vec!["utils", "init"]));
        let name = DottedName::parse(".engine");
        assert_eq!((name.level, name.parts), (1, vec!["engine"]));
    }

    #[test]
    fn relative_bases_climb_one_folder_per_extra_dot() {
        let dir = Path::new("/p/pkg/sub");
        assert_eq!(relative_base(dir, 1).as_deref(), Some(Path::new("/p/pkg/sub")));
        assert_eq!(relative_base(dir, 2).as_deref(), Some(Path::new("/p/pkg")));
        assert_eq!(relative_base(dir, 9), None);
    }

    #[test]
    fn module_files_prefer_a_module_over_a_package() {
        let existing =
            [PathBuf::from("/p/a/b.py"), PathBuf::from("/p/a/b/__init__.py"), PathBuf::from("/p/c/__init__.py")];
        let exists = |path: &Path| existing.iter().any(|e| e == path);
        assert_eq!(module_file(Path::new("/p"), &["a", "b"], exists), Some(PathBuf::from("/p/a/b.py")));
        assert_eq!(module_file(Path::new("/p"), &["c"], exists), Some(PathBuf::from("/p/c/__init__.py")));
        assert_eq!(module_file(Path::new("/p/c"), &[], exists), Some(PathBuf::from("/p/c/__init__.py")));
        assert_eq!(module_file(Path::new("/p"), &["d"], exists), None);
    }
}
