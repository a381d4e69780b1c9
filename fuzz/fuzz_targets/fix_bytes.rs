//! Lint arbitrary text and apply every fix, unsafe ones included: see `checks::check_fix`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        checks::check_fix(text);
    }
});
