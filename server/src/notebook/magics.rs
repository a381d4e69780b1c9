//! IPython syntax in a code cell: line magics (`%time`, `%pip`), cell magics (`%%bash`), shell
//! escapes (`!nvidia-smi`, `files = !ls`) and help lines (`torch.cuda?`). None of them is Python,
//! so each such line is masked before the cell is linted: replaced by a `pass` statement at the
//! line's indentation (a blank line would empty an indented block), which keeps every other line
//! where it was. [`Masked::restore`] puts the original lines back into a cell the fixes rewrote.

/// What a masked line reads as. The comment makes the placeholder one no Python source would hold.
pub const PLACEHOLDER: &str = "pass  # IPython line, not linted by culint";

/// Cell magics whose body is Python that IPython runs in the notebook's namespace: only their
/// `%%` line is masked. The body of any other cell magic (`%%bash`, `%%writefile`, `%%html`) is
/// another language, and the whole cell is masked.
const PYTHON_BODY_CELL_MAGICS: &[&str] = &["time", "timeit", "capture", "prun", "debug", "memit", "mprun"];

/// A cell's text with its IPython lines masked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Masked {
    /// The text to lint: the cell with each IPython line replaced by [`PLACEHOLDER`] (after the
    /// indentation it had), every other byte as it was.
    pub text: String,
    /// The lines masked, in order: the indentation the placeholder took, and the line itself
    /// (without its line break).
    lines: Vec<(String, String)>,
}

impl Masked {
    /// Mask the IPython lines of a cell's `source`.
    pub fn of(source: &str) -> Self {
        let mut text = String::with_capacity(source.len());
        let mut lines = Vec::new();
        let mut state = Scan::default();
        // The indentation of the magic a continued (`\`) line belongs to.
        let mut continued: Option<String> = None;
        let whole_cell = whole_cell_magic(source);
        // The line a cell magic may be on: the first, after any comments (Colab's `#@title`
        // form lines come before a `%%time`).
        let magic_line = source.split_inclusive('\n').position(|line| {
            let line = line.trim();
            !line.is_empty() && !line.starts_with('#')
        });
        for (index, line) in source.split_inclusive('\n').enumerate() {
            let (body, ending) = split_ending(line);
            let indentation = &body[..body.len() - body.trim_start().len()];
            let magic_indentation = match continued.take() {
                Some(indentation) => Some(indentation),
                None if whole_cell && magic_line.is_some_and(|at| index >= at) => Some(String::new()),
                None if state.at_statement_start() && is_ipython_line(body, Some(index) == magic_line) => {
                    Some(indentation.to_owned())
                }
                None => None,
            };
            match magic_indentation {
                Some(indentation) => {
                    if body.ends_with('\\') {
                        continued = Some(indentation.clone());
                    }
                    text.push_str(&indentation);
                    text.push_str(PLACEHOLDER);
                    text.push_str(ending);
                    lines.push((indentation, body.to_owned()));
                }
                None => {
                    state.read(body);
                    text.push_str(line);
                }
            }
        }
        Self { text, lines }
    }

    /// Whether any line was masked.
    pub fn is_masked(&self) -> bool {
        !self.lines.is_empty()
    }

    /// Put the masked lines back into `fixed`, a version of [`Masked::text`] that fixes edited.
    /// A placeholder the fixes re-indented takes its magic with it. `None` when the placeholders
    /// are not the ones masked (a fix removed or repeated one): the cell cannot be restored.
    pub fn restore(&self, fixed: &str) -> Option<String> {
        let mut out = String::with_capacity(fixed.len());
        let mut originals = self.lines.iter();
        for line in fixed.split_inclusive('\n') {
            let (body, ending) = split_ending(line);
            let trimmed = body.trim_start();
            if trimmed != PLACEHOLDER {
                out.push_str(line);
                continue;
            }
            let (indentation, original) = originals.next()?;
            let now_indented = &body[..body.len() - trimmed.len()];
            match original.strip_prefix(indentation.as_str()) {
                Some(rest) => {
                    out.push_str(now_indented);
                    out.push_str(rest);
                }
                None => out.push_str(original),
            }
            out.push_str(ending);
        }
        originals.next().is_none().then_some(out)
    }
}

/// A line without its line break, and the line break.
fn split_ending(line: &str) -> (&str, &str) {
    let body = line.strip_suffix('\n').map_or(line, |b| b.strip_suffix('\r').unwrap_or(b));
    (body, &line[body.len()..])
}

/// A cell that starts (after any comments) with a cell magic whose body is not Python.
fn whole_cell_magic(source: &str) -> bool {
    let first = source.lines().map(str::trim).find(|line| !line.is_empty() && !line.starts_with('#'));
    let Some(name) = first.and_then(|line| line.strip_prefix("%%")) else { return false };
    let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    !PYTHON_BODY_CELL_MAGICS.contains(&name.as_str())
}

/// Whether `line`, which starts a statement, is IPython syntax rather than Python.
fn is_ipython_line(line: &str, first_line: bool) -> bool {
    let trimmed = line.trim();
    if trimmed.starts_with("%%") {
        // A cell magic is one only on the cell's first line of code.
        return first_line;
    }
    if trimmed.starts_with(['%', '!', '?']) {
        return true;
    }
    // `obj?`, `obj.attr??` and `torch.*cuda*?` show help: a dotted name, nothing else.
    let asked = trimmed.trim_end_matches('?');
    if asked.len() < trimmed.len()
        && !asked.is_empty()
        && asked.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '*'))
    {
        return true;
    }
    is_magic_assignment(trimmed)
}

/// `files = !ls`, `out = %sx nvidia-smi`, `a, b = %time f()`: names, `=`, then a magic or a
/// shell escape.
fn is_magic_assignment(line: &str) -> bool {
    let Some((targets, value)) = line.split_once('=') else { return false };
    let value = value.trim_start();
    if !value.starts_with(['%', '!']) || value.starts_with("!=") || value.starts_with("%=") {
        return false;
    }
    let targets = targets.trim();
    !targets.is_empty()
        && targets.split(',').all(|target| {
            let target = target.trim();
            !target.is_empty()
                && !target.starts_with(|c: char| c.is_ascii_digit())
                && target.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        })
}

/// Where a line starts, as far as it matters for finding IPython lines: inside a string that
/// spans lines, inside brackets, or after a line that ended in `\` there is no statement start.
#[derive(Default)]
struct Scan {
    /// The closing quotes of the triple-quoted string the text is in.
    in_string: Option<&'static str>,
    /// Open brackets.
    depth: usize,
    /// The last line ended in a backslash.
    continued: bool,
}

impl Scan {
    fn at_statement_start(&self) -> bool {
        self.in_string.is_none() && self.depth == 0 && !self.continued
    }

    /// Follow the state through one line of Python (without its line break).
    fn read(&mut self, line: &str) {
        let bytes = line.as_bytes();
        let mut i = 0;
        let mut in_comment = false;
        while i < bytes.len() {
            if let Some(close) = self.in_string {
                match bytes[i] {
                    b'\\' => i += 2,
                    _ if bytes[i..].starts_with(close.as_bytes()) => {
                        self.in_string = None;
                        i += 3;
                    }
                    _ => i += 1,
                }
                continue;
            }
            match bytes[i] {
                b'#' => {
                    in_comment = true;
                    break;
                }
                quote @ (b'"' | b'\'') => {
                    let triple = if quote == b'"' { "\"\"\"" } else { "'''" };
                    if bytes[i..].starts_with(triple.as_bytes()) {
                        self.in_string = Some(triple);
                        i += 3;
                        continue;
                    }
                    // A one-line string: skip to its closing quote.
                    i += 1;
                    while i < bytes.len() && bytes[i] != quote {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 1;
                }
                b'(' | b'[' | b'{' => {
                    self.depth += 1;
                    i += 1;
                }
                b')' | b']' | b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    i += 1;
                }
                _ => i += 1,
            }
        }
        self.continued = !in_comment && self.in_string.is_none() && line.ends_with('\\');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked_lines(source: &str) -> Vec<usize> {
        Masked::of(source)
            .text
            .lines()
            .enumerate()
            .filter(|(_, line)| line.trim_start() == PLACEHOLDER)
            .map(|(n, _)| n + 1)
            .collect()
    }

    #[test]
    fn masks_line_magics_shell_escapes_and_help() {
        let source = "%matplotlib inline\n!nvidia-smi\nimport torch\ntorch.cuda?\n??torch.ones\nfiles = !ls\nout, err = %sx ls\nx = 1  # why?\ny = a != b\ntorch.*cuda*??\nq = '''Can I train on SageMaker? \n'''\n";
        assert_eq!(masked_lines(source), [1, 2, 4, 5, 6, 7, 10]);
        let masked = Masked::of(source);
        assert_eq!(masked.text.lines().count(), source.lines().count());
        assert!(masked.text.contains("\nimport torch\n"));
    }

    #[test]
    fn masks_inside_blocks_at_the_line_s_indentation() {
        let masked = Masked::of("for step in range(3):\n    !nvidia-smi\n");
        assert_eq!(masked.text, format!("for step in range(3):\n    {PLACEHOLDER}\n"));
    }

    #[test]
    fn leaves_strings_brackets_and_continuations_alone() {
        let source = "doc = \"\"\"\n%d items\n!important\n\"\"\"\nx = [\n    1,\n]\ny = 1 + \\\n    2\n";
        assert!(masked_lines(source).is_empty(), "{}", Masked::of(source).text);
        assert!(masked_lines("s = '%'\n%time f()\n") == [2]);
    }

    #[test]
    fn cell_magics_mask_their_line_or_the_whole_cell() {
        assert_eq!(masked_lines("%%time\nmodel.cuda()\n"), [1]);
        assert_eq!(masked_lines("%%bash\nnvidia-smi\nls -l"), [1, 2, 3]);
        assert_eq!(masked_lines("x = 1\n%%time\n"), Vec::<usize>::new(), "a cell magic only starts a cell");
        assert_eq!(masked_lines("#@title Install\n\n%%time\n!pip install -q timm\nx = 1\n"), [3, 4]);
        assert_eq!(masked_lines("# writes a file\n%%writefile a.py\nx = (\n"), [2, 3], "comments stay as they are");
    }

    #[test]
    fn strings_with_text_beyond_ascii_are_followed_byte_by_byte() {
        let source = "s = \"\"\"🤗 Transformers\nClément \\\"é\" \"\"\"\n!nvidia-smi\nt = '😀\\'ō'\n%time f()\n";
        assert_eq!(masked_lines(source), [3, 5], "{}", Masked::of(source).text);
    }

    #[test]
    fn continued_magics_are_masked_whole() {
        assert_eq!(masked_lines("!pip install \\\n  torch\nimport torch\n"), [1, 2]);
    }

    #[test]
    fn restores_the_masked_lines_even_re_indented() {
        let source = "%load_ext autoreload\nimport torch\n!nvidia-smi";
        let masked = Masked::of(source);
        assert_eq!(masked.restore(&masked.text).as_deref(), Some(source));
        let fixed = masked.text.replace("import torch\n", "import torch\nimport os\n");
        assert_eq!(masked.restore(&fixed).unwrap(), "%load_ext autoreload\nimport torch\nimport os\n!nvidia-smi");
        let indented = format!("if True:\n    {PLACEHOLDER}\nimport torch\n{PLACEHOLDER}");
        assert_eq!(masked.restore(&indented).unwrap(), "if True:\n    %load_ext autoreload\nimport torch\n!nvidia-smi");
        assert_eq!(masked.restore("import torch\n"), None, "a placeholder went missing");
        assert_eq!(masked.restore(&format!("{}\n{PLACEHOLDER}", masked.text)), None, "one too many");
    }
}
