//! Helpers shared by unit tests of several modules.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::document::Document;
use crate::lint::{LintContext, LintSettings, StatementCache, lint_again};
use crate::text::TextRange;

/// A training run written at module level: nearly every statement starts with a name, which
/// tree-sitter alone would build anew at every reparse (see [`crate::module_spine`]).
pub const MODULE_LEVEL: &str = r#"import os
import torch
import torch.nn as nn
import torch.nn.functional as F

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
device = torch.device("cuda")
width = 256
model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.cuda.amp.GradScaler()
targets = torch.randint(0, 10, (32,), device=device)
inputs = torch.randn(32, width, device=device)
logits = model(inputs)
loss = F.cross_entropy(logits, targets)
loss.backward()
optimizer.step()
optimizer.zero_grad()
torch.cuda.empty_cache()
del logits, loss
history = []
for step in range(100):
    batch = torch.randn(32, width, device=device)
    loss = F.cross_entropy(model(batch), targets)
    loss.backward()
    optimizer.step()
    history.append(loss)
model.eval()
scores = model(inputs)
print(scores.argmax(-1).float().mean().item())
torch.save(model.state_dict(), "model.pt")
"#;

/// A buffer as the language server holds one that is being edited: its first lint parsed it and
/// settled the tree ([`Document::settled_tree`]), so the next reparse shares its statements.
pub fn edited_buffer(text: &str) -> Document {
    let mut document = Document::unparsed(text, 1);
    document.settled_tree();
    document
}

/// Every Python file among the rule fixtures and the examples: realistic scripts, each rule's
/// findings and near misses.
pub fn python_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("tests/fixtures"), root.join("examples")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixture folder") {
            let path = entry.expect("fixture entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 40, "{files:?}");
    files
}

/// An edited buffer of `text` ([`edited_buffer`]) after a first keystroke (a comment added at
/// its end), linted once through a cache of its own, as the language server lints it: the
/// buffer, the cache and the diagnostics.
pub fn buffer_linted_once(text: &str) -> (Document, StatementCache, Vec<Diagnostic>) {
    let cache = StatementCache::default();
    let mut document = edited_buffer(text);
    let diagnostics = lint_buffer_after(&mut document, &cache, TextRange::empty(text.len()), "# one\n");
    (document, cache, diagnostics)
}

/// Replace `range` of the buffer with `inserted` and lint it again through `cache`.
pub fn lint_buffer_after(
    document: &mut Document,
    cache: &StatementCache,
    range: TextRange,
    inserted: &str,
) -> Vec<Diagnostic> {
    document.edit(range, inserted);
    let tree = document.tree().clone();
    lint_again(&document.shared_text(), &tree, LintContext::default(), &LintSettings::default(), cache)
}

/// `text` with `range` replaced by `inserted`, and `tree` told that `told` (which holds `range`)
/// changed into the new text there; not reparsed.
pub fn told_edit(
    text: &str,
    tree: &tree_sitter::Tree,
    told: TextRange,
    range: TextRange,
    inserted: &str,
) -> (String, tree_sitter::Tree) {
    let new_text = format!("{}{inserted}{}", &text[..range.start], &text[range.end..]);
    let new_end = range.start + inserted.len() + (told.end - range.end);
    let point = |text: &str, byte: usize| tree_sitter::Point {
        row: text[..byte].matches('\n').count(),
        column: byte - crate::text::line_start(text, byte),
    };
    let mut edited = tree.clone();
    edited.edit(&tree_sitter::InputEdit {
        start_byte: told.start,
        old_end_byte: told.end,
        new_end_byte: new_end,
        start_position: point(text, told.start),
        old_end_position: point(text, told.end),
        new_end_position: point(&new_text, new_end),
    });
    (new_text, edited)
}
