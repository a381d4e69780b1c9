//! Conversions between byte offsets and LSP positions in the negotiated encoding.
//!
//! LSP counts a position's `character` in UTF-8 bytes, UTF-16 code units or Unicode scalar values,
//! whichever the client and server agreed on at initialisation, and it breaks lines at `\n`,
//! `\r\n` and a lone `\r` only. The engine works in byte offsets. Every range that crosses the
//! protocol goes through this module.

use std::borrow::Cow;
use std::fmt;

use tower_lsp_server::ls_types::{Position, PositionEncodingKind, Range};

use crate::text::TextRange;

/// The unit of `Position.character`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PositionEncoding {
    Utf8,
    /// The protocol's default, and the only encoding every client understands.
    #[default]
    Utf16,
    Utf32,
}

impl PositionEncoding {
    /// UTF-8 when the client offers it (no transcoding at all), else UTF-16, which every client
    /// must support. UTF-32 is never preferred: it costs a scan like UTF-16 and few clients use it.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Self {
        match offered {
            Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => PositionEncoding::Utf8,
            _ => PositionEncoding::Utf16,
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            PositionEncoding::Utf8 => PositionEncodingKind::UTF8,
            PositionEncoding::Utf16 => PositionEncodingKind::UTF16,
            PositionEncoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    fn width(self, c: char) -> u32 {
        match self {
            PositionEncoding::Utf8 => c.len_utf8() as u32,
            PositionEncoding::Utf16 => c.len_utf16() as u32,
            PositionEncoding::Utf32 => 1,
        }
    }
}

/// A position that names no place in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PositionError {
    pub position: Position,
    pub line_count: usize,
}

impl fmt::Display for PositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "position {}:{} is past the end of the document, which has {} line{}",
            self.position.line,
            self.position.character,
            self.line_count,
            if self.line_count == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for PositionError {}

/// Where each line of a text starts, as LSP counts lines: `\n`, `\r\n` and a lone `\r` end one.
///
/// An open buffer keeps its line starts and moves them with each edit: finding them anew scans
/// the whole text, twice per keystroke (the edit's range, then the diagnostics').
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineStarts(Vec<usize>);

impl LineStarts {
    pub fn of(text: &str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        starts.push(0);
        starts.extend(breaks_ending_in(text.as_bytes(), 0, text.len()));
        Self(starts)
    }

    /// Follow an edit that replaced `replaced` (offsets into the old text) with `inserted` bytes,
    /// giving `text`.
    ///
    /// A line start only depends on the one or two bytes before it. Those before the edit's line
    /// are untouched, and so are those after the edit once shifted; only the starts in between
    /// are found again, in the new text.
    pub fn edit(&mut self, text: &str, replaced: TextRange, inserted: usize) {
        let starts = &mut self.0;
        // The last start before the edit (its break ends at least a byte before the edit), and
        // the first after it (the byte before it, and the one after, are outside the edit).
        let kept_before = starts.partition_point(|&s| s < replaced.start.max(1));
        let first_after = starts.partition_point(|&s| s <= replaced.end);
        let shifted_end = |s: usize| s + inserted - replaced.len();
        let scan_end = starts.get(first_after).map_or(text.len(), |&s| shifted_end(s) - 1);
        let scan_start = starts[kept_before - 1];
        let found: Vec<usize> = breaks_ending_in(text.as_bytes(), scan_start, scan_end).collect();
        for start in &mut starts[first_after..] {
            *start = shifted_end(*start);
        }
        starts.splice(kept_before..first_after, found);
    }
}

/// The line starts after the breaks that begin in `bytes[from..to]`.
fn breaks_ending_in(bytes: &[u8], from: usize, to: usize) -> impl Iterator<Item = usize> {
    memchr::memchr2_iter(b'\n', b'\r', &bytes[from..to]).map(move |at| from + at).filter_map(|at| {
        // `\r\n` is one break; its start is recorded at the `\n`.
        let half_of_crlf = bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n');
        (!half_of_crlf).then_some(at + 1)
    })
}

/// A text with its line starts, as LSP counts lines, and the encoding to count characters in.
pub struct PositionMapper<'a> {
    text: &'a str,
    line_starts: Cow<'a, [usize]>,
    encoding: PositionEncoding,
}

impl<'a> PositionMapper<'a> {
    pub fn new(text: &'a str, encoding: PositionEncoding) -> Self {
        Self { text, line_starts: Cow::Owned(LineStarts::of(text).0), encoding }
    }

    /// A mapper over line starts kept with the text (they must be `text`'s).
    pub fn with_lines(text: &'a str, lines: &'a LineStarts, encoding: PositionEncoding) -> Self {
        debug_assert!(lines.0.last().is_some_and(|&s| s <= text.len()));
        Self { text, line_starts: Cow::Borrowed(&lines.0), encoding }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    pub fn encoding(&self) -> PositionEncoding {
        self.encoding
    }

    /// Lines as LSP counts them: a text ending in a line break has an empty last line.
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Zero-based line holding `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// Byte range of a zero-based line, without its line break.
    pub fn line_range(&self, line: usize) -> TextRange {
        let start = self.line_starts[line];
        let next = self.line_starts.get(line + 1).copied().unwrap_or(self.text.len());
        let content = &self.text.as_bytes()[start..next];
        let terminator = if content.ends_with(b"\r\n") {
            2
        } else {
            usize::from(content.ends_with(b"\n") || content.ends_with(b"\r"))
        };
        TextRange::new(start, next - terminator)
    }

    /// The LSP position of a byte offset. Offsets past the end map to the end; offsets inside a
    /// multi-byte character map to that character's start.
    pub fn position(&self, offset: usize) -> Position {
        let offset = crate::text::floor_char_boundary(self.text, offset.min(self.text.len()));
        let line = self.line_of(offset);
        let line_start = self.line_starts[line];
        // An offset between `\r` and `\n` belongs to the line break; report it at the line end.
        let offset = offset.min(self.line_range(line).end.max(line_start));
        let before = &self.text[line_start..offset];
        // ASCII is one unit a byte in every encoding, and nearly every line of code is ASCII.
        let character =
            if before.is_ascii() { before.len() as u32 } else { before.chars().map(|c| self.encoding.width(c)).sum() };
        Position { line: line as u32, character }
    }

    pub fn range(&self, range: TextRange) -> Range {
        Range { start: self.position(range.start), end: self.position(range.end) }
    }

    /// The byte offset of an LSP position. A `character` past the end of its line means the line
    /// end, as the protocol specifies; one that falls inside a character (half of a UTF-16
    /// surrogate pair, a byte inside a UTF-8 sequence) rounds down to its start. A line past the
    /// last one is an error, except the line right after a document's last line break at
    /// character 0, which some clients use to mean "the end".
    pub fn offset(&self, position: Position) -> Result<usize, PositionError> {
        let line = position.line as usize;
        if line >= self.line_starts.len() {
            if line == self.line_starts.len() && position.character == 0 {
                return Ok(self.text.len());
            }
            return Err(PositionError { position, line_count: self.line_starts.len() });
        }
        let line_range = self.line_range(line);
        let mut remaining = position.character;
        let mut offset = line_range.start;
        for c in self.text[line_range.start..line_range.end].chars() {
            let width = self.encoding.width(c);
            if remaining < width {
                break;
            }
            remaining -= width;
            offset += c.len_utf8();
        }
        Ok(offset)
    }

    /// The byte range of an LSP range; a range whose end precedes its start is empty at the end.
    pub fn text_range(&self, range: Range) -> Result<TextRange, PositionError> {
        let start = self.offset(range.start)?;
        let end = self.offset(range.end)?;
        Ok(TextRange::new(start.min(end), end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    /// Every char boundary must survive offset → position → offset in every encoding.
    fn assert_round_trips(text: &str) {
        for encoding in [PositionEncoding::Utf8, PositionEncoding::Utf16, PositionEncoding::Utf32] {
            let mapper = PositionMapper::new(text, encoding);
            for (offset, c) in text.char_indices() {
                if c == '\n' && text[..offset].ends_with('\r') {
                    continue; // the middle of `\r\n` is not a position
                }
                let position = mapper.position(offset);
                assert_eq!(mapper.offset(position), Ok(offset), "{encoding:?} offset {offset} in {text:?}");
            }
            assert_eq!(mapper.offset(mapper.position(text.len())), Ok(text.len()));
        }
    }

    #[test]
    fn negotiation_prefers_utf8_and_falls_back_to_utf16() {
        let both = [PositionEncodingKind::UTF16, PositionEncodingKind::UTF8];
        assert_eq!(PositionEncoding::negotiate(Some(&both)), PositionEncoding::Utf8);
        let utf32 = [PositionEncodingKind::UTF32];
        assert_eq!(PositionEncoding::negotiate(Some(&utf32)), PositionEncoding::Utf16);
        assert_eq!(PositionEncoding::negotiate(Some(&[])), PositionEncoding::Utf16);
        assert_eq!(PositionEncoding::negotiate(None), PositionEncoding::Utf16);
    }

    #[test]
    fn cjk_comment_counts_differently_per_encoding() {
        let text = "x = 1  # 显存不足\ny = torch.cuda.empty_cache()\n";
        let x = text.find("不足").unwrap();
        let utf8 = PositionMapper::new(text, PositionEncoding::Utf8);
        let utf16 = PositionMapper::new(text, PositionEncoding::Utf16);
        let utf32 = PositionMapper::new(text, PositionEncoding::Utf32);
        assert_eq!(utf8.position(x), pos(0, 15));
        assert_eq!(utf16.position(x), pos(0, 11));
        assert_eq!(utf32.position(x), pos(0, 11));
        let call = text.find("torch").unwrap();
        assert_eq!(utf16.position(call), pos(1, 4));
        assert_eq!(utf16.offset(pos(1, 4)), Ok(call));
        assert_round_trips(text);
    }

    #[test]
    fn emoji_in_a_string_takes_two_utf16_units() {
        let text = "print(\"🔥 oom\"); torch.cuda.empty_cache()";
        let after = text.find(" oom").unwrap();
        assert_eq!(PositionMapper::new(text, PositionEncoding::Utf16).position(after), pos(0, 9));
        assert_eq!(PositionMapper::new(text, PositionEncoding::Utf8).position(after), pos(0, 11));
        assert_eq!(PositionMapper::new(text, PositionEncoding::Utf32).position(after), pos(0, 8));
        assert_round_trips(text);
    }

    #[test]
    fn a_position_inside_a_surrogate_pair_rounds_down() {
        let text = "a😀b";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        assert_eq!(mapper.offset(pos(0, 1)), Ok(1));
        assert_eq!(mapper.offset(pos(0, 2)), Ok(1), "between the two halves of 😀");
        assert_eq!(mapper.offset(pos(0, 3)), Ok(5));
        let utf8 = PositionMapper::new(text, PositionEncoding::Utf8);
        assert_eq!(utf8.offset(pos(0, 3)), Ok(1), "inside the UTF-8 sequence of 😀");
    }

    #[test]
    fn tabs_are_one_unit() {
        let text = "for x in y:\n\t\ttorch.cuda.empty_cache()\n";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        let call = text.find("torch").unwrap();
        assert_eq!(mapper.position(call), pos(1, 2));
        assert_round_trips(text);
    }

    #[test]
    fn crlf_and_lone_cr_break_lines() {
        let text = "a = 1\r\nb = 2\rc = 3\nd";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        assert_eq!(mapper.line_count(), 4);
        assert_eq!(mapper.position(text.find('b').unwrap()), pos(1, 0));
        assert_eq!(mapper.position(text.find('c').unwrap()), pos(2, 0));
        assert_eq!(mapper.position(text.find('d').unwrap()), pos(3, 0));
        assert_eq!(mapper.line_range(0), TextRange::new(0, 5));
        // The `\n` of `\r\n` is not a place of its own: it reports as the line end.
        assert_eq!(mapper.position(6), pos(0, 5));
        assert_round_trips(text);
    }

    #[test]
    fn unicode_line_separators_do_not_break_lines() {
        // U+2028 and U+0085 are line breaks to some libraries, never to LSP.
        let text = "s = \"a\u{2028}b\u{85}c\"\nx";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        assert_eq!(mapper.line_count(), 2);
        assert_eq!(mapper.position(text.find('c').unwrap()), pos(0, 9));
        assert_round_trips(text);
    }

    #[test]
    fn character_past_the_line_end_clamps_to_it() {
        let text = "ab\r\ncd";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        assert_eq!(mapper.offset(pos(0, 99)), Ok(2));
        assert_eq!(mapper.offset(pos(1, 99)), Ok(text.len()));
    }

    #[test]
    fn a_line_past_the_end_is_an_error() {
        let text = "ab\ncd\n";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf8);
        assert_eq!(mapper.line_count(), 3);
        assert_eq!(mapper.offset(pos(2, 0)), Ok(text.len()));
        assert_eq!(mapper.offset(pos(3, 0)), Ok(text.len()), "the line after the last means the end");
        let error = mapper.offset(pos(3, 1)).unwrap_err();
        assert_eq!(error.to_string(), "position 3:1 is past the end of the document, which has 3 lines");
        assert!(mapper.offset(pos(7, 0)).is_err());
    }

    #[test]
    fn empty_text_has_one_line() {
        let mapper = PositionMapper::new("", PositionEncoding::Utf16);
        assert_eq!(mapper.line_count(), 1);
        assert_eq!(mapper.position(0), pos(0, 0));
        assert_eq!(mapper.offset(pos(0, 5)), Ok(0));
    }

    #[test]
    fn offsets_past_the_end_or_inside_a_character_map_to_a_real_position() {
        let text = "é = 1";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        assert_eq!(mapper.position(1), pos(0, 0), "inside é");
        assert_eq!(mapper.position(100), pos(0, 5));
    }

    #[test]
    fn line_starts_follow_every_edit_as_a_fresh_scan_finds_them() {
        // Every small edit of texts that mix `\n`, `\r\n` and lone `\r`, at every place: the
        // breaks an edit splits or joins (`\r` + `\n`) are where following them can go wrong.
        let pieces = ["", "\n", "\r", "\r\n", "x", "\n\r", "ab\r"];
        let texts = ["", "a\nb", "a\r\nb\rc\n", "\r\r\n\n\r", "ab\rcd\r\nef\n", "\n\n\n"];
        for text in texts {
            for start in 0..=text.len() {
                for end in start..=text.len() {
                    for piece in pieces {
                        let mut lines = LineStarts::of(text);
                        let edited = format!("{}{piece}{}", &text[..start], &text[end..]);
                        lines.edit(&edited, TextRange::new(start, end), piece.len());
                        assert_eq!(lines, LineStarts::of(&edited), "{text:?} [{start}, {end}) <- {piece:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn ranges_convert_both_ways() {
        let text = "# 注释\nloss.backward()  # 😀\n";
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        let start = text.find("loss").unwrap();
        let range = TextRange::new(start, start + "loss.backward()".len());
        let lsp = mapper.range(range);
        assert_eq!(lsp, Range { start: pos(1, 0), end: pos(1, 15) });
        assert_eq!(mapper.text_range(lsp), Ok(range));
        let reversed = Range { start: pos(1, 15), end: pos(1, 0) };
        assert_eq!(mapper.text_range(reversed), Ok(TextRange::new(start, start)));
    }
}
