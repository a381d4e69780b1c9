//! The oldest torch a project declares it supports: the lower bound of its `torch` requirement in
//! `pyproject.toml`, `setup.cfg`, `setup.py` or a `requirements*.txt`, in the nearest folder above
//! the file that has any of them. A fix that needs a newer torch than that would break the
//! project on the versions it promises, so it is marked unsafe.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};

use regex::Regex;

/// `(major, minor)`.
pub type Version = (u32, u32);

/// The files that declare dependencies, in the order they are read.
const DECLARATIONS: &[&str] = &["pyproject.toml", "setup.cfg", "setup.py", "requirements.txt"];

/// `torch>=2.1`, `"torch >= 1.13.0"`, `torch~=2.0`, `torch==2.2.*`: the name, then a lower bound.
/// Not `torchvision`, `torchaudio` or `pytorch-lightning`.
static REQUIREMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)(?:^|[\s"',\[])torch\s*(?:\[[^\]]*\])?\s*(?:>=|~=|==|>)\s*(\d+)\.(\d+)"#)
        .expect("requirement regex compiles")
});

static BY_FOLDER: LazyLock<Mutex<HashMap<PathBuf, Option<Version>>>> = LazyLock::new(Default::default);

/// The declared torch floor of the project `path` belongs to, if it declares one.
pub fn of_file(path: &Path) -> Option<Version> {
    let folder = path.parent()?;
    let folder = if folder.as_os_str().is_empty() { Path::new(".") } else { folder };
    let folder = folder.canonicalize().ok()?;
    if let Some(known) = BY_FOLDER.lock().unwrap_or_else(PoisonError::into_inner).get(&folder) {
        return *known;
    }
    let floor = folder.ancestors().find_map(|dir| {
        let texts: Vec<String> =
            declaration_files(dir).iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect();
        (!texts.is_empty()).then(|| texts.iter().find_map(|text| floor_in(text)))
    });
    let floor = floor.flatten();
    BY_FOLDER.lock().unwrap_or_else(PoisonError::into_inner).insert(folder, floor);
    floor
}

/// The declaration files in `dir`: those of [`DECLARATIONS`] and any other `requirements*.txt`.
fn declaration_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = DECLARATIONS.iter().map(|name| dir.join(name)).filter(|f| f.is_file()).collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut more: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("requirements") && n.ends_with(".txt") && n != "requirements.txt")
            })
            .collect();
        more.sort();
        files.extend(more);
    }
    files
}

/// The lowest bound any `torch` requirement in `text` states.
pub fn floor_in(text: &str) -> Option<Version> {
    REQUIREMENT.captures_iter(text).filter_map(|c| Some((c[1].parse().ok()?, c[2].parse().ok()?))).min()
}

/// `2.4`.
pub fn text(version: Version) -> String {
    format!("{}.{}", version.0, version.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_from_declarations() {
        assert_eq!(floor_in("dependencies = [\"torch>=1.13\", \"numpy\"]"), Some((1, 13)));
        assert_eq!(floor_in("install_requires =\n    torch >= 2.0.1\n"), Some((2, 0)));
        assert_eq!(floor_in("torch~=2.1\ntorchvision>=0.20\n"), Some((2, 1)));
        assert_eq!(floor_in("torchvision>=0.20\npytorch-lightning>=2.0\n"), None);
        assert_eq!(floor_in("install_requires=['torch>=1.10', 'torch>=2.0; python_version>\"3.12\"']"), Some((1, 10)));
        assert_eq!(floor_in("torch\n"), None);
    }

    #[test]
    fn the_nearest_declaring_folder_wins() {
        let root = std::env::temp_dir().join(format!("culint-torch-floor-{}", std::process::id()));
        let package = root.join("pkg");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(root.join("pyproject.toml"), "[project]\ndependencies = [\"torch>=2.1\"]\n").unwrap();
        std::fs::write(package.join("train.py"), "").unwrap();
        assert_eq!(of_file(&package.join("train.py")), Some((2, 1)));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
