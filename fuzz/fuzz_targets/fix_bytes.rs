//! Lint arbitrary text and apply every fix, unsafe ones included: the fixed text parses no worse
//! than the input, and a second fix pass changes nothing.
#![no_main]

use culint::fix::Applicability;
use culint::hardware::HardwareFacts;
use culint::lint::{LintContext, LintSettings, fix_text};
use culint::parse::{error_count, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let hardware = HardwareFacts { gpus: Some(1), memory_bytes: Some(16 << 30), compute_capability: Some((8, 0)) };
    let settings = LintSettings { hardware: Some(hardware), ..LintSettings::default() };
    let first = fix_text(text, LintContext::default(), &settings, Applicability::Unsafe);
    assert!(error_count(&parse(&first.text, None)) <= error_count(&parse(text, None)), "a fix made the text parse worse");
    let second = fix_text(&first.text, LintContext::default(), &settings, Applicability::Unsafe);
    assert_eq!(second.text, first.text, "fixes did not reach a fixed point");
});
