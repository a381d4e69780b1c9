//! Lint arbitrary bytes as a file's text, with every rule on: see `checks::check_lint`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        checks::check_lint(text);
    }
});
