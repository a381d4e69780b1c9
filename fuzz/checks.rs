//! The properties the fuzz targets check, shared with `tests/reliability_regressions.rs`, which
//! replays every saved crash input (and a few hand-written adversarial files) through them.

// Each includer uses only some of the checks.
#![allow(dead_code)]

use culint::document::Document;
use culint::fix::Applicability;
use culint::hardware::HardwareFacts;
use culint::lint::{LintContext, LintSettings, fix_text, lint, lint_text};
use culint::parse::{error_count, layout, parse};
use culint::text::{TextRange, floor_char_boundary};

/// Lint `text` with every rule on (hardware facts and syntax errors included): nothing may panic,
/// and every diagnostic range must lie on the text's char boundaries.
pub fn check_lint(text: &str) {
    let hardware = HardwareFacts { gpus: Some(2), memory_bytes: Some(24 << 30), compute_capability: Some((7, 5)) };
    let settings = LintSettings { hardware: Some(hardware), show_syntax_errors: true, ..LintSettings::default() };
    for diagnostic in lint_text(text, LintContext::default(), &settings) {
        let range = diagnostic.range;
        assert!(
            range.start <= range.end && range.end <= text.len(),
            "{} range {range:?} is out of the text",
            diagnostic.code
        );
        assert!(
            text.is_char_boundary(range.start) && text.is_char_boundary(range.end),
            "{} range {range:?} splits a character",
            diagnostic.code
        );
    }
}

/// Apply every fix, unsafe ones included: the fixed text parses no worse than the input, and a
/// second fix pass changes nothing.
pub fn check_fix(text: &str) {
    let hardware = HardwareFacts { gpus: Some(1), memory_bytes: Some(16 << 30), compute_capability: Some((8, 0)) };
    let settings = LintSettings { hardware: Some(hardware), ..LintSettings::default() };
    let first = fix_text(text, LintContext::default(), &settings, Applicability::Unsafe);
    assert!(
        error_count(&parse(&first.text, None)) <= error_count(&parse(text, None)),
        "a fix made the text parse worse:\n{}",
        first.text
    );
    let second = fix_text(&first.text, LintContext::default(), &settings, Applicability::Unsafe);
    assert_eq!(second.text, first.text, "fixes did not reach a fixed point");
}

/// Fragments the edits insert: multi-byte characters, line breaks and Python syntax.
const FRAGMENTS: &[&str] = &[
    "",
    "x",
    "\n",
    "\r\n",
    "    ",
    "\t",
    "注释",
    "😀",
    "é",
    "def f():\n    pass\n",
    "loss.backward()",
    "(",
    ")",
    "\"",
    "#",
    ":",
    "\r",
    "\u{2028}",
    " # warm up",
    "7",
];

/// Settings under which every rule runs, the hardware ones included.
fn every_rule() -> LintSettings {
    let hardware = HardwareFacts { gpus: Some(2), memory_bytes: Some(24 << 30), compute_capability: Some((7, 5)) };
    LintSettings { hardware: Some(hardware), ..LintSettings::default() }
}

/// Diagnostics as comparable text: code, range, message and fix.
fn plain(diagnostics: Vec<culint::diagnostic::Diagnostic>) -> Vec<String> {
    diagnostics.iter().map(|d| format!("{} {:?} {} {:?}", d.code, d.range, d.message, d.fix)).collect()
}

/// The language server's lint of an edited buffer, made on its incrementally reparsed tree, must
/// report exactly what a lint of a fresh parse reports.
fn check_reparsed_lint(document: &mut Document) {
    let settings = every_rule();
    let text = document.text().to_owned();
    assert_eq!(
        plain(lint(&text, document.tree(), LintContext::default(), &settings)),
        plain(lint(&text, &parse(&text, None), LintContext::default(), &settings)),
        "the lint of the reparsed tree differs from a fresh one on:\n{text}"
    );
}

/// Read `data` as an initial text (its first 64 bytes, lossily) and a list of 4-byte edits, apply
/// them to a `Document` and to a plain `String`: the texts must stay equal byte for byte, the
/// lint of the reparsed tree after each edit must equal a fresh lint, and the incrementally reparsed tree must
/// equal a fresh parse of the final text.
pub fn check_document_edits(data: &[u8]) {
    let (seed, ops) = data.split_at(data.len().min(64));
    let initial = String::from_utf8_lossy(seed).into_owned();
    let mut document = Document::new(&initial, 0);
    let mut expected = initial;
    for op in ops.chunks_exact(4) {
        let len = expected.len();
        let start = floor_char_boundary(&expected, usize::from(u16::from_le_bytes([op[0], op[1]])) % (len + 1));
        let end = floor_char_boundary(&expected, (start + usize::from(op[2] % 16)).min(len)).max(start);
        let insert = FRAGMENTS[usize::from(op[3]) % FRAGMENTS.len()];
        if op[2] >= 0xf0 {
            // An idle buffer gives its tree up; its next lint parses afresh.
            document.drop_tree();
        }
        expected.replace_range(start..end, insert);
        if op[3] & 0x80 == 0 {
            document.edit(TextRange::new(start, end), insert);
            check_reparsed_lint(&mut document);
        } else {
            // Edits of one change, reparsed together at the next edit that lints.
            document.edit_text(TextRange::new(start, end), insert);
        }
    }
    assert_eq!(document.text(), expected);
    let fresh = parse(&expected, None);
    if fresh.root_node().has_error() {
        // Error recovery may settle on another tree when it resumes from an edited one than when
        // it starts afresh (tree-sitter promises the same tree only for text that parses): what
        // must agree is what the user sees, the findings.
        let settings = every_rule();
        assert_eq!(
            plain(lint(&expected, document.tree(), LintContext::default(), &settings)),
            plain(lint(&expected, &fresh, LintContext::default(), &settings)),
            "the findings on the edited tree differ from those on a fresh parse of:\n{expected}"
        );
    } else {
        assert!(
            layout(document.tree()) == layout(&fresh),
            "the edited tree's nodes are not where a fresh parse's are:\n{expected}"
        );
    }
}
