//! Untangle a log that several ranks wrote at once into one stream per rank.
//!
//! Launchers prefix each line with where it came from: torchrun's `[rank3]:` (PyTorch >= 2.2 for
//! errors), the elastic agent's `[default0]:` (`--tee`/`--redirects`), both at once
//! (`[default1]:[rank1]:`), pdsh's `worker-2: [rank3]:` under DeepSpeed, and Slurm's `srun -l`
//! label `3: `. The prefix is removed and the rest of the line goes to that rank's stream, so a
//! traceback split by other ranks' output reads as one piece again.

use std::sync::LazyLock;

use regex::Regex;

/// The lines of one rank (or of unprefixed output), with their line numbers in the original log.
#[derive(Debug, Default)]
pub struct Stream {
    /// `rank3`, `default0`, `worker-2 rank3`, `task3`; `None` for lines without a prefix.
    pub rank: Option<String>,
    pub text: String,
    /// Byte offset in `text` where each line starts.
    line_starts: Vec<usize>,
    /// The 1-based line number in the original log of each line.
    line_numbers: Vec<usize>,
}

impl Stream {
    fn push(&mut self, line: &str, number: usize) {
        self.line_starts.push(self.text.len());
        self.line_numbers.push(number);
        self.text.push_str(line);
        self.text.push('\n');
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Index of the stream line holding byte `offset` of `text`.
    pub fn line_index(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(index) => index,
            Err(next) => next - 1,
        }
    }

    /// Text of stream line `index`, without its newline.
    pub fn line(&self, index: usize) -> &str {
        let start = self.line_starts[index];
        // Every pushed line ends with a newline, the last one included.
        let end = self.line_starts.get(index + 1).copied().unwrap_or(self.text.len()) - 1;
        &self.text[start..end]
    }

    /// 1-based number in the original log of stream line `index`.
    pub fn original_line(&self, index: usize) -> usize {
        self.line_numbers[index]
    }
}

static PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)^
        (?: (?P<host>[A-Za-z0-9][\w.\-]*):\s+ )?     # pdsh host, kept only before a bracket tag
        (?P<tags> (?: \[ [a-z]* \d+ \] :\s? )+ )
        | ^ (?P<task>\d{1,5}): \s                           # srun -l
        ",
    )
    .expect("rank prefix pattern compiles")
});

static TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[(?P<name>[a-z]*)(?P<index>\d+)\]").expect("rank tag pattern compiles"));

/// Split a log into streams: the unprefixed lines first, then one stream per rank in order of
/// first appearance. Windows line endings and ANSI colour codes are removed on the way.
pub fn split(log: &str) -> Vec<Stream> {
    let mut streams: Vec<Stream> = vec![Stream::default()];
    for (index, raw) in log.lines().enumerate() {
        let line = strip_ansi(raw.strip_suffix('\r').unwrap_or(raw));
        let (rank, rest) = split_prefix(&line);
        let stream = match streams.iter().position(|s| s.rank == rank) {
            Some(position) => &mut streams[position],
            None => {
                streams.push(Stream { rank, ..Stream::default() });
                streams.last_mut().expect("just pushed")
            }
        };
        stream.push(rest, index + 1);
    }
    streams.retain(|stream| stream.line_count() > 0);
    streams
}

/// The rank a line came from, and the line without its prefix.
fn split_prefix(line: &str) -> (Option<String>, &str) {
    // Most lines of a long log have no prefix; skip the regex for them.
    let first = line.as_bytes().first().copied().unwrap_or(b' ');
    if first != b'[' && !first.is_ascii_digit() && !line.contains(": [") {
        return (None, line);
    }
    let Some(captures) = PREFIX.captures(line) else {
        return (None, line);
    };
    let rest = &line[captures.get(0).map_or(0, |m| m.end())..];
    if let Some(task) = captures.name("task") {
        return (Some(format!("task{}", task.as_str())), rest);
    }
    let tags = captures.name("tags").map_or("", |m| m.as_str());
    // With both an agent tag and a global rank, the global rank names the process.
    let tag = TAG
        .captures_iter(tags)
        .map(|c| (c["name"].to_owned(), c["index"].to_owned()))
        .max_by_key(|(name, _)| name == "rank")
        .map(|(name, index)| format!("{}{index}", if name.is_empty() { "rank" } else { &name }));
    let rank = match (captures.name("host"), tag) {
        (Some(host), Some(tag)) => Some(format!("{} {tag}", host.as_str())),
        (_, tag) => tag,
    };
    (rank, rest)
}

fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Sort rank names so that `rank10` comes after `rank9`.
pub fn sort_ranks(ranks: &mut [String]) {
    ranks.sort_by_key(|rank| natural_key(rank));
}

fn natural_key(name: &str) -> (String, u64) {
    let digits_at = name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    (name[..digits_at].to_owned(), name[digits_at..].parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_launcher_prefixes() {
        assert_eq!(split_prefix("[rank3]: Traceback"), (Some("rank3".into()), "Traceback"));
        assert_eq!(split_prefix("[default0]:RuntimeError: x"), (Some("default0".into()), "RuntimeError: x"));
        assert_eq!(split_prefix("[default1]:[rank5]: x"), (Some("rank5".into()), "x"));
        assert_eq!(split_prefix("worker-2: [rank3]: x"), (Some("worker-2 rank3".into()), "x"));
        assert_eq!(split_prefix("3: x"), (Some("task3".into()), "x"));
    }

    #[test]
    fn leaves_ordinary_lines_alone() {
        assert_eq!(split_prefix("RuntimeError: CUDA error"), (None, "RuntimeError: CUDA error"));
        assert_eq!(split_prefix("[2024-01-01 10:00:00] INFO"), (None, "[2024-01-01 10:00:00] INFO"));
    }

    #[test]
    fn interleaved_lines_regroup_by_rank() {
        let log = "[rank0]: a\n[rank1]: x\n[rank0]: b\nplain\n";
        let streams = split(log);
        let rank0 = streams.iter().find(|s| s.rank.as_deref() == Some("rank0")).unwrap();
        assert_eq!(rank0.text, "a\nb\n");
        assert_eq!(rank0.original_line(1), 3);
        assert_eq!(streams[0].rank, None);
        assert_eq!(streams[0].line(0), "plain");
    }

    #[test]
    fn removes_colour_codes() {
        let streams = split("\u{1b}[31mRuntimeError\u{1b}[0m: boom\n");
        assert_eq!(streams[0].line(0), "RuntimeError: boom");
    }

    #[test]
    fn ranks_sort_numerically() {
        let mut ranks = vec!["rank10".to_owned(), "rank2".to_owned(), "rank1".to_owned()];
        sort_ranks(&mut ranks);
        assert_eq!(ranks, ["rank1", "rank2", "rank10"]);
    }
}
