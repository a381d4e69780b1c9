//! JSON text written by hand, for the one message the server sends on every keystroke: the
//! publish of a buffer's diagnostics.
//!
//! A serializer escapes every key and string a byte at a time. A large script's publish is a
//! quarter of a megabyte of keys and strings, nearly none of which needs an escape: here keys
//! are written as the literal JSON they are, and a string is checked for escapes a block at a
//! time and copied whole when it has none.

/// A JSON text being written.
pub struct JsonText(Vec<u8>);

impl JsonText {
    /// JSON text written after what `buffer` holds.
    pub fn after(buffer: Vec<u8>) -> Self {
        Self(buffer)
    }

    /// Text that is JSON already: punctuation, keys, literals.
    pub fn raw(&mut self, json: &str) -> &mut Self {
        self.0.extend_from_slice(json.as_bytes());
        self
    }

    /// A string, quoted and escaped as the JSON grammar requires (and as `serde_json` writes it).
    pub fn string(&mut self, value: &str) -> &mut Self {
        self.0.push(b'"');
        self.escaped(value, |json, byte| json.0.extend_from_slice(Escape::of(byte).bytes()));
        self.0.push(b'"');
        self
    }

    /// A string as the JSON text of a JSON string holds it: quoted and escaped, and the quotes
    /// and escapes escaped once more. Text written between [`JsonText::quote`]s is the text of
    /// one string, and the JSON in it is written with this instead of [`JsonText::string`].
    pub fn string_in_string(&mut self, value: &str) -> &mut Self {
        self.0.extend_from_slice(br#"\""#);
        self.escaped(value, |json, byte| {
            for &inner in Escape::of(byte).bytes() {
                match Escape::of(inner) {
                    // Only `\` and `"` come out of an escape needing another.
                    escape if needs_escape(inner) => json.0.extend_from_slice(escape.bytes()),
                    _ => json.0.push(inner),
                }
            }
        });
        self.0.extend_from_slice(br#"\""#);
        self
    }

    /// The quote that opens or closes a string whose text is written with
    /// [`JsonText::string_in_string`] and punctuation that needs no escape.
    pub fn quote(&mut self) -> &mut Self {
        self.0.push(b'"');
        self
    }

    /// `value`'s bytes, with `escape` writing each byte that needs an escape.
    fn escaped(&mut self, value: &str, escape: impl Fn(&mut Self, u8)) {
        let mut rest = value.as_bytes();
        while let Some(at) = first_to_escape(rest) {
            self.0.extend_from_slice(&rest[..at]);
            escape(self, rest[at]);
            rest = &rest[at + 1..];
        }
        self.0.extend_from_slice(rest);
    }

    pub fn number(&mut self, value: impl itoa::Integer) -> &mut Self {
        self.0.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        self
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// A byte as a JSON string holds it: itself, a short escape or a `\u00XX` one.
struct Escape {
    bytes: [u8; 6],
    len: usize,
}

impl Escape {
    fn of(byte: u8) -> Self {
        let short = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            _ if !needs_escape(byte) => return Self { bytes: [byte, 0, 0, 0, 0, 0], len: 1 },
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let code = [b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
                return Self { bytes: code, len: 6 };
            }
        };
        Self { bytes: [b'\\', short, 0, 0, 0, 0], len: 2 }
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A byte that a JSON string cannot hold as it is.
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Where the first byte to escape is. Eight bytes are tested at once, as one word: a word with
/// no byte to escape is passed over without a branch per byte, and one that may hold one is
/// searched byte by byte.
fn first_to_escape(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    // Nonzero when some byte of `word` is below `limit`, and sometimes when one just above such a
    // byte is: never zero when one is.
    let some_byte_below = |word: u64, limit: u8| word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGH_BITS;
    let some_byte_is = |word: u64, byte: u8| some_byte_below(word ^ (ONES * u64::from(byte)), 1);
    let mut clean = 0;
    for word in bytes.chunks_exact(8) {
        let word = u64::from_le_bytes(word.try_into().expect("chunks_exact gives whole words"));
        if some_byte_below(word, 0x20) | some_byte_is(word, b'"') | some_byte_is(word, b'\\') != 0 {
            break;
        }
        clean += 8;
    }
    bytes[clean..].iter().position(|&byte| needs_escape(byte)).map(|at| clean + at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string is written as `serde_json` writes it, escapes in every position of a block.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut samples: Vec<String> = [
            "",
            "plain",
            "say \"hi\"",
            "C:\\path\\to",
            "line\nbreak\r\n\ttab",
            "\u{8}\u{c}\u{0}\u{1f}\u{7f}",
            "混合精度 · emoji 🚀 in a string",
            "`torch.cuda.empty_cache()` runs on every step: it syncs the device and frees no live memory",
        ]
        .map(str::to_owned)
        .to_vec();
        for at in 0..40 {
            for special in ['"', '\\', '\n', '\u{1}', 'é'] {
                let mut text = "x".repeat(40);
                text.insert(at, special);
                samples.push(text);
            }
        }
        for sample in samples {
            let mut json = JsonText::after(Vec::new());
            json.string(&sample);
            let written = String::from_utf8(json.into_bytes()).unwrap();
            let once = serde_json::to_string(&sample).unwrap();
            assert_eq!(written, once, "{sample:?}");
            // Inside a string: the JSON text of the string, as a string.
            let mut json = JsonText::after(Vec::new());
            json.quote().raw("[").string_in_string(&sample).raw("]").quote();
            let written = String::from_utf8(json.into_bytes()).unwrap();
            assert_eq!(written, serde_json::to_string(&format!("[{once}]")).unwrap(), "{sample:?} in a string");
        }
    }

    #[test]
    fn numbers_and_raw_text() {
        let mut json = JsonText::after(Vec::new());
        json.raw("[").number(0u32).raw(",").number(-7i32).raw(",").number(u32::MAX).raw("]");
        assert_eq!(json.into_bytes(), b"[0,-7,4294967295]");
    }
}
