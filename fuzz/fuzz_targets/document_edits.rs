//! Apply an arbitrary sequence of incremental edits to a `Document` and to a plain `String`: the
//! texts must stay equal byte for byte, and the incrementally reparsed tree must equal a fresh
//! parse of the final text.
#![no_main]

use culint::document::Document;
use culint::parse::parse;
use culint::text::{TextRange, floor_char_boundary};
use libfuzzer_sys::fuzz_target;

/// Fragments the edits insert: multi-byte characters, line breaks and Python syntax.
const FRAGMENTS: &[&str] =
    &["", "x", "\n", "\r\n", "    ", "\t", "注释", "😀", "é", "def f():\n    pass\n", "loss.backward()", "(", ")", "\"", "#", ":"];

fuzz_target!(|data: &[u8]| {
    let (seed, ops) = data.split_at(data.len().min(64));
    let initial = String::from_utf8_lossy(seed).into_owned();
    let mut document = Document::new(&initial, 0);
    let mut expected = initial;
    for op in ops.chunks_exact(4) {
        let len = expected.len();
        let start = floor_char_boundary(&expected, usize::from(u16::from_le_bytes([op[0], op[1]])) % (len + 1));
        let end = floor_char_boundary(&expected, (start + usize::from(op[2] % 16)).min(len)).max(start);
        let insert = FRAGMENTS[usize::from(op[3]) % FRAGMENTS.len()];
        document.edit(TextRange::new(start, end), insert);
        expected.replace_range(start..end, insert);
    }
    assert_eq!(document.text(), expected);
    assert_eq!(document.tree().root_node().to_sexp(), parse(&expected, None).root_node().to_sexp());
});
