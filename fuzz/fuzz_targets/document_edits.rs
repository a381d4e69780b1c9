//! Incremental `Document` edits against a plain `String`, and the incremental tree against a
//! fresh parse: see `checks::check_document_edits`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| checks::check_document_edits(data));
