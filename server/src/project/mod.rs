//! Cross-file knowledge: summaries of the functions in other modules of the same project.
//!
//! A call such as `utils.init_distributed_mode(args)` or `train_one_epoch(...)` (imported with
//! `from .engine import train_one_epoch`) reaches [`ProjectIndex::lookup`] with its qualified
//! name. The index finds the module file the way Python would (next to the importing file, then
//! under the project root), parses it once, and summarises the function asked for the first time
//! it is asked for.
//!
//! One index is shared by a whole lint run and by every thread of it. Modules are read and
//! functions summarised lazily, so a run covers its own files plus the project functions those
//! call, and the functions those call in turn. No lock is held while a module is parsed or a
//! function summarised, so threads never wait on each other; two threads that need the same one
//! at the same moment may both compute it, and the first result is kept.
//!
//! Import cycles: a module with a function being summarised on the current call path answers
//! [`ProjectLookup::Missing`] for any function asked of it again (the rules then stay quiet
//! instead of waiting or guessing). The summaries computed inside the cycle are then incomplete,
//! so they are kept only until the outermost summary finishes, and computed afresh when asked for
//! from outside. That keeps the answers independent of the order in which files are linted.

mod module;
mod resolve;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::document::SharedText;
use crate::semantic::{FunctionSummary, names};
use module::ModuleSummaries;
use resolve::DottedName;

/// Files larger than this are not summarised: generated code, vendored bundles.
pub const MAX_MODULE_BYTES: u64 = 2 * 1024 * 1024;

/// How many modules may be in the middle of being summarised on one call path. Beyond this an
/// import chain answers "missing" rather than reading further.
const MAX_SUMMARY_DEPTH: usize = 8;

/// How many `__init__.py` re-exports (`from .engine import train_one_epoch`) are followed.
const MAX_REEXPORT_HOPS: usize = 2;

/// The answer to "what does `module.function` do?" for a call in some file.
#[derive(Clone, Debug)]
pub enum ProjectLookup {
    Found(FunctionSummary),
    /// The module is a project module (relative import, or a file that should exist under the
    /// project root) but it or the function cannot be found: rules stay quiet.
    Missing,
    /// Not a project module: a library.
    NotInProject,
}

/// Function summaries of the project files a lint run can see.
///
/// Create one with [`ProjectIndex::new`] per run (the CLI) or per session (the language server)
/// and pass it to every file as `LintContext { path: Some(path), project: Some(&index) }`.
#[derive(Debug)]
pub struct ProjectIndex {
    shared: Arc<Shared>,
    /// Modules with a function being summarised on this call path, outermost first (canonical
    /// paths). Empty for the index a caller creates; each nested summary gets a copy with its
    /// module appended.
    chain: Vec<PathBuf>,
    /// Summaries made incomplete by a cycle, shared by every nested index of one outermost
    /// summary, with the lowest chain position their cycle reached.
    provisional: Arc<Mutex<ProvisionalSummaries>>,
    /// The lowest chain position that a cycle reached while the last module of `chain` was being
    /// summarised (`usize::MAX`: none).
    cycle_floor: AtomicUsize,
}

impl Default for ProjectIndex {
    fn default() -> Self {
        Self {
            shared: Arc::default(),
            chain: Vec::new(),
            provisional: Arc::default(),
            cycle_floor: AtomicUsize::new(usize::MAX),
        }
    }
}

#[derive(Debug, Default)]
struct Shared {
    modules: Mutex<HashMap<PathBuf, Arc<ModuleSummaries>>>,
    /// Which modules each summarised module looked into, so that a change invalidates the
    /// summaries that merged what the changed file does.
    dependencies: Mutex<HashMap<PathBuf, HashSet<PathBuf>>>,
    /// Project root per folder of an importing file.
    roots: Mutex<HashMap<PathBuf, PathBuf>>,
    /// Canonical folder per importing file, as the caller spelled its path.
    folders: Mutex<HashMap<PathBuf, PathBuf>>,
    /// Answers per (folder of the importing file, qualified name), with the module files each
    /// answer was read from.
    answers: Mutex<HashMap<AnswerKey, (ProjectLookup, Vec<PathBuf>)>>,
    /// Unsaved editor buffers, which take the place of the file on disk.
    overlays: RwLock<HashMap<PathBuf, SharedText>>,
}

/// Function summaries made incomplete by an import cycle, keyed by module file and member, with
/// the lowest chain position the cycle reached.
type ProvisionalSummaries = HashMap<(PathBuf, String), (FunctionSummary, usize)>;

/// The folder of the importing file, and the qualified name asked for.
type AnswerKey = (PathBuf, String);

/// An answer, and whether it may be cached: answers shaped by a cycle or the depth limit depend
/// on the call path and are not.
struct Answer {
    lookup: ProjectLookup,
    cacheable: bool,
    /// The module files the answer was read from.
    consulted: Vec<PathBuf>,
}

impl Answer {
    fn definite(lookup: ProjectLookup) -> Self {
        Self { lookup, cacheable: true, consulted: Vec::new() }
    }
}

impl ProjectIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// What the function `qualified` (an import-resolved name such as `utils.setup`,
    /// `.engine.train_one_epoch` or `pkg.Trainer.fit`) does, for a call in `from_file`.
    ///
    /// Known libraries (`torch`, `transformers`, ...) are not looked up in the project, unless a
    /// module of that name sits next to the file (a script's own `datasets.py`). A
    /// relative import that cannot be found, or an absolute one whose top-level package lies in
    /// the project, is [`ProjectLookup::Missing`]; any other absolute import that is not found is
    /// [`ProjectLookup::NotInProject`].
    pub fn lookup(&self, from_file: Option<&Path>, qualified: &str) -> ProjectLookup {
        let name = DottedName::parse(qualified);
        if name.parts.is_empty() {
            return ProjectLookup::Missing;
        }
        let file_dir = from_file.and_then(|file| self.folder_of(file));
        if !name.is_relative()
            && names::is_known_library(qualified)
            && !file_dir.as_deref().is_some_and(|dir| shadows_library(dir, name.parts[0]))
        {
            return ProjectLookup::NotInProject;
        }
        let Some(file_dir) = file_dir else {
            return if name.is_relative() { ProjectLookup::Missing } else { ProjectLookup::NotInProject };
        };
        let key = (file_dir.clone(), qualified.to_owned());
        let known = lock(&self.shared.answers).get(&key).cloned();
        let (lookup, consulted) = known.unwrap_or_else(|| {
            let answer = self.resolve(&file_dir, &name, 0);
            if answer.cacheable {
                lock(&self.shared.answers).insert(key, (answer.lookup.clone(), answer.consulted.clone()));
            }
            (answer.lookup, answer.consulted)
        });
        if let Some(summarising) = self.chain.last()
            && !consulted.is_empty()
        {
            lock(&self.shared.dependencies).entry(summarising.clone()).or_default().extend(consulted);
        }
        lookup
    }

    /// Forget what is known about `path` and every summary that depended on it: the file changed
    /// on disk or in the editor.
    pub fn invalidate(&self, path: &Path) {
        let path = canonical(path);
        let mut stale = vec![path];
        let mut modules = lock(&self.shared.modules);
        let mut dependencies = lock(&self.shared.dependencies);
        while let Some(changed) = stale.pop() {
            modules.remove(&changed);
            dependencies.remove(&changed);
            let dependents: Vec<PathBuf> =
                dependencies.iter().filter(|(_, used)| used.contains(&changed)).map(|(m, _)| m.clone()).collect();
            stale.extend(dependents);
        }
        // Answers name no module file, and which file an import finds can change too (a new
        // `utils.py`, a new `pyproject.toml`): start over.
        lock(&self.shared.answers).clear();
        lock(&self.shared.roots).clear();
    }

    /// Use `text` in place of the file at `path` (an unsaved editor buffer), or go back to the
    /// file on disk with `None`.
    pub fn set_overlay(&self, path: &Path, text: Option<SharedText>) {
        {
            let mut overlays = self.shared.overlays.write().unwrap_or_else(|poisoned| poisoned.into_inner());
            match text {
                Some(text) => overlays.insert(canonical(path), text),
                None => overlays.remove(&canonical(path)),
            };
        }
        self.invalidate(path);
    }

    fn resolve(&self, file_dir: &Path, name: &DottedName<'_>, hops: usize) -> Answer {
        let bases = if name.is_relative() {
            match resolve::relative_base(file_dir, name.level) {
                Some(base) => vec![base],
                None => return Answer::definite(ProjectLookup::Missing),
            }
        } else {
            resolve::absolute_bases(file_dir, &self.root_of(file_dir))
        };
        // Longest module first: `pkg.sub.func` is function `func` of `pkg/sub.py` before it is
        // method `sub.func` of `pkg/__init__.py`. A relative import may name the package itself
        // (`from . import helper`).
        let shortest_module = usize::from(!name.is_relative());
        let member_lengths = 1..=2.min(name.parts.len());
        for member_len in member_lengths {
            let module_len = name.parts.len() - member_len;
            if module_len < shortest_module {
                break;
            }
            let (module_parts, member) = name.parts.split_at(module_len);
            for base in &bases {
                if let Some(file) = resolve::module_file(base, module_parts, |p| self.exists(p)) {
                    return self.member_of(&canonical(&file), member, hops);
                }
            }
        }
        let in_project = name.is_relative()
            || bases.iter().any(|base| resolve::names_project_module(base, name.parts[0]))
            || hops > 0;
        Answer::definite(if in_project { ProjectLookup::Missing } else { ProjectLookup::NotInProject })
    }

    /// The summary of `member` (`func` or `Class.method`) of the module in `file`.
    fn member_of(&self, file: &Path, member: &[&str], hops: usize) -> Answer {
        let module = self.module(file);
        let mut answer = self.member_answer(&module, file, member, hops);
        answer.consulted.push(file.to_path_buf());
        answer
    }

    fn member_answer(&self, module: &ModuleSummaries, file: &Path, member: &[&str], hops: usize) -> Answer {
        if module.unavailable {
            return Answer::definite(ProjectLookup::Missing);
        }
        if let Some(answer) = self.function_answer(module, file, &member.join(".")) {
            return answer;
        }
        if let [class] = member
            && let Some(shape) = module.classes.get(*class)
        {
            // A constructor call: what `__init__` does. Without one, a class with no base does
            // nothing on construction; one with a base does what the base does, unseen here.
            return match self.function_answer(module, file, &format!("{class}.__init__")) {
                Some(init) => init,
                None if !shape.has_bases => Answer::definite(ProjectLookup::Found(FunctionSummary::default())),
                None => Answer::definite(ProjectLookup::Missing),
            };
        }
        if hops >= MAX_REEXPORT_HOPS {
            return Answer::definite(ProjectLookup::Missing);
        }
        let Some(dir) = file.parent() else { return Answer::definite(ProjectLookup::Missing) };
        // A name the module imports from elsewhere: `from .engine import train_one_epoch` in a
        // package's `__init__.py`.
        if let Some(binding) = module.imports.binding(member[0]) {
            let qualified = std::iter::once(binding.qualified.as_str()).chain(member[1..].iter().copied());
            return self.reexported(dir, &qualified.collect::<Vec<_>>().join("."), hops);
        }
        // Or through `from .engine import *`: the last star import that has the name wins.
        let mut answer = Answer::definite(ProjectLookup::Missing);
        for star in module.imports.wildcard_modules.iter().rev() {
            let separator = if star.ends_with('.') { "" } else { "." };
            let qualified = format!("{star}{separator}{}", member.join("."));
            answer = self.reexported(dir, &qualified, hops);
            if matches!(answer.lookup, ProjectLookup::Found(_)) {
                break;
            }
        }
        answer
    }

    /// Follow a re-export to `qualified` from the package folder `dir`. A library behind it, or a
    /// module that cannot be found, is missing: the name was asked for as a project name.
    fn reexported(&self, dir: &Path, qualified: &str, hops: usize) -> Answer {
        let target = DottedName::parse(qualified);
        if !target.is_relative() && names::is_known_library(qualified) {
            return Answer::definite(ProjectLookup::Missing);
        }
        let answer = self.resolve(dir, &target, hops + 1);
        match answer.lookup {
            ProjectLookup::NotInProject => Answer { lookup: ProjectLookup::Missing, ..answer },
            _ => answer,
        }
    }

    /// The module in `file` (a canonical path), read and parsed on first use.
    fn module(&self, file: &Path) -> Arc<ModuleSummaries> {
        if let Some(known) = lock(&self.shared.modules).get(file) {
            return Arc::clone(known);
        }
        let module = match self.read(file) {
            Some(text) => ModuleSummaries::parse(text, file),
            None => ModuleSummaries::unavailable(),
        };
        Arc::clone(lock(&self.shared.modules).entry(file.to_path_buf()).or_insert_with(|| Arc::new(module)))
    }

    /// What the function `member` of `module` (in `file`) does, summarised on first use; `None`
    /// when the module does not define it. Not complete (so not cacheable) when the module is
    /// being summarised on this call path (a cycle), when the chain is too deep, or when the
    /// summary met a cycle through a module further up.
    fn function_answer(&self, module: &ModuleSummaries, file: &Path, member: &str) -> Option<Answer> {
        if !module.defines(member) {
            return None;
        }
        let incomplete = |lookup| Some(Answer { lookup, cacheable: false, consulted: Vec::new() });
        if let Some(position) = self.chain.iter().position(|m| m == file) {
            self.cycle_floor.fetch_min(position, Ordering::Relaxed);
            return incomplete(ProjectLookup::Missing);
        }
        if let Some(summary) = module.known(member) {
            return Some(Answer::definite(ProjectLookup::Found(summary)));
        }
        let key = (file.to_path_buf(), member.to_owned());
        if let Some((summary, floor)) = lock(&self.provisional).get(&key) {
            self.cycle_floor.fetch_min(*floor, Ordering::Relaxed);
            return incomplete(ProjectLookup::Found(summary.clone()));
        }
        if self.chain.len() >= MAX_SUMMARY_DEPTH {
            return incomplete(ProjectLookup::Missing);
        }
        let position = self.chain.len();
        let mut chain = self.chain.clone();
        chain.push(file.to_path_buf());
        let nested = ProjectIndex {
            shared: Arc::clone(&self.shared),
            chain,
            // An outermost summary starts a fresh set of provisional summaries.
            provisional: if position == 0 { Arc::default() } else { Arc::clone(&self.provisional) },
            cycle_floor: AtomicUsize::new(usize::MAX),
        };
        let summary = module.summarize(member, file, &nested)?;
        let floor = nested.cycle_floor.load(Ordering::Relaxed);
        if floor < position {
            // A cycle through a module further up: complete only once that one is.
            self.cycle_floor.fetch_min(floor, Ordering::Relaxed);
            lock(&self.provisional).insert(key, (summary.clone(), floor));
            return incomplete(ProjectLookup::Found(summary));
        }
        module.remember(member, &summary);
        Some(Answer::definite(ProjectLookup::Found(summary)))
    }

    /// The text of a module: the editor's buffer if there is one, else the file, unless it is
    /// too large to be a hand-written module.
    fn read(&self, file: &Path) -> Option<String> {
        if let Some(text) = self.overlay(file) {
            return Some(text.to_string());
        }
        let metadata = std::fs::metadata(file).ok()?;
        if metadata.len() > MAX_MODULE_BYTES {
            return None;
        }
        let bytes = std::fs::read(file).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn overlay(&self, file: &Path) -> Option<SharedText> {
        let overlays = self.shared.overlays.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        overlays.get(file).cloned()
    }

    fn exists(&self, path: &Path) -> bool {
        path.is_file() || {
            let overlays = self.shared.overlays.read().unwrap_or_else(|poisoned| poisoned.into_inner());
            !overlays.is_empty() && overlays.contains_key(&canonical(path))
        }
    }

    fn folder_of(&self, file: &Path) -> Option<PathBuf> {
        if let Some(folder) = lock(&self.shared.folders).get(file) {
            return Some(folder.clone());
        }
        let folder = folder_of(file)?;
        lock(&self.shared.folders).insert(file.to_path_buf(), folder.clone());
        Some(folder)
    }

    fn root_of(&self, dir: &Path) -> PathBuf {
        if let Some(root) = lock(&self.shared.roots).get(dir) {
            return root.clone();
        }
        let root = resolve::project_root(dir);
        lock(&self.shared.roots).insert(dir.to_path_buf(), root.clone());
        root
    }
}

/// The absolute folder of a file, as the key for everything looked up from it.
/// A module or package named like a library right next to the script (`datasets.py` beside
/// `train.py`): Python puts the script's folder first on `sys.path`, so the import is that file,
/// not the library.
fn shadows_library(dir: &Path, top_level: &str) -> bool {
    dir.join(format!("{top_level}.py")).is_file() || dir.join(top_level).join("__init__.py").is_file()
}

fn folder_of(file: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(file).ok()?;
    let dir = absolute.parent()?;
    Some(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

/// One key per file however it was reached (`./utils.py`, a symlink, `pkg/../utils.py`).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).or_else(|_| std::path::absolute(path)).unwrap_or_else(|_| path.to_path_buf())
}

/// A poisoned lock only means another thread panicked mid-lint; the maps stay consistent (each
/// insert is one call), so carry on with them.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asking for one function reads the modules it reaches, not those that only the other
    /// functions of its module call.
    #[test]
    fn a_lookup_reads_only_the_modules_its_function_reaches() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("a fixture file");
        write("pyproject.toml", "");
        write(
            "helpers.py",
            "from devices import pick\nfrom reporting import report\n\n\ndef setup(rank):\n    pick(rank)\n\n\ndef log(x):\n    report(x)\n",
        );
        write("devices.py", "import torch\n\n\ndef pick(rank):\n    torch.cuda.set_device(rank)\n");
        write("reporting.py", "def report(x):\n    print(x)\n");
        write("main.py", "from helpers import setup\n");
        let index = ProjectIndex::new();
        let ProjectLookup::Found(summary) = index.lookup(Some(&dir.path().join("main.py")), "helpers.setup") else {
            panic!("helpers.setup is a project function");
        };
        assert!(summary.calls_set_device);
        let mut read: Vec<String> = lock(&index.shared.modules)
            .keys()
            .filter_map(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
            .collect();
        read.sort();
        assert_eq!(read, ["devices.py", "helpers.py"]);
    }
}
