//! Lint arbitrary bytes as a file's text, with every rule on (hardware facts included): nothing
//! may panic, and every diagnostic range must lie on the text's char boundaries.
#![no_main]

use culint::hardware::HardwareFacts;
use culint::lint::{LintContext, LintSettings, lint_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let hardware = HardwareFacts { gpus: Some(2), memory_bytes: Some(24 << 30), compute_capability: Some((7, 5)) };
    let settings = LintSettings { hardware: Some(hardware), show_syntax_errors: true, ..LintSettings::default() };
    for diagnostic in lint_text(text, LintContext::default(), &settings) {
        assert!(diagnostic.range.start <= diagnostic.range.end && diagnostic.range.end <= text.len());
        assert!(text.is_char_boundary(diagnostic.range.start) && text.is_char_boundary(diagnostic.range.end));
    }
});
