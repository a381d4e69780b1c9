//! What a rule's check reads of the file beyond the top-level statement it checks, recorded so
//! that an edited buffer's next lint can keep the findings of the statements the edit could not
//! have changed (see [`crate::check_cache`]).
//!
//! Reading a node's own subtree needs no record: a node reached from the checked statement, or
//! through one of the reads below, lies in a statement whose text is known. What is recorded:
//!
//! - **Index lookups by name** (`calls_named("backward")`, `functions_named("train_step")`,
//!   `assignments_to("loss")`): the answer changes only when a statement with an entry under that
//!   name, before or after the edit, is edited.
//! - **Whole-file reads** (every call, every function, every loop): anything may change them.
//! - **File facts** a rule computes once per file ([`crate::lint::Checker::file_fact`]): they are
//!   computed again and compared.
//! - **The kinds of a statement's loops** ([`Index::LoopKinds`]): the answer changes when the
//!   kinds of that statement's loops do.
//!
//! Facts the model holds for the whole file (imports, frameworks, whether CUDA is named) are
//! compared by [`crate::check_cache`] itself, so reading them records nothing.
//!
//! The recorder is thread-local: a rule's checks run on one thread, and the model does no work
//! on other threads on their behalf.

use std::cell::RefCell;
use std::hash::BuildHasher;

use super::Model;

/// The model's indices that rules look names up in.
#[derive(Clone, Copy, Debug)]
pub enum Index {
    /// Calls by their callee's final name.
    Calls,
    /// Function definitions by name.
    Functions,
    /// Assignments by target text.
    Assignments,
    /// The kinds of a top-level statement's loops, by the statement's text. They may change
    /// while the text does not (an edit elsewhere makes a loop an epoch loop, or no longer a
    /// step loop): [`crate::check_cache`] compares them statement by statement, and files the
    /// statements whose kinds changed under this index.
    LoopKinds,
}

/// A whole-file fact a rule computes, such as "the file lowers precision somewhere".
pub type FileFact = for<'m, 'a> fn(&'m Model<'a>) -> bool;

/// The reads of one check, or of a memoised computation that checks share.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    /// Hashes of (index, name): see [`key`].
    keys: Vec<u64>,
    whole_file: bool,
    facts: Vec<(FileFact, bool)>,
    /// While the checks of a top-level statement are recorded ([`recording_checks_of`]): where
    /// the statement starts. Reads of its own loops' kinds need no record: a statement whose
    /// loops changed kinds keeps no findings.
    checked_statement: Option<usize>,
}

impl Reads {
    /// Whether anything may change what was read: nothing recorded then says what would.
    pub fn whole_file(&self) -> bool {
        self.whole_file
    }

    /// Whether nothing beyond the statement was read: no lookup, no file fact, not the whole file.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.facts.is_empty() && !self.whole_file
    }

    /// Whether a lookup under any of `changed` (hashes made by [`key`]) was read.
    pub fn read_any(&self, changed: &foldhash::HashSet<u64>) -> bool {
        self.keys.iter().any(|k| changed.contains(k))
    }

    /// The file facts read, with the value each had.
    pub fn facts(&self) -> &[(FileFact, bool)] {
        &self.facts
    }

    /// Sorted and without repeats: a check asks for the same names many times.
    pub fn compact(mut self) -> Self {
        self.keys.sort_unstable();
        self.keys.dedup();
        self.facts.sort_unstable_by_key(|(fact, _)| *fact as usize);
        self.facts.dedup_by_key(|(fact, _)| *fact as usize);
        self
    }

    pub fn extend(&mut self, other: &Reads) {
        self.keys.extend_from_slice(&other.keys);
        self.whole_file |= other.whole_file;
        self.facts.extend_from_slice(&other.facts);
    }
}

/// The hash a lookup of `name` in `index` is recorded under. Two names that share a hash only
/// make a kept finding look stale more often.
pub fn key(index: Index, name: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x6375_6c69_6e74).hash_one((index as u8, name))
}

thread_local! {
    static RECORDER: RefCell<Option<Reads>> = const { RefCell::new(None) };
}

/// The name that the kinds of a top-level statement's loops are recorded under
/// ([`Index::LoopKinds`]): the start of the statement's text. Statements that start alike share
/// it, which only makes a kept finding look stale more often; hashing the whole of a long
/// function at every read of its loops would cost more.
fn loop_kinds_name(statement_text: &str) -> &str {
    let mut end = statement_text.len().min(128);
    while !statement_text.is_char_boundary(end) {
        end -= 1;
    }
    &statement_text[..end]
}

/// The key the kinds of a top-level statement's loops are recorded under, from its text.
pub fn loop_kinds_key(statement_text: &str) -> u64 {
    key(Index::LoopKinds, loop_kinds_name(statement_text))
}

/// Note a lookup of `name` in `index`, when reads are being recorded.
pub fn read_key(index: Index, name: &str) {
    RECORDER.with_borrow_mut(|recorder| {
        if let Some(reads) = recorder {
            reads.keys.push(key(index, name));
        }
    });
}

/// Note a read of the kinds of a top-level statement's loops ([`Index::LoopKinds`]), when reads
/// are being recorded and the statement is not the one whose checks are ([`recording_checks_of`];
/// a memoised computation inside them records for itself, and is never theirs). `statement`
/// gives the statement's start and text, and is asked only then: finding it takes work.
pub fn read_loop_kinds<'t>(statement: impl FnOnce() -> Option<(usize, &'t str)>) {
    RECORDER.with_borrow_mut(|recorder| {
        if let Some(reads) = recorder
            && let Some((start, text)) = statement()
            && reads.checked_statement != Some(start)
        {
            reads.keys.push(loop_kinds_key(text));
        }
    });
}

/// Note a read of the whole file, when reads are being recorded.
pub fn read_whole_file() {
    RECORDER.with_borrow_mut(|recorder| {
        if let Some(reads) = recorder {
            reads.whole_file = true;
        }
    });
}

/// Note that a file fact was read and what it was.
pub fn read_fact(fact: FileFact, value: bool) {
    RECORDER.with_borrow_mut(|recorder| {
        if let Some(reads) = recorder {
            reads.facts.push((fact, value));
        }
    });
}

/// Note `reads`, made earlier by a computation whose answer is being used again.
pub fn replay(reads: &Reads) {
    RECORDER.with_borrow_mut(|recorder| {
        if let Some(current) = recorder {
            current.extend(reads);
        }
    });
}

/// Run `work` with a recorder of its own; returns its answer and what it read. The recorder
/// around it, if any, is restored afterwards and is not told of these reads.
pub fn recording<T>(work: impl FnOnce() -> T) -> (T, Reads) {
    recording_into(Reads::default(), work)
}

/// [`recording`] into `recorder`.
fn recording_into<T>(recorder: Reads, work: impl FnOnce() -> T) -> (T, Reads) {
    let outer = Restore(RECORDER.with_borrow_mut(|r| r.replace(recorder)));
    let value = work();
    let reads = RECORDER.with_borrow_mut(Option::take).unwrap_or_default();
    drop(outer);
    (value, reads)
}

/// [`recording`] of the checks of the top-level statement that starts at `statement_start`.
pub fn recording_checks_of<T>(statement_start: usize, work: impl FnOnce() -> T) -> (T, Reads) {
    let (value, mut reads) =
        recording_into(Reads { checked_statement: Some(statement_start), ..Reads::default() }, work);
    reads.checked_statement = None;
    (value, reads)
}

/// [`recording`], with the reads also told to the recorder around it: for memoised answers,
/// which keep their reads to replay them when they are used again. They are recorded even where
/// nothing around records (while loops are classified, say): a check may use the answer later.
pub fn recording_through<T>(work: impl FnOnce() -> T) -> (T, Reads) {
    let (value, reads) = recording(work);
    replay(&reads);
    (value, reads)
}

/// Run `work` without recording: for facts that are compared as a whole instead.
pub fn unrecorded<T>(work: impl FnOnce() -> T) -> T {
    let outer = Restore(RECORDER.with_borrow_mut(Option::take));
    let value = work();
    drop(outer);
    value
}

/// Puts the recorder that was in place back, also when the work in between panics.
struct Restore(Option<Reads>);

impl Drop for Restore {
    fn drop(&mut self) {
        let outer = self.0.take();
        RECORDER.with_borrow_mut(|r| *r = outer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_go_to_the_innermost_recorder_and_memoised_ones_also_outward() {
        assert!(RECORDER.with_borrow(Option::is_none));
        read_key(Index::Calls, "ignored");
        let ((), outer) = recording(|| {
            read_key(Index::Calls, "backward");
            let ((), inner) = recording(|| read_key(Index::Functions, "train"));
            assert_eq!(inner.keys, vec![key(Index::Functions, "train")]);
            let ((), through) = recording_through(read_whole_file);
            assert!(through.whole_file());
            unrecorded(|| read_key(Index::Assignments, "loss"));
        });
        assert!(RECORDER.with_borrow(Option::is_none));
        assert!(outer.whole_file());
        let changed = |name| foldhash::HashSet::from_iter([key(Index::Calls, name)]);
        assert!(outer.read_any(&changed("backward")));
        assert!(!outer.read_any(&changed("train")));
        assert_ne!(key(Index::Calls, "loss"), key(Index::Assignments, "loss"));
    }

    #[test]
    fn the_loops_of_the_checked_statement_are_its_own_and_those_of_others_are_recorded() {
        use crate::semantic::Model;
        let text = "def step(model, batch):\n    for x in batch:\n        model(x).backward()\n\n\
                    def train(model, loader):\n    for batch in loader:\n        step(model, batch)\n";
        let tree = crate::parse::parse(text, None);
        let model = Model::new(text, &tree, crate::lint::LintContext::default());
        let [step, train] = [0, 1].map(|i| model.top_level()[i]);
        let [in_step, in_train] = [0, 1].map(|i| model.loop_nodes()[i]);
        let name = |statement: tree_sitter::Node<'_>| loop_kinds_name(&text[statement.byte_range()]);
        let ((), reads) = recording_checks_of(train.start_byte(), || {
            model.loop_info(in_train);
            model.loop_info(in_step);
        });
        assert_eq!(reads.keys, vec![key(Index::LoopKinds, name(step))]);
        // A memoised answer worked out inside them records for itself, its own statement too.
        let ((), reads) = recording_checks_of(train.start_byte(), || {
            let ((), inner) = recording(|| {
                model.loop_info(in_train);
            });
            assert_eq!(inner.keys, vec![key(Index::LoopKinds, name(train))]);
        });
        assert!(reads.is_empty() && reads.checked_statement.is_none());
    }

    #[test]
    fn a_loop_kinds_name_is_the_start_of_the_statement_cut_at_a_character() {
        let long = format!("def f():\n    # {}\n", "é".repeat(100));
        let name = loop_kinds_name(&long);
        assert!(name.len() <= 128 && long.starts_with(name) && name.len() > 120);
        assert_eq!(loop_kinds_name("for x in y:\n    pass"), "for x in y:\n    pass");
    }

    #[test]
    fn a_panic_inside_a_recording_leaves_no_recorder_behind() {
        let caught = std::panic::catch_unwind(|| recording(|| panic!("in a check")));
        assert!(caught.is_err());
        assert!(RECORDER.with_borrow(Option::is_none));
    }
}
