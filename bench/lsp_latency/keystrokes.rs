//! The language server's work per keystroke, in-process: the keystrokes of `bench.py`, applied to
//! an open buffer, reparsed and linted as `culint server` does, then converted and framed as it
//! publishes them. No protocol, no client: what is left when the transport is taken away, and a
//! run that callgrind can count instructions of.
//!
//! Usage:
//!   python3 bench/lsp_latency/corpus.py 10000 > /tmp/train.py   # or --module-level, for a script without functions
//!   cargo run --release --example keystrokes -- /tmp/train.py [--edits N] [--idle MS] [--anywhere | --in-names | --in-strings] [--verify] [--slowest N]
//!   cargo run --release --example keystrokes -- /tmp/train.py --sweep STEP
//!
//! `--anywhere` types where `bench.py --anywhere` does: at the end of any line outside strings and
//! comments, not only in training loops. `--in-names` types `_tmp2` at the end of the name that
//! starts a training loop's line (`loss` becomes `loss_tmp2` a character at a time, and back), the
//! commonest keystroke of real typing, which `bench.py` does not make. `--in-strings` types `_tmp2`
//! after the first word of a string's text (`"step` in `print(f"step {step} ...")`), in lines with
//! no backslash or comment. `--slowest N` lists the N slowest keystrokes: where they
//! typed what, and each phase's time. `--verify` also lints each keystroke's text from scratch and stops at the first difference
//! from the lint of the reparsed tree. `--idle MS` sleeps that long before each keystroke, as the server
//! waits while its client decodes a publish and types the next key: back to back, a keystroke
//! runs on warm caches and cores that a server rarely has (BENCHMARKS.md). `--sweep STEP` types
//! both fragments at every STEP-th line outside strings and comments, over the whole file, and
//! times only the edit and reparse: the rare keystroke whose reparse goes wrong shows there, where
//! a sample of a thousand may miss it. Instruction counts: run `target/release/examples/keystrokes` under
//! `valgrind --tool=callgrind` with `--edits 20` and `--edits 60` and divide the difference by
//! 40, which leaves out the opening lint.

use std::path::Path;
use std::time::{Duration, Instant};

use culint::document::Document;
use culint::lint::{LintContext, LintSettings, lint};
use culint::lsp::diagnostics::publish_frame;
use culint::lsp::position::PositionEncoding;
use culint::lsp::session::OpenDocument;
use culint::parse::parse;
use culint::prefilter::is_ascii_name_byte;
use culint::project::ProjectIndex;
use culint::text::TextRange;
use tower_lsp_server::ls_types::Uri;

/// One keystroke: a byte range of the text as it is before the keystroke, and what replaces it.
struct Keystroke {
    range: TextRange,
    text: &'static str,
    /// It types or deletes a character after a comment's `#`.
    in_comment: bool,
}

/// Where the keystrokes type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// At the end of a training loop's `loss = `, `running += ` or `logits = ` line, as `bench.py`.
    LoopLineEnds,
    /// At the end of any line outside strings and comments, blank lines included (`--anywhere`).
    AnyLineEnds,
    /// At the end of the name that starts a training loop's line (`--in-names`).
    LoopLineNames,
    /// After the first word of a string's text (`--in-strings`).
    StringWords,
}

/// Where `--in-strings` types in `line`: after the first word of the text of its first string
/// that starts with a letter; `None` in a line with a backslash or a comment, or no such string.
fn end_of_string_word(line: &str) -> Option<usize> {
    if line.contains(['\\', '#']) {
        return None;
    }
    let quote = line.find('"')?;
    let word = line[quote + 1..].bytes().take_while(u8::is_ascii_alphabetic).count();
    (word > 0).then_some(quote + 1 + word)
}

/// The keystrokes of `bench.py`'s `edits()`: type a comment or ` * 2` at each `place`, then
/// delete it again, cycling over such places through the file; at [`Place::LoopLineNames`],
/// `_tmp2` instead. Each cycle leaves the text as it found it, so offsets into the original text
/// stay right. With `sweep`, at every `sweep`-th place instead, once, with each fragment: a run
/// over the whole file rather than a sample of it.
fn keystrokes(text: &str, count: usize, place: Place, sweep: Option<usize>) -> Vec<Keystroke> {
    let mut line_starts = vec![0];
    line_starts.extend(text.match_indices('\n').map(|(at, _)| at + 1));
    let lines: Vec<&str> = text.split('\n').collect();
    let in_a_loop = |line: &str| ["loss = ", "running += ", "logits = "].iter().any(|p| line.trim().starts_with(p));
    let outside_strings_and_comments = |line: &str| !line.contains(['"', '\'', '#']);
    let targets: Vec<usize> = (0..lines.len() - 1)
        .filter(|&i| match place {
            Place::AnyLineEnds => outside_strings_and_comments(lines[i]),
            Place::LoopLineEnds | Place::LoopLineNames => in_a_loop(lines[i]),
            Place::StringWords => end_of_string_word(lines[i]).is_some(),
        })
        .collect();
    if targets.is_empty() {
        if place == Place::AnyLineEnds {
            eprintln!("keystrokes: the script has no line outside strings and comments to type at");
        } else if place == Place::StringWords {
            eprintln!(
                "keystrokes: the script has no string that starts with a word, in a line without a backslash or comment"
            );
        } else {
            eprintln!("keystrokes: the script has no `loss = `, `running += ` or `logits = ` lines to type at");
        }
        std::process::exit(2);
    }
    let fragments: &[&'static str] =
        if matches!(place, Place::LoopLineNames | Place::StringWords) { &["_tmp2"] } else { &["  # warm up", " * 2"] };
    // Where to type what: each line once with each fragment, or cycling over them for enough
    // keystrokes (a cycle types and deletes one fragment).
    let fewest_per_cycle = fragments.iter().map(|f| 2 * f.len()).min().unwrap_or(1);
    let places: Vec<(usize, &str)> = match sweep {
        Some(step) => {
            targets.iter().step_by(step).flat_map(|&line| fragments.iter().map(move |&f| (line, f))).collect()
        }
        None => (0..count.div_ceil(fewest_per_cycle))
            .map(|cycle| (targets[(cycle * 97) % targets.len()], fragments[cycle % fragments.len()]))
            .collect(),
    };
    let mut produced = Vec::with_capacity(count + 16);
    for (line, fragment) in places {
        let end_of_line = match place {
            Place::LoopLineNames => {
                let code = lines[line].trim_start();
                let name = code.bytes().take_while(|&b| is_ascii_name_byte(b)).count();
                line_starts[line] + lines[line].len() - code.len() + name
            }
            Place::StringWords => line_starts[line] + end_of_string_word(lines[line]).expect("a target line"),
            Place::LoopLineEnds | Place::AnyLineEnds => line_starts[line] + lines[line].len(),
        };
        let in_comment = |i: usize| fragment[..i].contains('#');
        for i in 0..fragment.len() {
            let range = TextRange::empty(end_of_line + i);
            produced.push(Keystroke { range, text: &fragment[i..=i], in_comment: in_comment(i) });
        }
        for i in (0..fragment.len()).rev() {
            let range = TextRange::new(end_of_line + i, end_of_line + i + 1);
            produced.push(Keystroke { range, text: "", in_comment: in_comment(i) });
        }
    }
    if sweep.is_none() {
        produced.truncate(count);
    }
    produced
}

/// Times of one phase over all keystrokes.
#[derive(Default)]
struct Phase(Vec<Duration>);

impl Phase {
    fn percentile(&self, share: f64) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort();
        let at = ((sorted.len() - 1) as f64 * share).round() as usize;
        sorted[at].as_secs_f64() * 1e3
    }

    fn report(&self, name: &str) {
        let (p50, p90, p99) = (self.percentile(0.5), self.percentile(0.9), self.percentile(0.99));
        println!("{name:<32} p50 {p50:7.2} ms   p90 {p90:7.2} ms   p99 {p99:7.2} ms");
    }

    /// The rarest and slowest samples, which a sweep over a whole file is for.
    fn report_tail(&self) {
        let (p999, max) = (self.percentile(0.999), self.percentile(1.0));
        let over = self.0.iter().filter(|t| t.as_secs_f64() > 5e-3).count();
        println!("{:<32} p99.9 {p999:5.2} ms   max {max:7.2} ms   {over} of {} over 5 ms", "", self.0.len());
    }
}

fn main() {
    let mut path = None;
    let mut count = 1000;
    let mut verify = false;
    let mut place = None;
    let mut choose = |chosen: Place| {
        if place.is_some_and(|place| place != chosen) {
            eprintln!(
                "keystrokes: --anywhere, --in-names, --in-strings and --sweep type in different places; give one"
            );
            std::process::exit(2);
        }
        place = Some(chosen);
    };
    let mut sweep = None;
    let mut idle = Duration::ZERO;
    let mut slowest = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--edits" => {
                count = args.next().and_then(|n| n.parse().ok()).filter(|n| *n > 0).unwrap_or_else(|| {
                    eprintln!("--edits takes a positive number");
                    std::process::exit(2)
                })
            }
            "--verify" => verify = true,
            "--slowest" => {
                slowest = args.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| {
                    eprintln!("--slowest takes a number of keystrokes");
                    std::process::exit(2)
                })
            }
            "--anywhere" => choose(Place::AnyLineEnds),
            "--in-names" => choose(Place::LoopLineNames),
            "--in-strings" => choose(Place::StringWords),
            "--sweep" => {
                choose(Place::AnyLineEnds);
                sweep = Some(args.next().and_then(|n| n.parse().ok()).filter(|n| *n > 0).unwrap_or_else(|| {
                    eprintln!("--sweep takes a positive number of lines");
                    std::process::exit(2)
                }))
            }
            "--idle" => {
                let millis = args.next().and_then(|n| n.parse::<f64>().ok()).filter(|n| *n >= 0.0 && n.is_finite());
                idle = Duration::from_secs_f64(
                    millis.unwrap_or_else(|| {
                        eprintln!("--idle takes a number of milliseconds");
                        std::process::exit(2)
                    }) / 1e3,
                );
            }
            _ => path = Some(arg),
        }
    }
    let place = place.unwrap_or(Place::LoopLineEnds);
    let Some(path) = path else {
        eprintln!(
            "usage: keystrokes SCRIPT [--edits N] [--idle MS] [--anywhere | --in-names | --in-strings] [--verify] [--slowest N] [--sweep STEP] (see the top of bench/lsp_latency/keystrokes.rs)"
        );
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        eprintln!("keystrokes: cannot read {path}: {error}");
        std::process::exit(2)
    });
    let settings = LintSettings::default();
    // As the server lints a buffer: with its path, in a project whose other files calls may reach.
    let project = ProjectIndex::new();
    let context =
        LintContext { path: Some(Path::new(&path)), project: Some(&project), code_kind: None, preview: false };
    let uri: Uri = "file:///bench/train.py".parse().expect("a valid URI");

    // As the server opens a buffer: its first lint parses the text and hands the tree to the
    // buffer.
    let mut buffer = OpenDocument::new(Document::new(&text, 1), None);
    let opened = buffer.tree().clone();
    let opening = lint(buffer.document().text(), &opened, context, &settings);
    println!("{path}: {} lines, {} diagnostics when opened", text.lines().count(), opening.len());

    if sweep.is_some() {
        let mut edit = Phase::default();
        let keystrokes = keystrokes(&text, count, place, sweep);
        for keystroke in &keystrokes {
            let started = Instant::now();
            buffer.edit(keystroke.range, keystroke.text);
            buffer.reparse();
            edit.0.push(started.elapsed());
        }
        assert_eq!(buffer.document().text(), text, "each fragment typed is deleted again");
        println!("{} keystrokes over the whole file, each reparsed and not linted", keystrokes.len());
        edit.report("edit and reparse");
        edit.report_tail();
        return;
    }

    let (mut edit, mut linting, mut framing, mut total) =
        (Phase::default(), Phase::default(), Phase::default(), Phase::default());
    // The keystrokes that type code or blank space, apart: those inside a comment need no
    // reparse, and those left set the tail.
    let mut in_code = Phase::default();
    let mut published_bytes = 0;
    let keystrokes = keystrokes(&text, count, place, None);
    for (n, keystroke) in keystrokes.iter().enumerate() {
        let version = n as i32 + 2;
        if !idle.is_zero() {
            std::thread::sleep(idle);
        }
        let started = Instant::now();
        buffer.edit(keystroke.range, keystroke.text);
        buffer.reparse();
        buffer.set_version(version);
        let tree = buffer.tree().clone();
        let edited = Instant::now();
        let current = buffer.document().shared_text();
        let mapper = buffer.positions(PositionEncoding::Utf16);
        // On rayon's pool, as the server runs a lint and frames its publish: the lint's parallel
        // parts then start there.
        let (diagnostics, linted, frame, framed) = rayon::scope(|_| {
            let diagnostics = lint(&current, &tree, context, &settings);
            let linted = Instant::now();
            let frame = publish_frame(&uri, version, &diagnostics, &mapper);
            (diagnostics, linted, frame, Instant::now())
        });
        let done = Instant::now();
        published_bytes = frame.as_bytes().len();
        drop(frame);
        edit.0.push(edited - started);
        linting.0.push(linted - edited);
        framing.0.push(framed - linted);
        total.0.push(done - started);
        if !keystroke.in_comment {
            in_code.0.push(done - started);
        }
        if verify {
            let fresh = lint(&current, &parse(&current, None), context, &settings);
            let describe =
                |d: &[culint::diagnostic::Diagnostic]| d.iter().map(|d| format!("{d:?}")).collect::<Vec<_>>();
            assert_eq!(
                describe(&diagnostics),
                describe(&fresh),
                "keystroke {n}: the lint of the reparsed tree differs"
            );
        }
    }
    println!("{count} keystrokes, {published_bytes} bytes published on the last");
    edit.report("edit and reparse");
    linting.report("lint");
    framing.report("convert and frame the publish");
    total.report("total");
    in_code.report(&format!("total, {} outside comments", in_code.0.len()));
    report_slowest(&text, &keystrokes, &[&edit, &linting, &framing, &total], slowest);
}

/// The `count` slowest keystrokes, with where they typed what and each phase's time.
fn report_slowest(text: &str, keystrokes: &[Keystroke], phases: &[&Phase; 4], count: usize) {
    let [edit, linting, framing, total] = phases;
    let mut order: Vec<usize> = (0..keystrokes.len()).collect();
    order.sort_by_key(|&n| std::cmp::Reverse(total.0[n]));
    let millis = |phase: &Phase, n: usize| phase.0[n].as_secs_f64() * 1e3;
    for n in order.into_iter().take(count) {
        let keystroke = &keystrokes[n];
        let line = text[..keystroke.range.start].matches('\n').count() + 1;
        let what = if keystroke.text.is_empty() { "delete".to_owned() } else { format!("type {:?}", keystroke.text) };
        println!(
            "keystroke {n:4} line {line:5} {what:<12} total {:6.2} ms = edit {:5.2} + lint {:5.2} + frame {:5.2}",
            millis(total, n),
            millis(edit, n),
            millis(linting, n),
            millis(framing, n)
        );
    }
}
