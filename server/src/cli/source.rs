//! Reading one file for `culint check`: the size limit, binary and non-UTF-8 detection, and the
//! byte-order mark, which is stripped before linting (so every range is relative to the text the
//! rules saw) and put back when a fixed file is written.

use std::io::Read;
use std::path::Path;

const BOM: &str = "\u{feff}";

/// A file's text, ready to lint.
#[derive(Debug)]
pub struct SourceText {
    /// The text without its byte-order mark.
    pub text: String,
    pub had_bom: bool,
}

impl SourceText {
    pub fn from_string(mut text: String) -> Self {
        let had_bom = text.starts_with(BOM);
        if had_bom {
            text.drain(..BOM.len());
        }
        Self { text, had_bom }
    }

    /// The bytes to write back for `fixed` text: with the byte-order mark if the file had one.
    pub fn restore(&self, fixed: &str) -> String {
        if self.had_bom { format!("{BOM}{fixed}") } else { fixed.to_owned() }
    }
}

/// Why a file was not linted.
#[derive(Debug)]
pub enum Skip {
    /// Over `max-file-size` (the size, the limit).
    TooLarge(u64, u64),
    /// Has a NUL byte: not source code.
    Binary,
    /// Not UTF-8, so its positions cannot be reported reliably.
    NotUtf8,
}

impl Skip {
    pub fn describe(&self) -> String {
        match self {
            Skip::TooLarge(size, limit) => format!(
                "skipped: {size} bytes is over `max-file-size` ({limit} bytes); raise it in the configuration to lint this file"
            ),
            Skip::Binary => "skipped: binary file (it contains a NUL byte)".to_owned(),
            Skip::NotUtf8 => "skipped: not valid UTF-8; culint reads Python source as UTF-8".to_owned(),
        }
    }
}

/// What reading a file produced.
#[derive(Debug)]
pub enum Loaded {
    Text(SourceText),
    Skipped(Skip),
}

/// Read `path`, refusing files over `max_size` bytes before reading them whole.
pub fn read_source(path: &Path, max_size: u64) -> std::io::Result<Loaded> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > max_size {
        return Ok(Loaded::Skipped(Skip::TooLarge(size, max_size)));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // `take` guards against a file that grows while it is read.
    file.take(max_size + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_size {
        return Ok(Loaded::Skipped(Skip::TooLarge(bytes.len() as u64, max_size)));
    }
    Ok(decode(bytes))
}

/// Turn raw bytes (a file's or stdin's) into text, or say why not.
pub fn decode(bytes: Vec<u8>) -> Loaded {
    if memchr::memchr(0, &bytes).is_some() {
        return Loaded::Skipped(Skip::Binary);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Loaded::Text(SourceText::from_string(text)),
        Err(_) => Loaded::Skipped(Skip::NotUtf8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_restores_the_byte_order_mark() {
        let Loaded::Text(source) = decode("\u{feff}import torch\r\n".as_bytes().to_vec()) else { panic!() };
        assert!(source.had_bom);
        assert_eq!(source.text, "import torch\r\n");
        assert_eq!(source.restore("x\r\n"), "\u{feff}x\r\n");
    }

    #[test]
    fn detects_binary_and_non_utf8() {
        assert!(matches!(decode(b"a\0b".to_vec()), Loaded::Skipped(Skip::Binary)));
        assert!(matches!(decode(b"caf\xe9".to_vec()), Loaded::Skipped(Skip::NotUtf8)));
    }

    #[test]
    fn refuses_files_over_the_limit_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.py");
        std::fs::write(&path, "x = 1\n".repeat(10)).unwrap();
        assert!(matches!(read_source(&path, 10).unwrap(), Loaded::Skipped(Skip::TooLarge(60, 10))));
        assert!(matches!(read_source(&path, 60).unwrap(), Loaded::Text(_)));
    }
}
