//! A `.ipynb` file (nbformat 4) as text: its cells, where each cell's `source` value lies in the
//! JSON text, and the text with new sources written into just those places.
//!
//! Fixes rewrite only cell sources, and a notebook is a file people diff and review: everything
//! else (outputs, metadata, key order, indentation, escapes, the final line break) must stay byte
//! for byte as it was. So the file is never re-serialised: the scanner here records the byte span
//! of each `source` value, and [`NotebookFile::with_sources`] replaces those spans alone, written
//! as the file wrote them (one string, or a list of lines laid out as the file lays its lists).

use serde_json::Value;

use crate::text::TextRange;

/// The kind of a notebook cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    Code,
    /// Markdown and raw cells: not Python.
    Other,
}

/// One cell of the file.
#[derive(Clone, Debug)]
pub struct FileCell {
    pub kind: CellKind,
    /// The source, decoded.
    pub source: String,
    /// The `source` value in the file's text.
    value: TextRange,
    /// The strings of a list-of-lines source (their spans in the file's text); `None` for a
    /// source written as one string.
    lines: Option<Vec<TextRange>>,
}

/// A notebook file's cells.
#[derive(Clone, Debug)]
pub struct NotebookFile {
    pub cells: Vec<FileCell>,
}

impl NotebookFile {
    /// Read a notebook's text. Errors say what is wrong in words for the user: not JSON, not
    /// nbformat 4, not a Python notebook.
    pub fn parse(text: &str) -> Result<Self, String> {
        let document: Value = serde_json::from_str(text).map_err(|e| format!("not a valid notebook: {e}"))?;
        match document.get("nbformat").and_then(Value::as_u64) {
            Some(4) => {}
            Some(other) => {
                return Err(format!(
                    "nbformat {other} notebooks are not supported; culint reads nbformat 4 (`jupyter nbconvert --to notebook` upgrades it)"
                ));
            }
            None => return Err("not a valid notebook: no `nbformat` version".to_owned()),
        }
        if let Some(language) = language_of(&document)
            && !language.eq_ignore_ascii_case("python")
        {
            return Err(format!("skipped: not a Python notebook (its language is {language})"));
        }
        let mut scanner = Scanner { text, at: 0 };
        let cells = scanner.notebook().map_err(|at| format!("not a valid notebook: unexpected JSON at byte {at}"))?;
        Ok(Self { cells })
    }

    /// The text of the file with new sources for some cells (`None`: the cell keeps its own),
    /// every other byte as `text`, the file's text, has it.
    pub fn with_sources(&self, text: &str, sources: &[Option<String>]) -> String {
        let mut out = String::with_capacity(text.len() + 256);
        let mut copied = 0;
        for (cell, source) in self.cells.iter().zip(sources) {
            let Some(source) = source.as_deref().filter(|s| *s != cell.source) else { continue };
            out.push_str(&text[copied..cell.value.start]);
            match &cell.lines {
                None => out.push_str(&json_string(source)),
                Some(lines) => write_lines(&mut out, text, cell, lines, source),
            }
            copied = cell.value.end;
        }
        out.push_str(&text[copied..]);
        out
    }
}

/// The notebook's language, from `metadata.language_info.name` or the kernel's.
fn language_of(document: &Value) -> Option<&str> {
    let metadata = document.get("metadata")?;
    metadata.pointer("/language_info/name").or_else(|| metadata.pointer("/kernelspec/language")).and_then(Value::as_str)
}

/// `source` as a JSON string, escaped as Python's `json` module (and so nbformat) escapes it.
fn json_string(source: &str) -> String {
    serde_json::to_string(source).expect("a string serialises")
}

/// A list-of-lines source, laid out as the cell's list was: the text between `[` and the first
/// line, between lines, and before `]`. A line the cell already had is written as it was
/// written (a file that escapes non-ASCII keeps its escapes).
fn write_lines(out: &mut String, text: &str, cell: &FileCell, lines: &[TextRange], source: &str) {
    let value = cell.value;
    let (opening, separator, closing) = match lines {
        [] => {
            let indentation = indentation_of_line(text, value.start);
            (format!("\n{indentation} "), format!(",\n{indentation} "), format!("\n{indentation}"))
        }
        [only] => {
            let opening = text[value.start + 1..only.start].to_owned();
            (opening.clone(), format!(",{opening}"), text[only.end..value.end - 1].to_owned())
        }
        [first, second, ..] => (
            text[value.start + 1..first.start].to_owned(),
            text[first.end..second.start].to_owned(),
            text[lines[lines.len() - 1].end..value.end - 1].to_owned(),
        ),
    };
    let written: std::collections::HashMap<String, &str> = lines
        .iter()
        .filter_map(|span| {
            let raw = &text[span.start..span.end];
            serde_json::from_str::<String>(raw).ok().map(|decoded| (decoded, raw))
        })
        .collect();
    out.push('[');
    if source.is_empty() {
        out.push(']');
        return;
    }
    out.push_str(&opening);
    for (index, line) in source.split_inclusive('\n').enumerate() {
        if index > 0 {
            out.push_str(&separator);
        }
        match written.get(line) {
            Some(raw) => out.push_str(raw),
            None => out.push_str(&json_string(line)),
        }
    }
    out.push_str(&closing);
    out.push(']');
}

fn indentation_of_line(text: &str, at: usize) -> &str {
    let start = crate::text::line_start(text, at);
    let line = &text[start..at];
    &line[..line.len() - line.trim_start().len()]
}

/// A JSON scanner that records where values lie. Errors are the byte offset where the text
/// stopped being JSON (the text parsed as JSON already; this only guards the spans).
struct Scanner<'t> {
    text: &'t str,
    at: usize,
}

type Scan<T> = Result<T, usize>;

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Scan<()> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.at)
        }
    }

    /// The notebook object: its `cells`, every other member skipped.
    fn notebook(&mut self) -> Scan<Vec<FileCell>> {
        let mut cells = Vec::new();
        self.object(|scanner, key| {
            if key == "cells" {
                scanner.array(|scanner| {
                    cells.push(scanner.cell()?);
                    Ok(())
                })?;
            } else {
                scanner.value()?;
            }
            Ok(())
        })?;
        Ok(cells)
    }

    fn cell(&mut self) -> Scan<FileCell> {
        let start = self.at;
        let mut kind = CellKind::Other;
        let mut source = None;
        self.object(|scanner, key| {
            match key.as_str() {
                "cell_type" => {
                    let span = scanner.value()?;
                    if scanner.decode::<String>(span)? == "code" {
                        kind = CellKind::Code;
                    }
                }
                "source" => source = Some(scanner.source()?),
                _ => {
                    scanner.value()?;
                }
            }
            Ok(())
        })?;
        let (value, lines, text) = source.ok_or(start)?;
        Ok(FileCell { kind, source: text, value, lines })
    }

    /// A `source` value: one string or a list of strings.
    fn source(&mut self) -> Scan<(TextRange, Option<Vec<TextRange>>, String)> {
        self.skip_whitespace();
        let start = self.at;
        if self.peek() == Some(b'[') {
            let mut lines = Vec::new();
            self.array(|scanner| {
                lines.push(scanner.value()?);
                Ok(())
            })?;
            let mut text = String::new();
            for span in &lines {
                text.push_str(&self.decode::<String>(*span)?);
            }
            Ok((TextRange::new(start, self.at), Some(lines), text))
        } else {
            let span = self.value()?;
            Ok((span, None, self.decode(span)?))
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, span: TextRange) -> Scan<T> {
        serde_json::from_str(&self.text[span.start..span.end]).map_err(|_| span.start)
    }

    /// An object, calling `member` with each key, positioned before its value, which `member`
    /// must read.
    fn object(&mut self, mut member: impl FnMut(&mut Self, String) -> Scan<()>) -> Scan<()> {
        self.sequence(b'{', b'}', |scanner| {
            let key = scanner.string()?;
            let key = scanner.decode::<String>(key)?;
            scanner.expect(b':')?;
            member(scanner, key)
        })
    }

    /// An array, calling `element` positioned before each element, which it must read.
    fn array(&mut self, element: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
        self.sequence(b'[', b']', element)
    }

    /// `open`, items separated by commas, `close`; `item` reads each one.
    fn sequence(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
        self.expect(open)?;
        self.skip_whitespace();
        if self.peek() == Some(close) {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.skip_whitespace();
            item(self)?;
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(byte) if byte == close => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(self.at),
            }
        }
    }

    /// Any value, skipped; its span.
    fn value(&mut self) -> Scan<TextRange> {
        self.skip_whitespace();
        let start = self.at;
        match self.peek() {
            Some(b'"') => return self.string(),
            Some(b'{') => self.object(|scanner, _| scanner.value().map(drop))?,
            Some(b'[') => self.array(|scanner| scanner.value().map(drop))?,
            Some(_) => {
                // A number, `true`, `false` or `null`.
                while self.peek().is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')) {
                    self.at += 1;
                }
                if self.at == start {
                    return Err(start);
                }
            }
            None => return Err(start),
        }
        Ok(TextRange::new(start, self.at))
    }

    fn string(&mut self) -> Scan<TextRange> {
        let start = self.at;
        if self.peek() != Some(b'"') {
            return Err(start);
        }
        self.at += 1;
        let bytes = self.text.as_bytes();
        while self.at < bytes.len() {
            match bytes[self.at] {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Ok(TextRange::new(start, self.at));
                }
                _ => self.at += 1,
            }
        }
        Err(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As nbformat writes a notebook: `indent=1`, sorted keys, sources as lists of lines.
    const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": [
    "# Training\n",
    "Notes"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "ok\n"
     ]
    }
   ],
   "source": [
    "import torch\n",
    "x = torch.ones(3, device=\"cuda\")\n",
    "print(x)"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": "y = 1\ny"
  }
 ],
 "metadata": {
  "language_info": {
   "name": "python"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    #[test]
    fn reads_cells_kinds_and_sources() {
        let notebook = NotebookFile::parse(NOTEBOOK).unwrap();
        let kinds: Vec<CellKind> = notebook.cells.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [CellKind::Other, CellKind::Code, CellKind::Code]);
        assert_eq!(notebook.cells[1].source, "import torch\nx = torch.ones(3, device=\"cuda\")\nprint(x)");
        assert_eq!(notebook.cells[2].source, "y = 1\ny");
    }

    #[test]
    fn unchanged_sources_leave_the_text_as_it_was() {
        let notebook = NotebookFile::parse(NOTEBOOK).unwrap();
        let sources: Vec<Option<String>> = notebook.cells.iter().map(|c| Some(c.source.clone())).collect();
        assert_eq!(notebook.with_sources(NOTEBOOK, &sources), NOTEBOOK);
        assert_eq!(notebook.with_sources(NOTEBOOK, &[None, None, None]), NOTEBOOK);
    }

    #[test]
    fn new_sources_replace_only_the_source_values_in_the_cell_s_layout() {
        let notebook = NotebookFile::parse(NOTEBOOK).unwrap();
        let code = "import torch\nx = torch.ones(3, device=\"cuda\")\nx = x.half()\nprint(x)";
        let written = notebook.with_sources(NOTEBOOK, &[None, Some(code.to_owned()), Some("y = 2\n".to_owned())]);
        let expected = NOTEBOOK
            .replace("\"print(x)\"", "\"x = x.half()\\n\",\n    \"print(x)\"")
            .replace(r#""source": "y = 1\ny""#, r#""source": "y = 2\n""#);
        assert_eq!(written, expected);
        let again = NotebookFile::parse(&written).unwrap();
        assert_eq!(again.cells[1].source, code);
        assert_eq!(again.cells[2].source, "y = 2\n");
    }

    #[test]
    fn lines_already_written_keep_their_escapes() {
        let text = r#"{"cells": [{"cell_type": "code", "source": ["s = '\u00e9'\n", "t = 1"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}"#;
        let notebook = NotebookFile::parse(text).unwrap();
        assert_eq!(notebook.cells[0].source, "s = 'é'\nt = 1");
        let written = notebook.with_sources(text, &[Some("s = 'é'\nt = 2".to_owned())]);
        assert!(written.contains(r#"["s = '\u00e9'\n", "t = 2"]"#), "{written}");
    }

    #[test]
    fn an_empty_list_source_gets_the_file_s_layout() {
        let text = "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"source\": []\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";
        let notebook = NotebookFile::parse(text).unwrap();
        let written = notebook.with_sources(text, &[Some("a\nb".to_owned())]);
        assert!(written.contains("\"source\": [\n    \"a\\n\",\n    \"b\"\n   ]"), "{written}");
    }

    /// Compact, CRLF and escaped layouts read, and write back unchanged when nothing changes.
    #[test]
    fn any_layout_round_trips() {
        let compact = NOTEBOOK.replace("\n ", "").replace(",\n", ",");
        let crlf = NOTEBOOK.replace('\n', "\r\n").replace("\\r\n", "\\n");
        for text in [compact.as_str(), crlf.as_str(), NOTEBOOK] {
            let notebook = NotebookFile::parse(text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(notebook.cells[1].source, "import torch\nx = torch.ones(3, device=\"cuda\")\nprint(x)");
            let sources: Vec<Option<String>> = notebook.cells.iter().map(|c| Some(c.source.clone())).collect();
            assert_eq!(notebook.with_sources(text, &sources), text);
        }
    }

    #[test]
    fn refuses_other_versions_languages_and_non_json() {
        let old = NOTEBOOK.replace("\"nbformat\": 4", "\"nbformat\": 3");
        assert!(NotebookFile::parse(&old).unwrap_err().contains("nbformat 3"));
        let r = NOTEBOOK.replace("\"name\": \"python\"", "\"name\": \"R\"");
        assert!(NotebookFile::parse(&r).unwrap_err().contains("its language is R"));
        assert!(NotebookFile::parse("{\"cells\": [").unwrap_err().starts_with("not a valid notebook"));
    }
}
