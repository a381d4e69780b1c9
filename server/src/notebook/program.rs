//! The code cells of a notebook as one Python program, in order, as the kernel runs them: a model
//! built in one cell and trained in another is one model to the rules.
//!
//! The program is each cell's text with its IPython lines masked ([`Masked`]), a line break added
//! where the cell has none, and a boundary comment line between cells. Every finding maps back to
//! a cell and an offset in the cell's own text ([`Program::locate`]), and a program the fixes
//! rewrote splits back into cell texts ([`Program::cells_after`]) at the boundaries, which no fix
//! touches (a fix edits within a statement, and a statement lies within one cell).

use crate::diagnostic::{Diagnostic, Related};
use crate::fix::{Edit, Fix};
use crate::text::{LineIndex, SourceLocation, TextRange};

use super::magics::Masked;

/// The line between two cells in the program. A comment, so that it changes nothing the rules
/// see; in the rare notebook that holds it, it takes more dashes until it is one no cell holds.
pub const BOUNDARY: &str = "# ---- end of notebook cell (culint) ----\n";

/// The program of a notebook's code cells.
#[derive(Clone, Debug)]
pub struct Program {
    /// The Python text the rules read.
    pub text: String,
    cells: Vec<ProgramCell>,
    lines: LineIndex,
    /// The line between cells: [`BOUNDARY`], or a longer one when a cell holds that.
    boundary: String,
}

#[derive(Clone, Debug)]
struct ProgramCell {
    /// The cell's own text, as the notebook (or the editor) has it.
    source: String,
    source_lines: LineIndex,
    masked: Masked,
    /// Where the cell's text starts in the program, and its first line there.
    start: usize,
    first_line: usize,
}

/// A place in one cell: which cell (its position among the cells given to [`Program::new`]) and
/// the byte offset in the cell's own text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellOffset {
    pub cell: usize,
    pub offset: usize,
}

impl Program {
    /// The program of `cells`, the texts of the code cells in notebook order.
    pub fn new<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> Self {
        let sources: Vec<S> = cells.into_iter().collect();
        let mut boundary = BOUNDARY.to_owned();
        while sources.iter().any(|source| source.as_ref().contains(boundary.trim_end())) {
            boundary.insert(2, '-');
        }
        let mut text = String::new();
        let mut program_cells = Vec::new();
        for (index, source) in sources.iter().enumerate() {
            let source = source.as_ref();
            if index > 0 {
                text.push_str(&boundary);
            }
            let masked = Masked::of(source);
            let start = text.len();
            text.push_str(&masked.text);
            if !masked.text.ends_with('\n') {
                text.push('\n');
            }
            program_cells.push(ProgramCell {
                source: source.to_owned(),
                source_lines: LineIndex::new(source),
                masked,
                start,
                first_line: 0,
            });
        }
        let lines = LineIndex::new(&text);
        for cell in &mut program_cells {
            cell.first_line = lines.line_of(cell.start);
        }
        Self { text, cells: program_cells, lines, boundary }
    }

    pub fn cell_count(&self) -> usize {
        self.cells.len()
    }

    /// The text of a cell, as given.
    pub fn cell_text(&self, cell: usize) -> &str {
        &self.cells[cell].source
    }

    /// Where the lines of a cell's text start.
    pub fn cell_lines(&self, cell: usize) -> &LineIndex {
        &self.cells[cell].source_lines
    }

    /// The cell a program offset lies in, and the one-based row and column (in characters) in
    /// the cell's own text.
    pub fn location(&self, offset: usize) -> (usize, SourceLocation) {
        let at = self.locate(offset);
        let cell = &self.cells[at.cell];
        (at.cell, cell.source_lines.location(&cell.source, at.offset))
    }

    /// The cell a program offset lies in, and the offset in that cell's text: the same line and
    /// byte column (a masked line's columns are clamped to the line). An offset on a boundary
    /// line belongs to the end of the cell before it.
    pub fn locate(&self, offset: usize) -> CellOffset {
        let offset = offset.min(self.text.len());
        let cell = self.cells.partition_point(|c| c.start <= offset).saturating_sub(1);
        let Some(program_cell) = self.cells.get(cell) else { return CellOffset { cell: 0, offset: 0 } };
        let line = self.lines.line_of(offset);
        let line_in_cell = line.saturating_sub(program_cell.first_line);
        let source = &program_cell.source;
        let lines = &program_cell.source_lines;
        if line_in_cell >= lines.line_count() {
            return CellOffset { cell, offset: source.len() };
        }
        let column = offset - self.lines.line_start(line);
        let range = lines.line_range(source, line_in_cell);
        let mut at = (range.start + column).min(range.end);
        while !source.is_char_boundary(at) {
            at -= 1;
        }
        CellOffset { cell, offset: at }
    }

    /// The program offset of an offset in a cell's text: the same line and byte column.
    pub fn program_offset(&self, cell: usize, offset: usize) -> usize {
        let program_cell = &self.cells[cell];
        let lines = &program_cell.source_lines;
        let line = lines.line_of(offset.min(program_cell.source.len()));
        let column = offset - lines.line_start(line);
        let range = self.lines.line_range(&self.text, program_cell.first_line + line);
        (range.start + column).min(range.end)
    }

    /// A program range as a cell range: in the cell its start lies in, its end clamped to that
    /// cell's text.
    pub fn locate_range(&self, range: TextRange) -> (usize, TextRange) {
        let start = self.locate(range.start);
        let end = self.locate(range.end);
        let end = if end.cell == start.cell { end.offset } else { self.cells[start.cell].source.len() };
        (start.cell, TextRange::new(start.offset, end.max(start.offset)))
    }

    /// The findings of a lint of the program, cell by cell, their ranges in the cell's text: what
    /// an editor shows on each cell. What a finding relates to in another cell is left out, and
    /// so is a fix that would edit another cell (a fix edits within a statement, so none does).
    pub fn by_cell(&self, diagnostics: &[Diagnostic]) -> Vec<Vec<Diagnostic>> {
        let mut cells = vec![Vec::new(); self.cells.len()];
        for diagnostic in diagnostics {
            let (cell, range) = self.locate_range(diagnostic.range);
            let in_cell = |range: TextRange| {
                let (other, range) = self.locate_range(range);
                (other == cell).then_some(range)
            };
            let related = diagnostic
                .related
                .iter()
                .filter_map(|r| Some(Related { range: in_cell(r.range)?, ..r.clone() }))
                .collect();
            let fix = diagnostic.fix.as_ref().and_then(|fix| {
                let edits = fix
                    .edits
                    .iter()
                    .map(|edit| Some(Edit { range: in_cell(edit.range)?, ..edit.clone() }))
                    .collect::<Option<Vec<Edit>>>()?;
                Some(Fix { edits, ..fix.clone() })
            });
            cells[cell].push(Diagnostic { range, related, fix, ..diagnostic.clone() });
        }
        cells
    }

    /// The cell texts of `fixed`, a version of [`Program::text`] that fixes rewrote, with the
    /// masked IPython lines put back. `None` when the boundaries or the masked lines are not all
    /// where the cells have them (which a fix confined to statements never causes).
    pub fn cells_after(&self, fixed: &str) -> Option<Vec<String>> {
        let mut chunks = Vec::with_capacity(self.cells.len());
        let mut start = 0;
        let mut at = 0;
        for line in fixed.split_inclusive('\n') {
            if line == self.boundary {
                chunks.push(&fixed[start..at]);
                start = at + line.len();
            }
            at += line.len();
        }
        chunks.push(&fixed[start..]);
        if chunks.len() != self.cells.len() {
            return None;
        }
        self.cells
            .iter()
            .zip(chunks)
            .map(|(cell, chunk)| {
                // The line break the program added after a cell that ended without one.
                let chunk = if cell.masked.text.ends_with('\n') { chunk } else { chunk.strip_suffix('\n')? };
                if !cell.masked.is_masked() {
                    return Some(chunk.to_owned());
                }
                cell.masked.restore(chunk)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_follow_each_other_with_a_boundary_between() {
        let program = Program::new(["import torch", "model = Net().cuda()\n", ""]);
        assert_eq!(program.text, format!("import torch\n{BOUNDARY}model = Net().cuda()\n{BOUNDARY}\n"));
        let at = program.text.find("Net").unwrap();
        assert_eq!(program.locate(at), CellOffset { cell: 1, offset: 8 });
        assert_eq!(program.locate(0), CellOffset { cell: 0, offset: 0 });
        assert_eq!(program.locate(program.text.len()), CellOffset { cell: 2, offset: 0 });
    }

    #[test]
    fn offsets_after_a_masked_line_map_to_the_cell_s_own_text() {
        let cell = "!pip install timm\nmodel = timm.create_model('vit')\n";
        let program = Program::new(["x = 1", cell]);
        let at = program.text.find("timm.create").unwrap();
        let located = program.locate(at);
        assert_eq!(located.cell, 1);
        assert_eq!(&cell[located.offset..located.offset + 11], "timm.create");
        // A column past a masked line's end is clamped to it.
        let placeholder = program.text.find(super::super::magics::PLACEHOLDER).unwrap();
        assert_eq!(program.locate(placeholder + 30).offset, "!pip install timm".len());
        let (cell_index, range) = program.locate_range(TextRange::new(at, at + 4));
        assert_eq!((cell_index, &cell[range.start..range.end]), (1, "timm"));
    }

    /// Cells that end with and without a line break, are empty, hold only IPython, use CRLF,
    /// end in a continued magic, or hold text beyond ASCII: each comes back as it was.
    #[test]
    fn every_kind_of_cell_comes_back_as_it_was() {
        let cells = [
            "",
            "\n",
            "%%bash\nls\n",
            "!pip install \\\n  torch",
            "import torch\r\nx = 1\r\n",
            "s = '显存 😀'\n%time f()",
            "?",
            "if x:\n    %time f()\n",
            "# ---- end of notebook cell (culint) ----",
        ];
        let program = Program::new(cells);
        assert_eq!(program.cells_after(&program.text).unwrap(), cells);
        for (cell, text) in cells.iter().enumerate() {
            for offset in (0..=text.len()).filter(|&o| text.is_char_boundary(o)) {
                let at = program.program_offset(cell, offset);
                let back = program.locate(at);
                assert_eq!(back.cell, cell, "{text:?} at {offset}");
                assert!(back.offset <= text.len());
            }
        }
    }

    #[test]
    fn cell_offsets_map_to_program_offsets_and_back() {
        let cells = ["x = 1", "!pip install timm\nmodel = timm.create_model('vit')\n"];
        let program = Program::new(cells);
        let in_cell = cells[1].find("timm.create").unwrap();
        let at = program.program_offset(1, in_cell);
        assert_eq!(&program.text[at..at + 11], "timm.create");
        assert_eq!(program.locate(at), CellOffset { cell: 1, offset: in_cell });
    }

    #[test]
    fn a_rewritten_program_splits_back_into_cells() {
        let cells = ["%matplotlib inline\nimport torch", "for x in data:\n    !nvidia-smi\n    step(x)\n"];
        let program = Program::new(cells);
        assert_eq!(program.cells_after(&program.text).unwrap(), cells);
        let fixed = program.text.replace("step(x)", "step(x.cuda())");
        let after = program.cells_after(&fixed).unwrap();
        assert_eq!(after[0], cells[0]);
        assert_eq!(after[1], "for x in data:\n    !nvidia-smi\n    step(x.cuda())\n");
        assert_eq!(program.cells_after(&program.text.replace(BOUNDARY, "")), None);
        let joined = program.text.replace(&format!("\n{BOUNDARY}"), BOUNDARY);
        assert_eq!(program.cells_after(&joined), None, "the first cell lost its line break");
    }
}
