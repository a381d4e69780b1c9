//! The PyTorch allocator config string (`PYTORCH_ALLOC_CONF`, `PYTORCH_CUDA_ALLOC_CONF`):
//! comma-separated `key:value` options, checked the way PyTorch's `ConfigTokenizer` reads them.
//! The keys and their value rules live in `knowledge/alloc_conf_keys.toml`.

use std::ops::Range;
use std::sync::LazyLock;

use serde::Deserialize;

/// One allocator option PyTorch accepts.
#[derive(Debug, Deserialize)]
pub struct AllocConfKey {
    pub name: String,
    pub value: ValueKind,
    #[serde(default)]
    pub choices: Vec<String>,
    /// Smallest accepted number (megabytes), or largest (power of two).
    pub min: Option<u64>,
    pub max: Option<u64>,
    /// `-1` means "no limit".
    #[serde(default)]
    pub unlimited: bool,
    pub summary: String,
    pub source: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueKind {
    Boolean,
    Megabytes,
    FractionOpen,
    FractionClosed,
    Choice,
    PowerOfTwo,
    Roundup,
}

#[derive(Deserialize)]
struct KeyFile {
    key: Vec<AllocConfKey>,
}

static KEYS: LazyLock<Vec<AllocConfKey>> = LazyLock::new(|| {
    toml::from_str::<KeyFile>(include_str!("../../../knowledge/alloc_conf_keys.toml"))
        .expect("knowledge/alloc_conf_keys.toml is valid (checked by a unit test)")
        .key
});

/// Every key PyTorch accepts, in the order of the data file.
pub fn keys() -> &'static [AllocConfKey] {
    &KEYS
}

pub fn key(name: &str) -> Option<&'static AllocConfKey> {
    KEYS.iter().find(|key| key.name == name)
}

/// Something wrong in a config string. `range` is a byte range into the string, so a rule can
/// point at the offending key or value inside a Python string literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocConfProblem {
    pub range: Range<usize>,
    pub message: String,
}

/// One `key:value` option as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocConfOption<'a> {
    pub key: &'a str,
    pub key_range: Range<usize>,
    /// The value text as written, brackets included for a list.
    pub value: &'a str,
    pub value_range: Range<usize>,
}

/// The options of a config string that parse as `key:value`, whether or not they are valid.
/// CUL203 uses this to find the `backend` key, which PyTorch reads at import time.
pub fn options(config: &str) -> Vec<AllocConfOption<'_>> {
    parse(config).0
}

/// Every problem in a config string; empty when PyTorch would accept it.
pub fn validate(config: &str) -> Vec<AllocConfProblem> {
    parse(config).1
}

#[derive(Clone, Debug)]
struct Token {
    range: Range<usize>,
    /// The characters of the token with whitespace removed, as PyTorch's tokenizer keeps them.
    text: String,
}

impl Token {
    fn is(&self, punctuation: &str) -> bool {
        self.text == punctuation
    }

    fn is_punctuation(&self) -> bool {
        matches!(self.text.as_str(), "," | ":" | "[" | "]")
    }
}

/// Split like PyTorch's `ConfigTokenizer`: `,` `:` `[` `]` are tokens of their own, whitespace is
/// dropped, everything else accumulates into one token.
fn tokenize(config: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut current: Option<Token> = None;
    for (offset, ch) in config.char_indices() {
        let end = offset + ch.len_utf8();
        if matches!(ch, ',' | ':' | '[' | ']') {
            tokens.extend(current.take());
            tokens.push(Token { range: offset..end, text: ch.to_string() });
        } else if !ch.is_whitespace() {
            let token = current.get_or_insert_with(|| Token { range: offset..offset, text: String::new() });
            token.text.push(ch);
            token.range.end = end;
        }
    }
    tokens.extend(current);
    tokens
}

fn parse(config: &str) -> (Vec<AllocConfOption<'_>>, Vec<AllocConfProblem>) {
    let tokens = tokenize(config);
    let mut options = Vec::new();
    let mut problems = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let key_token = &tokens[i];
        let next_option = skip_to_next_option(&tokens, i);
        if key_token.is_punctuation() {
            problems
                .push(problem(key_token.range.clone(), format!("expected an option name, found `{}`", key_token.text)));
            i = next_option;
            continue;
        }
        let Some(colon) = tokens.get(i + 1).filter(|t| t.is(":")) else {
            problems.push(missing_colon(key_token));
            i = next_option;
            continue;
        };
        let Some(value_start) = tokens.get(i + 2).filter(|t| !t.is(",") && !t.is(":")) else {
            problems.push(problem(
                key_token.range.start..colon.range.end,
                format!("`{}` has no value; write `{}:VALUE`", key_token.text, key_token.text),
            ));
            i = next_option;
            continue;
        };
        let value_end = if value_start.is("[") { closing_bracket(&tokens, i + 2) } else { i + 2 };
        let value_range = value_start.range.start..tokens[value_end.min(tokens.len() - 1)].range.end;
        options.push(AllocConfOption {
            key: &config[key_token.range.clone()],
            key_range: key_token.range.clone(),
            value: &config[value_range.clone()],
            value_range: value_range.clone(),
        });
        let value_problem = match key(&key_token.text) {
            None => Some(unknown_key(key_token)),
            Some(known) => check_value(known, &tokens[i + 2..=value_end.min(tokens.len() - 1)], &value_range),
        };
        i = value_end + 1;
        if let Some(value_problem) = value_problem {
            // One problem per option: what follows a bad value is usually the same mistake.
            problems.push(value_problem);
            if tokens.get(i).is_some_and(|t| !t.is(",")) {
                i = skip_to_next_option(&tokens, i);
                continue;
            }
        }
        if let Some(separator) = tokens.get(i) {
            if !separator.is(",") {
                problems.push(problem(
                    separator.range.clone(),
                    format!("expected `,` after `{}`, found `{}`", &config[value_range], separator.text),
                ));
                i = skip_to_next_option(&tokens, i);
                continue;
            }
            i += 1;
        }
    }
    (options, problems)
}

fn problem(range: Range<usize>, message: String) -> AllocConfProblem {
    AllocConfProblem { range, message }
}

/// Index of the token after the next `,` that is outside brackets, or the end.
fn skip_to_next_option(tokens: &[Token], from: usize) -> usize {
    let mut depth = 0usize;
    for (index, token) in tokens.iter().enumerate().skip(from) {
        match token.text.as_str() {
            "[" => depth += 1,
            "]" => depth = depth.saturating_sub(1),
            "," if depth == 0 && index > from => return index + 1,
            _ => {}
        }
    }
    tokens.len()
}

/// Index of the `]` closing the `[` at `open`, or the last token when it is missing.
fn closing_bracket(tokens: &[Token], open: usize) -> usize {
    tokens.iter().enumerate().skip(open).find(|(_, t)| t.is("]")).map_or(tokens.len() - 1, |(index, _)| index)
}

fn missing_colon(token: &Token) -> AllocConfProblem {
    let message = if let Some((name, value)) = token.text.split_once('=') {
        format!("options are `key:value`, not `key=value`; write `{name}:{value}`")
    } else if key(&token.text).is_some() {
        format!("`{}` has no value; write `{}:VALUE`", token.text, token.text)
    } else {
        return unknown_key(token);
    };
    problem(token.range.clone(), message)
}

fn unknown_key(token: &Token) -> AllocConfProblem {
    let name = token.text.split(['=', ';']).next().unwrap_or_default();
    let hint = match (key(name), crate::cuda_env::closest(name, keys().iter().map(|k| k.name.as_str()))) {
        (Some(_), _) => format!("; `{name}` is a key, but options are `key:value` separated by `,`"),
        (None, Some(suggestion)) => format!("; did you mean `{suggestion}`?"),
        (None, None) => String::new(),
    };
    problem(
        token.range.clone(),
        format!(
            "unknown allocator option `{}`: PyTorch stops with \"Unrecognized key\" at CUDA initialisation{hint}",
            token.text
        ),
    )
}

fn check_value(known: &AllocConfKey, value: &[Token], range: &Range<usize>) -> Option<AllocConfProblem> {
    let name = known.name.as_str();
    if known.value == ValueKind::Roundup && value.first().is_some_and(|t| t.is("[")) {
        return check_roundup_list(name, value);
    }
    let token = value.first()?;
    let text = token.text.as_str();
    let separator_hint = if text.contains(';') { " (separate options with `,`, not `;`)" } else { "" };
    let message = match known.value {
        ValueKind::Boolean if text != "True" && text != "False" => {
            format!("`{name}` takes `True` or `False`, spelled exactly so, not `{text}`{separator_hint}")
        }
        ValueKind::Choice if !known.choices.iter().any(|choice| choice == text) => {
            format!("`{name}` takes {}, not `{text}`{separator_hint}", quoted_list(&known.choices))
        }
        ValueKind::Megabytes => match text.parse::<i64>() {
            Ok(-1) if known.unlimited => return None,
            Ok(number) if number < 0 => format!("`{name}` takes a number of MiB (or -1 for no limit), not `{text}`"),
            Ok(number) if known.min.is_some_and(|min| (number as u64) < min) => {
                format!("`{name}` must be at least {} MiB, not {number}", known.min.unwrap_or_default())
            }
            Ok(_) => return None,
            Err(_) => format!("`{name}` takes a whole number of MiB, like `{name}:128`, not `{text}`{separator_hint}"),
        },
        ValueKind::FractionOpen => match finite_number(text) {
            Some(x) if x > 0.0 && x < 1.0 => return None,
            _ => format!("`{name}` takes a number strictly between 0 and 1, like `0.8`, not `{text}`{separator_hint}"),
        },
        ValueKind::FractionClosed => match finite_number(text) {
            Some(x) if (0.0..=1.0).contains(&x) => return None,
            _ => format!("`{name}` takes a number from 0 to 1, like `0.9`, not `{text}`{separator_hint}"),
        },
        ValueKind::PowerOfTwo | ValueKind::Roundup => match text.parse::<u64>() {
            Ok(n) if n.is_power_of_two() && known.max.is_none_or(|max| n <= max) => return None,
            Ok(n) if n.is_power_of_two() => {
                format!("`{name}` must be at most {}, not {n}", known.max.unwrap_or_default())
            }
            _ => format!("`{name}` takes a power of two, like `4`, not `{text}`{separator_hint}"),
        },
        _ => return None,
    };
    Some(problem(range.clone(), message))
}

fn check_roundup_list(name: &str, value: &[Token]) -> Option<AllocConfProblem> {
    let whole = value.first()?.range.start..value.last()?.range.end;
    if !value.last().is_some_and(|t| t.is("]")) {
        return Some(problem(whole, format!("`{name}` list is missing its closing `]`")));
    }
    let inner = &value[1..value.len() - 1];
    for entry in inner.split(|t| t.is(",")) {
        let [size, colon, division] = entry else {
            let range = entry
                .first()
                .map_or(whole.clone(), |t| t.range.start..entry.last().map_or(t.range.end, |l| l.range.end));
            return Some(problem(range, format!("`{name}` list entries are `SIZE_MB:DIVISIONS` or `>:DIVISIONS`")));
        };
        if !colon.is(":") {
            return Some(problem(colon.range.clone(), format!("`{name}` list entries are `SIZE_MB:DIVISIONS`")));
        }
        if !size.is(">") && !size.text.parse::<u64>().is_ok_and(u64::is_power_of_two) {
            return Some(problem(
                size.range.clone(),
                format!("`{name}` sizes must be powers of two (or `>`), not `{}`", size.text),
            ));
        }
        if !division.text.parse::<u64>().is_ok_and(|d| d == 0 || d.is_power_of_two()) {
            return Some(problem(
                division.range.clone(),
                format!("`{name}` divisions must be a power of two or 0, not `{}`", division.text),
            ));
        }
    }
    None
}

fn finite_number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("`{item}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(config: &str) -> Vec<String> {
        validate(config).into_iter().map(|p| p.message).collect()
    }

    #[test]
    fn data_file_loads_every_key_of_the_spec() {
        for name in [
            "backend",
            "large_segment_size_mb",
            "max_split_size_mb",
            "roundup_power2_divisions",
            "max_non_split_rounding_mb",
            "garbage_collection_threshold",
            "expandable_segments",
            "release_lock_on_cudamalloc",
            "pinned_use_cuda_host_register",
            "pinned_num_register_threads",
            "pinned_use_background_threads",
            "pinned_reserve_segment_size_mb",
            "pinned_max_round_threshold_mb",
            "pinned_max_cached_size_mb",
            "graph_capture_record_stream_reuse",
            "per_process_memory_fraction",
            "throw_on_cudamalloc_oom",
        ] {
            assert!(key(name).is_some(), "{name} missing from knowledge/alloc_conf_keys.toml");
        }
        assert_eq!(keys().len(), 17);
        assert!(keys().iter().all(|k| !k.source.is_empty() && !k.summary.is_empty()));
    }

    #[test]
    fn accepts_valid_configs() {
        for config in [
            "",
            "expandable_segments:True",
            "max_split_size_mb:128,garbage_collection_threshold:0.6",
            "max_split_size_mb:-1",
            "expandable_segments:False, max_split_size_mb:512,",
            "backend:cudaMallocAsync",
            "roundup_power2_divisions:4",
            "roundup_power2_divisions:[256:1,512:2,>:8]",
            "roundup_power2_divisions:[64:8,>:0],expandable_segments:True",
            "pinned_num_register_threads:8",
            "per_process_memory_fraction:1",
        ] {
            assert_eq!(messages(config), Vec::<String>::new(), "{config}");
        }
    }

    #[test]
    fn rejects_values_torch_rejects() {
        let cases = [
            ("expandable_segments:true", "`True` or `False`"),
            ("expandable_segments:1", "`True` or `False`"),
            ("max_split_size_mb:10", "at least 20 MiB"),
            ("max_split_size_mb:-5", "or -1 for no limit"),
            ("max_split_size_mb:1G", "whole number of MiB"),
            ("garbage_collection_threshold:1.0", "strictly between 0 and 1"),
            ("garbage_collection_threshold:0", "strictly between 0 and 1"),
            ("backend:async", "`native` or `cudaMallocAsync`"),
            ("roundup_power2_divisions:3", "power of two"),
            ("roundup_power2_divisions:[100:2]", "powers of two"),
            ("roundup_power2_divisions:[256:3]", "power of two or 0"),
            ("roundup_power2_divisions:[256:2", "closing `]`"),
            ("pinned_num_register_threads:256", "at most 128"),
            ("per_process_memory_fraction:1.5", "from 0 to 1"),
        ];
        for (config, expected) in cases {
            let found = messages(config);
            assert!(found.len() == 1 && found[0].contains(expected), "{config}: {found:?}");
        }
    }

    #[test]
    fn rejects_wrong_separators_and_unknown_keys() {
        assert!(messages("max_split_size_mb=128")[0].contains("write `max_split_size_mb:128`"));
        let semicolon = messages("expandable_segments:True;max_split_size_mb:128");
        assert!(semicolon.iter().any(|m| m.contains("not `;`")), "{semicolon:?}");
        let typo = messages("expandable_segment:True");
        assert!(typo[0].contains("Unrecognized key") && typo[0].contains("did you mean `expandable_segments`"));
        assert!(messages("cuda_malloc_heuristic:1")[0].contains("unknown allocator option"));
        assert!(messages("expandable_segments")[0].contains("has no value"));
        assert!(messages("expandable_segments:True max_split_size_mb:128").len() == 1);
    }

    #[test]
    fn ranges_point_into_the_string() {
        let config = "max_split_size_mb:128, expandable_segmnts:True";
        let problems = validate(config);
        assert_eq!(&config[problems[0].range.clone()], "expandable_segmnts");
        let options = options("backend:cudaMallocAsync,expandable_segments:True");
        assert_eq!(options[0].key, "backend");
        assert_eq!(options[0].value, "cudaMallocAsync");
        assert_eq!(options[1].value_range, 44..48);
    }
}
