//! A set of entries: the built-in ones, plus those from the user's `knowledge-dirs`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, OnceLock};

use regex::{Regex, RegexSet};

use super::builtin::BUILTIN_FILES;
use super::entry::{Entry, EntrySpec};

/// Why an entry file could not be loaded. `Display` names the file, what is wrong and what to do.
#[derive(Debug)]
pub struct KnowledgeError {
    pub path: PathBuf,
    pub problem: String,
}

impl fmt::Display for KnowledgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for KnowledgeError {}

/// An ordered set of entries with unique ids.
#[derive(Clone, Debug, Default)]
pub struct Base {
    entries: Vec<Entry>,
    /// Every pattern of every entry in one regex, built on first use: one pass over a log finds
    /// the lines worth testing entry by entry.
    any_pattern: OnceLock<Regex>,
    /// Every pattern in a set, with the index of the entry each belongs to: which entries match
    /// a candidate line, in one pass over it.
    pattern_set: OnceLock<(RegexSet, Vec<usize>)>,
}

static BUILTIN: LazyLock<Base> = LazyLock::new(|| {
    let mut base = Base::default();
    for (path, text) in BUILTIN_FILES {
        let entry = parse_entry(Path::new(path), text).unwrap_or_else(|e| panic!("built-in knowledge is broken: {e}"));
        base.insert(entry);
    }
    base
});

/// The entries compiled into the binary.
pub fn builtin() -> &'static Base {
    &BUILTIN
}

impl Base {
    /// The built-in entries plus every `*.toml` entry file found (recursively) in `dirs`. A user
    /// entry whose id equals a built-in one replaces it, so a team can correct an entry locally.
    pub fn with_user_dirs(dirs: &[PathBuf]) -> Result<Base, KnowledgeError> {
        let mut base = builtin().clone();
        for dir in dirs {
            for path in entry_files(dir)? {
                let text = std::fs::read_to_string(&path).map_err(|e| KnowledgeError {
                    path: path.clone(),
                    problem: format!("cannot read the file: {e}"),
                })?;
                base.insert(parse_entry(&path, &text)?);
            }
        }
        Ok(base)
    }

    /// A regex that matches wherever any entry's pattern matches.
    pub fn any_pattern(&self) -> &Regex {
        self.any_pattern.get_or_init(|| {
            let alternatives: Vec<String> =
                self.entries.iter().flat_map(|e| e.patterns.iter().map(|p| format!("(?:{})", p.as_str()))).collect();
            let combined = if alternatives.is_empty() { "[^\\s\\S]".to_owned() } else { alternatives.join("|") };
            Regex::new(&combined).expect("patterns that compile alone compile together")
        })
    }

    /// Indices (into [`Base::entries`]) of the entries with a pattern matching `line`, ascending.
    pub fn entries_matching(&self, line: &str) -> Vec<usize> {
        let (set, owners) = self.pattern_set.get_or_init(|| {
            let patterns = self.entries.iter().flat_map(|e| e.patterns.iter().map(Regex::as_str));
            let owners = self
                .entries
                .iter()
                .enumerate()
                .flat_map(|(index, e)| std::iter::repeat_n(index, e.patterns.len()))
                .collect();
            (RegexSet::new(patterns).expect("patterns that compile alone compile as a set"), owners)
        });
        let mut matching: Vec<usize> = set.matches(line).iter().map(|pattern| owners[pattern]).collect();
        matching.dedup();
        matching
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|entry| entry.id == id)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn insert(&mut self, entry: Entry) {
        self.any_pattern = OnceLock::new();
        self.pattern_set = OnceLock::new();
        match self.entries.iter_mut().find(|existing| existing.id == entry.id) {
            Some(existing) => *existing = entry,
            None => self.entries.push(entry),
        }
    }
}

/// Parse and check one entry file.
pub fn parse_entry(path: &Path, text: &str) -> Result<Entry, KnowledgeError> {
    let error = |problem: String| KnowledgeError { path: path.to_path_buf(), problem };
    let spec: EntrySpec = toml::from_str(text)
        .map_err(|e| error(format!("not a valid knowledge entry: {}", e.to_string().trim_end())))?;
    Entry::from_spec(spec).map_err(|problem| error(format!("{problem}; fix the entry or remove the file")))
}

fn entry_files(dir: &Path) -> Result<Vec<PathBuf>, KnowledgeError> {
    let metadata = std::fs::metadata(dir).map_err(|e| KnowledgeError {
        path: dir.to_path_buf(),
        problem: format!("knowledge directory cannot be read ({e}); check the `knowledge-dirs` setting"),
    })?;
    if !metadata.is_dir() {
        return Err(KnowledgeError {
            path: dir.to_path_buf(),
            problem: "is not a directory; `knowledge-dirs` lists directories of entry files".to_owned(),
        });
    }
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let listing = std::fs::read_dir(&current).map_err(|e| KnowledgeError {
            path: current.clone(),
            problem: format!("cannot list the directory: {e}"),
        })?;
        for item in listing.flatten() {
            let path = item.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "toml") {
                files.push(path);
            }
        }
    }
    // Directory order differs between file systems; sorting keeps overrides deterministic.
    files.sort();
    Ok(files)
}
