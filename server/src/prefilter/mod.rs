//! Deciding from the raw bytes, before parsing, which rules could fire on a text.
//!
//! Most Python files that mention torch are library code that no rule can flag. Parsing them is
//! what would make `culint check` slow, so each rule names the tokens its findings cannot do
//! without, and the rare rules whose tokens are everywhere (`forward`, `eval`) add a line scan.
//! Files whose raw bytes some rule admits are read again as [`code_view`] gives them, without
//! comments and docstrings, where library code names what it never runs.
//! A prefilter may let through a file the rule then finds clean; it must not turn away a file
//! the rule would flag. One known exception: a loop is a step loop when it calls a helper of
//! another project file that runs `backward()`, and a file whose only sign of training is such a
//! call lacks the `backward` token that the training rules require. `CULINT_NO_PREFILTER=1`
//! switches the prefilter off, and the benchmark checks that the findings are the same either way.

mod code_view;

use std::cell::Cell;
use std::sync::LazyLock;

use memchr::memmem::Finder;

pub use crate::rules::Prefilter;
use crate::rules::{RULES, Rule};
use crate::text::line_start;
pub use crate::text::{is_ascii_name_byte, is_name_byte, is_name_char, starts_like_a_name};

pub use code_view::code_view;

/// A step loop or a Lightning training step needs one of these: a `.backward()` call in the file
/// (in the loop or in a local helper it calls) or a `training_step` method. The rules that flag
/// only what runs once per step require them (see the exception in the module's doc).
pub const STEP_TOKENS: &[&str] = &["backward(", "backward (", "training_step"];

/// `CULINT_NO_PREFILTER=1` lets every file through to every rule.
static DISABLED: LazyLock<bool> =
    LazyLock::new(|| std::env::var_os("CULINT_NO_PREFILTER").is_some_and(|v| !v.is_empty() && v != "0"));

/// Every token of every rule, sorted, each with its searcher.
struct TokenIndex {
    tokens: Vec<&'static str>,
    finders: Vec<Finder<'static>>,
}

static TOKENS: LazyLock<TokenIndex> = LazyLock::new(|| {
    let mut tokens: Vec<&'static str> =
        RULES.iter().flat_map(|r| r.prefilter.all_of.iter().copied().flatten()).copied().collect();
    tokens.sort_unstable();
    tokens.dedup();
    let finders = tokens.iter().map(|t| Finder::new(t.as_bytes())).collect();
    TokenIndex { tokens, finders }
});

/// Which tokens one text holds, each searched for once, when a rule first asks.
///
/// A rule is turned away by its first group without a token present, so most tokens are never
/// searched for: a file without `empty_cache` is never searched for the tokens that would
/// matter only next to it. One search stops at the first occurrence, and one that finds nothing
/// runs through the text at memory speed. Searching every token in one pass costs more: the
/// common ones (`self`, `cuda`, `%`) match thousands of times in a file, and a one-pass search
/// reports each match.
pub struct PresentTokens<'t> {
    text: &'t [u8],
    found: Vec<Cell<Option<bool>>>,
}

impl<'t> PresentTokens<'t> {
    pub fn of(text: &'t str) -> Self {
        Self { text: text.as_bytes(), found: vec![Cell::new(None); TOKENS.tokens.len()] }
    }

    fn contains(&self, token: &str) -> bool {
        let index = &*TOKENS;
        let Ok(i) = index.tokens.binary_search(&token) else { return false };
        let slot = &self.found[i];
        slot.get().unwrap_or_else(|| {
            let present = index.finders[i].find(self.text).is_some();
            slot.set(Some(present));
            present
        })
    }

    /// Whether `rule` could fire on the text: its tokens are there and its scan lets it through.
    pub fn admits(&self, rule: &Rule, text: &str) -> bool {
        self.has_tokens_for(rule) && (*DISABLED || rule.prefilter.scan.is_none_or(|scan| scan(text)))
    }

    /// Whether the text has the tokens `rule` needs; its scan is not run.
    pub fn has_tokens_for(&self, rule: &Rule) -> bool {
        *DISABLED || rule.prefilter.all_of.iter().all(|group| group.iter().any(|t| self.contains(t)))
    }
}

/// A function a text defines (`def name(` or `async def name(`), found by a line scan; a `def`
/// inside a string may show up too, which only makes the prefilter looser.
pub struct DefinedFunction<'a> {
    pub name: &'a str,
    /// The start of the `def` line.
    line_start: usize,
    /// Where `def` is.
    def_at: usize,
}

impl DefinedFunction<'_> {
    /// From the `def` line to the next `def`, `class` or decorator indented no deeper: the
    /// function's body and possibly more, never less (a string's lines are not told apart).
    /// Read on demand: a scan usually wants the spans of a few functions of a file.
    pub fn span(&self, text: &str) -> std::ops::Range<usize> {
        self.line_start..body_end(text, self.def_at, indentation(&text[self.line_start..]))
    }
}

pub fn defined_functions(text: &str) -> impl Iterator<Item = DefinedFunction<'_>> {
    memchr::memmem::find_iter(text.as_bytes(), b"def").filter_map(move |at| {
        let line_start = line_start(text, at);
        let code = text[line_start..].trim_start_matches([' ', '\t']);
        let name = def_name(code).filter(|name| !name.is_empty())?;
        // Only the `def` that opens the line, so a line is found once.
        let def_at = code.strip_prefix("async").map_or(code, |rest| rest.trim_start_matches([' ', '\t']));
        (text.len() - def_at.len() == at).then_some(DefinedFunction { name, line_start, def_at: at })
    })
}

/// Where `word` occurs in `text` as a whole word: no name character right before or after it.
pub fn whole_words<'t>(text: &'t str, word: &'t str) -> impl Iterator<Item = usize> + 't {
    memchr::memmem::find_iter(text.as_bytes(), word.as_bytes())
        .filter(move |&at| !text[..at].ends_with(is_name_char) && !text[at + word.len()..].starts_with(is_name_char))
}

/// Whether the keyword `keyword`, as a whole word, comes right before `at` with only blanks,
/// line continuations or line breaks between (`def forward`, `import torch as th`).
pub fn follows_keyword(text: &str, keyword: &str, at: usize) -> bool {
    let before = text[..at].trim_end_matches([' ', '\t', '\\', '\r', '\n']);
    before.strip_suffix(keyword).is_some_and(|b| !b.ends_with(is_name_char))
}

/// Whether `text` could define a function named `name`: `def` and the name as whole words. A
/// text that fails this defines no such function; [`defined_functions`] reads only one-line
/// headers.
pub fn could_define(text: &str, name: &str) -> bool {
    whole_words(text, name).any(|at| follows_keyword(text, "def", at))
}

/// Where the lines after `from` stop belonging to a block indented deeper than `indent`: the
/// next `def`, `class` or decorator line indented no deeper that starts a logical line. A line
/// inside brackets, a string or after a backslash keeps the block going whatever its indentation
/// (a docstring's `def` example at column 0, `@` continuing a product in parentheses). A literal
/// the scan cannot close is read on as code, so a mistake only makes the span longer or leaves it
/// as a plain line scan would.
fn body_end(text: &str, from: usize, indent: usize) -> usize {
    let bytes = text.as_bytes();
    // Open brackets: inside them a line break does not end the statement.
    let mut depth = 0usize;
    let mut at = from;
    while at < bytes.len() {
        match bytes[at] {
            b'\n' if depth == 0 && ends_block(&text[at + 1..], indent) => return at + 1,
            // A line continuation, or an escape outside a string: the next line goes on.
            b'\\' if bytes.get(at + 1) == Some(&b'\r') => at += 2,
            b'\\' => at += 1,
            b'#' => {
                at = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            quote @ (b'"' | b'\'') => {
                if let Some(end) = string_end(bytes, at, quote) {
                    at = end;
                    continue;
                }
            }
            _ => {}
        }
        at += 1;
    }
    text.len()
}

/// Whether a line that starts a logical line ends a block indented deeper than `indent`.
fn ends_block(line: &str, indent: usize) -> bool {
    let code = line.trim_start_matches([' ', '\t']);
    line.len() - code.len() <= indent
        && (code.starts_with('@') || def_name(code).is_some() || starts_with_word(code, "class"))
}

/// Whether a line in `range` starts a `for` or `while` statement (or what looks like one in a
/// string, which only makes the prefilter looser).
pub fn has_loop_line(text: &str, range: std::ops::Range<usize>) -> bool {
    text[range].lines().any(|line| {
        let code = line.trim_start_matches([' ', '\t']);
        let code =
            code.strip_prefix("async").filter(|rest| rest.starts_with([' ', '\t'])).map_or(code, str::trim_start);
        starts_with_word(code, "for") || starts_with_word(code, "while")
    })
}

/// Whether `text` could hold a call that [`crate::semantic::Model::calls_a_model`] takes for a
/// model call: a name containing a model-like fragment (`model`, `encoder`, ...) and not `loss`,
/// followed by `(`, or by `.generate(` or `.forward(`. Names are read as whole tokens, so
/// `self.text_encoder(x)` and `model.generate(ids)` count; strings and comments may count too,
/// which only lets more through. A comment between the name and what follows counts as a call.
pub fn could_call_a_model(text: &str) -> bool {
    let bytes = text.as_bytes();
    let skip_space = |mut at: usize| {
        while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\r' | b'\n' | b'\\') {
            at += 1;
        }
        at
    };
    let opens_call = |at: usize| matches!(bytes.get(skip_space(at)), Some(b'(' | b'#'));
    let mut at = 0;
    while at < bytes.len() {
        if !is_name_byte(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && is_name_byte(bytes[at]) {
            at += 1;
        }
        if !crate::semantic::names::is_model_name(&text[start..at]) {
            continue;
        }
        let next = skip_space(at);
        let method_call = bytes.get(next) == Some(&b'.') && {
            let method = skip_space(next + 1);
            ["generate", "forward"].iter().any(|m| {
                text[method..].starts_with(m)
                    && !bytes.get(method + m.len()).copied().is_some_and(is_name_byte)
                    && opens_call(method + m.len())
            })
        };
        if opens_call(at) || method_call {
            return true;
        }
    }
    false
}

/// Whether the call whose argument list opens at `open` (the byte of its `(`) passes `keyword`
/// as a keyword argument of its own (`keyword=`, not inside a nested call, a string or a
/// comment). `None` when the argument list does not close: the caller cannot tell.
pub fn passes_keyword(text: &str, open: usize, keyword: &str) -> Option<bool> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = open;
    while at < bytes.len() {
        match bytes[at] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(false);
                }
            }
            b'#' => {
                at = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
                continue;
            }
            quote @ (b'"' | b'\'') => {
                at = string_end(bytes, at, quote)?;
                continue;
            }
            _ if depth == 1
                && bytes[at..].starts_with(keyword.as_bytes())
                && !bytes[at - 1].is_ascii_alphanumeric()
                && bytes[at - 1] != b'_' =>
            {
                let rest = text[at + keyword.len()..].trim_start_matches([' ', '\t', '\r', '\n', '\\']);
                if rest.starts_with('=') && !rest.starts_with("==") {
                    return Some(true);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The byte after the string literal that opens with `quote` at `start` (a triple quote if three
/// follow); `None` if it never closes.
pub fn string_end(bytes: &[u8], start: usize, quote: u8) -> Option<usize> {
    let triple = bytes[start..].starts_with(&[quote; 3]);
    let delimiter = if triple { 3 } else { 1 };
    let mut at = start + delimiter;
    while at < bytes.len() {
        // Jump to the next byte that can end the string or escape one: strings (docstrings
        // above all) are much of a library's text.
        let rest = &bytes[at..];
        let next =
            if triple { memchr::memchr2(b'\\', quote, rest) } else { memchr::memchr3(b'\\', b'\n', quote, rest) };
        at += next?;
        match bytes[at] {
            b'\\' => at += 2,
            b'\n' => return None,
            _ if bytes[at..].starts_with(&[quote; 3][..delimiter]) => return Some(at + delimiter),
            _ => at += 1,
        }
    }
    None
}

/// Where a line sits, as far as a backwards scan of indentation can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enclosing<'a> {
    /// Directly in the body of the function with this name.
    Function(&'a str),
    /// In a class body or at module level, outside any function.
    NoFunction,
    /// The scan met a line it cannot place (a string's continuation, say): assume anything.
    Unknown,
}

/// Whether a line of code starts with a keyword that heads a compound statement other than
/// `def` and `class`. Read as the line's first word, once, rather than trying each keyword: the
/// scans ask it of every line they pass.
fn starts_a_compound_statement(code: &str) -> bool {
    matches!(
        first_word(code),
        "if" | "elif" | "else" | "for" | "while" | "with" | "try" | "except" | "finally" | "async" | "match" | "case"
    )
}

/// The name a line of code starts with; empty when it starts with anything else.
fn first_word(code: &str) -> &str {
    &code[..code.find(|c: char| !is_name_char(c)).unwrap_or(code.len())]
}

/// The function whose body holds the statement on the line starting at `line_start`. Walks back
/// over lines, following the indentation outwards, and gives up ([`Enclosing::Unknown`]) at
/// anything that is not a plain block header.
pub fn enclosing_function(text: &str, line_start: usize) -> Enclosing<'_> {
    EnclosingFunctions::new(text).of(line_start)
}

/// [`enclosing_function`] of many lines of one text, for a scan that asks of them in order.
/// The walk back from a line ends where the walk from the line asked before began, if it would
/// go on from there as that one did, and takes that one's answer: the stores of one `__init__`
/// then cost a line or two each, rather than the whole way back to the `def` each.
pub struct EnclosingFunctions<'t> {
    text: &'t str,
    /// The last walk: the line it began at, the indentation it began with, and its answer.
    last: Option<(usize, usize, Enclosing<'t>)>,
}

impl<'t> EnclosingFunctions<'t> {
    pub fn new(text: &'t str) -> Self {
        Self { text, last: None }
    }

    /// [`enclosing_function`] of the line starting at `line_start`.
    pub fn of(&mut self, line_start: usize) -> Enclosing<'t> {
        let text = self.text;
        let own_line = text[line_start..].trim_start_matches([' ', '\t']);
        // `def forward(self, x): self.h = x` and `if x: self.h = x` put the statement on the
        // header's own line.
        if def_name(own_line).is_some() || first_word(own_line) == "class" || starts_a_compound_statement(own_line) {
            return Enclosing::Unknown;
        }
        let indent = indentation(&text[line_start..]);
        let answer = self.walk_back(line_start, indent);
        self.last = Some((line_start, indent, answer));
        answer
    }

    fn walk_back(&self, line_start: usize, mut threshold: usize) -> Enclosing<'t> {
        let text = self.text;
        // The indentation of a multi-line header whose closing line (`) -> None:`) was just passed.
        let mut open_header: Option<usize> = None;
        let mut end = line_start;
        // Whether the line being read opens the multi-line header that `open_header` closed.
        let mut opens_header;
        while end > 0 {
            // From here on this walk is the last one: the same place, in the same state.
            if let Some((began_at, began_with, answer)) = self.last
                && end == began_at
                && threshold == began_with
                && open_header.is_none()
            {
                return answer;
            }
            let start = crate::text::line_start(text, end - 1);
            let line = &text[start..end - 1];
            end = start;
            let code = line.trim_start_matches([' ', '\t']);
            if code.is_empty() || code.starts_with('#') {
                continue;
            }
            let indent = line.len() - code.len();
            opens_header = false;
            match open_header {
                Some(header) if indent > header => continue,
                Some(header) if indent < header => return Enclosing::Unknown,
                Some(_) => {
                    open_header = None;
                    opens_header = true;
                }
                None if indent >= threshold => continue,
                None => {}
            }
            if let Some(name) = def_name(code) {
                return Enclosing::Function(name);
            }
            if starts_with_word(code, "class") {
                return Enclosing::NoFunction;
            }
            let header = code.split('#').next().unwrap_or(code).trim_end();
            // `if (` opens a header that a later `):` line closes.
            if (header.ends_with(':') || opens_header) && starts_a_compound_statement(code) {
                threshold = indent;
            } else if header.ends_with(':') && code.starts_with([')', ']']) {
                open_header = Some(indent);
            } else {
                return Enclosing::Unknown;
            }
        }
        Enclosing::NoFunction
    }
}

/// The name a `def` line defines.
fn def_name(code: &str) -> Option<&str> {
    let code = code.strip_prefix("async").filter(|rest| rest.starts_with([' ', '\t'])).unwrap_or(code);
    let rest = code.trim_start_matches([' ', '\t']).strip_prefix("def")?;
    let name = rest.trim_start_matches([' ', '\t']);
    if name.len() == rest.len() {
        return None;
    }
    let end = name.find(|c: char| !is_name_char(c)).unwrap_or(name.len());
    Some(&name[..end])
}

/// Whether `text` could hold a `del` statement: the keyword as a whole word, not an attribute.
pub fn could_delete(text: &str) -> bool {
    whole_words(text, "del").any(|at| !text[..at].ends_with('.'))
}

pub fn starts_with_word(code: &str, word: &str) -> bool {
    code.strip_prefix(word).is_some_and(|rest| !rest.starts_with(is_name_char))
}

pub fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_call_is_a_model_like_name_called() {
        for call in [
            "out = model(x)",
            "out = self.text_encoder (x)",
            "ids = model.generate(ids)",
            "h = net . forward(x)",
            "y = Backbone(\n  x)",
            "y = model \\\n (x)",
            "y = model  # why\n",
        ] {
            assert!(could_call_a_model(call), "{call}");
        }
        for not_a_call in [
            "model = build()",
            "loss = model_loss(x)",
            "n = len(models)",
            "x = model.generated(ids)",
            "x = model.forward_hooks",
            "optimizer.step()",
            "x = remodel",
        ] {
            assert!(!could_call_a_model(not_a_call), "{not_a_call}");
        }
    }

    fn enclosing_of(text: &str, needle: &str) -> Enclosing<'static> {
        let text: &'static str = Box::leak(text.to_owned().into_boxed_str());
        enclosing_function(text, line_start(text, text.find(needle).expect("needle")))
    }

    #[test]
    fn finds_the_function_through_nested_blocks_and_multi_line_signatures() {
        let text = "class M(nn.Module):\n    def forward(\n        self, x\n    ) -> Tensor:\n        def helper():\n            pass\n        if x:\n            # note\n\n            self.h = x\n";
        assert_eq!(enclosing_of(text, "self.h"), Enclosing::Function("forward"));
        assert_eq!(enclosing_of(text, "pass"), Enclosing::Function("helper"));
    }

    #[test]
    fn class_bodies_and_module_level_are_outside_functions() {
        assert_eq!(enclosing_of("class A:\n    x = 1\n", "x = 1"), Enclosing::NoFunction);
        assert_eq!(enclosing_of("import torch\nfor x in y:\n    z = x\n", "z = x"), Enclosing::NoFunction);
    }

    #[test]
    fn multi_line_block_headers_are_followed_out() {
        let text = "def forward(self, x):\n    if (\n        x is not None\n        and x.ndim > 1\n    ):\n        self.h = x\n";
        assert_eq!(enclosing_of(text, "self.h"), Enclosing::Function("forward"));
        let text = "class A:\n    x = 1\n    with (\n        open(f) as g,\n    ):\n        y = 2\n";
        assert_eq!(enclosing_of(text, "y = 2"), Enclosing::NoFunction);
        // The line the closing `):` leads back to must open a block.
        let text = "def forward(self, x):\n    y = (\n        x\n    ):\n        self.h = x\n";
        assert_eq!(enclosing_of(text, "self.h"), Enclosing::Unknown);
    }

    /// Asked of lines in order, as a scan meets them, and out of order, the walks that end where
    /// the last began answer as a walk of their own would. Every line of every fixture and example,
    /// of the module-level script, whose lines are in no function, and of a script whose blocks
    /// open with multi-line headers.
    #[test]
    fn walks_that_end_where_the_last_began_answer_as_their_own() {
        let files = crate::test_support::python_files();
        let texts = files.iter().map(|path| std::fs::read_to_string(path).expect("fixture"));
        // A walk from the body of a multi-line header passes the lines inside the header in
        // another state than a walk from one of them.
        let headers = "class M(nn.Module):\n    def forward(\n        self, x\n    ) -> Tensor:\n        if (\n            x is not None\n            and x.ndim > 1\n        ):\n            self.h = x\n        with (\n            open(f) as g,\n        ):\n            self.g = g\n        self.y = y\n";
        for text in texts.chain([crate::test_support::MODULE_LEVEL.to_owned(), headers.to_owned()]) {
            let lines: Vec<usize> = std::iter::once(0)
                .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|at| at + 1))
                .filter(|at| *at < text.len())
                .collect();
            let backwards: Vec<usize> = lines.iter().rev().copied().collect();
            // Each line twice in a row, then in turns with a line far from it.
            let twice: Vec<usize> = lines.iter().flat_map(|at| [*at, *at]).collect();
            let apart: Vec<usize> = lines.iter().zip(backwards.iter()).flat_map(|(a, b)| [*a, *b]).collect();
            for order in [&lines, &backwards, &twice, &apart] {
                let mut scan = EnclosingFunctions::new(&text);
                for &at in order {
                    assert_eq!(scan.of(at), enclosing_function(&text, at), "the line at {at} of:\n{text}");
                }
            }
        }
    }

    #[test]
    fn a_string_continuation_makes_the_answer_unknown() {
        let text = "def forward(self, x):\n    y = f(\"\"\"\ntext\n\"\"\")\n    self.y = y\n";
        assert_eq!(enclosing_of(text, "self.y"), Enclosing::Unknown);
    }

    #[test]
    fn keywords_count_only_in_the_calls_own_argument_list() {
        let passes = |text: &str| passes_keyword(text, text.find('(').expect("a call"), "map_location");
        assert_eq!(passes("load(f, map_location='cpu')"), Some(true));
        assert_eq!(passes("load(f,\n     map_location =\n 'cpu')"), Some(true));
        assert_eq!(passes("load(f, **{'map_location': 'cpu'})"), Some(false));
        assert_eq!(passes("load(open(f, map_location=1))"), Some(false), "a nested call's keyword");
        assert_eq!(passes("load('map_location=cpu', f)"), Some(false), "inside a string");
        assert_eq!(passes("load(\"\"\"a \" map_location=\"\"\", f)"), Some(false), "inside a triple-quoted string");
        assert_eq!(passes("load(f,  # map_location=cpu\n)"), Some(false), "inside a comment");
        assert_eq!(passes("load(f, my_map_location=1)"), Some(false), "a longer name");
        assert_eq!(passes("load(f, map_location == 1)"), Some(false), "a comparison");
        assert_eq!(passes("load('注释 😀', é=1, map_location=1)"), Some(true), "after multi-byte characters");
        assert_eq!(passes("load(f, map_location"), None, "an argument list that never closes");
        assert_eq!(passes("load('unterminated, map_location=1)"), None);
    }

    #[test]
    fn defined_functions_include_async_and_skip_other_words() {
        let text = "def evaluate(m):\n    pass\nasync  def infer():\n    undefined = 1\nx = 'def'\n";
        assert_eq!(defined_functions(text).map(|f| f.name).collect::<Vec<_>>(), vec!["evaluate", "infer"]);
    }

    #[test]
    fn a_definition_may_break_its_line_between_def_and_the_name() {
        for text in ["def forward(self):", "async def  forward(", "def \\\n    forward(self):", "x = 1;def\tforward():"]
        {
            assert!(could_define(text, "forward"), "{text}");
        }
        for text in ["self.forward(x)", "undef forward", "def forward_hook(m):", "# forward\ndef f():"] {
            assert!(!could_define(text, "forward"), "{text}");
        }
    }

    #[test]
    fn a_function_span_covers_its_body_and_nested_definitions() {
        let text = "class A:\n    def evaluate(self):\n        def inner():\n            pass\n        for x in y:\n            pass\n\n    @property\n    def name(self):\n        while True:\n            pass\n";
        let functions: Vec<_> = defined_functions(text).collect();
        let evaluate = functions[0].span(text);
        assert_eq!(functions[0].name, "evaluate");
        assert!(text[evaluate.clone()].ends_with("            pass\n\n"), "{:?}", &text[evaluate.clone()]);
        assert!(has_loop_line(text, evaluate));
        // A superset, never less: `inner`'s span runs on over the loop of `evaluate` after it.
        assert!(has_loop_line(text, functions[1].span(text)));
        assert!(has_loop_line(text, functions[2].span(text)));
    }

    /// Lines inside a string, brackets or after a backslash never end a span, whatever they
    /// start with: the loop after them stays in the function's span.
    #[test]
    fn a_function_span_runs_on_over_continued_lines() {
        let bodies = [
            "    doc = \"\"\"\ndef example():\n    pass\n\"\"\"\n",
            "    doc = r'''x\n@decorated\nclass A: pass'''\n",
            "    y = (a\n@ b)\n",
            "    y = [\n  1,\nclass_ ]\n",
            "    y = a + \\\n@b\n",
            "    s = \"one \\\ndef f(): \\\n\"\n",
            "    s = '\"\"\"'  # not a triple quote (\n    t = \"(\"\n",
        ];
        for body in bodies {
            let text = format!(
                "def evaluate(model, data):\n{body}    for x in data:\n        model(x)\ndef after():\n    pass\n"
            );
            let functions: Vec<_> = defined_functions(&text).collect();
            let span = functions[0].span(&text);
            assert!(has_loop_line(&text, span.clone()), "{text}");
            // It still ends where the next function starts.
            assert!(text[span].ends_with("        model(x)\n"), "{text}");
        }
        // A header that breaks its line inside the parentheses.
        let text = "def evaluate(\n    model,\n@ data):\n    for x in data:\n        model(x)\n";
        assert!(has_loop_line(text, defined_functions(text).next().unwrap().span(text)));
    }

    #[test]
    fn a_del_statement_is_a_whole_word_not_an_attribute() {
        for text in ["del x", "    del(x)", "if a: del a[0]", "x = 1; del x", "del\\\n  x"] {
            assert!(could_delete(text), "{text}");
        }
        for text in ["model = x", "self.delta = 1", "x.del_ = 1", "delete(x)", "obj.del"] {
            assert!(!could_delete(text), "{text}");
        }
    }

    #[test]
    fn a_rule_needs_a_token_of_each_group_and_the_search_stops_at_the_first_missing_group() {
        let rule = RULES.iter().find(|r| r.code == "CUL201").expect("CUL201");
        let admits = |text: &str| PresentTokens::of(text).has_tokens_for(rule);
        assert!(admits("torch.cuda.empty_cache()\nloss.backward()\n"));
        assert!(admits("def training_step(self, b):\n    torch.cuda.empty_cache()\n"));
        assert!(!admits("torch.cuda.empty_cache()\n"), "no step");
        assert!(!admits("loss.backward()\n"), "no empty_cache");
        let tokens = PresentTokens::of("loss.backward()\n");
        assert!(!tokens.has_tokens_for(rule));
        let searched: Vec<&str> =
            TOKENS.tokens.iter().zip(&tokens.found).filter(|(_, f)| f.get().is_some()).map(|(t, _)| *t).collect();
        assert_eq!(searched, vec!["empty_cache"], "the step tokens were searched for after empty_cache was missing");
    }
}
