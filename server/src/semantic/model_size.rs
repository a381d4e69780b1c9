//! How big a loaded model is, from facts: the id's stated size (`-7b`, `-125m`), the table of
//! model families in `knowledge/model_families.toml` (which lists the small variants too), a name
//! that says the model is a tiny test model (`tiny-random-*`), and the literal sizes of a config
//! built in the file (`LlamaConfig(hidden_size=64, num_hidden_layers=2)`). When none applies the
//! size is unknown, and rules that judge by size stay quiet.

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use tree_sitter::Node;

use super::{Model, ast};
use crate::grammar_ids::FieldChild;

#[derive(Deserialize)]
struct Family {
    name: String,
    parameters: f64,
    #[allow(dead_code)] // Read by people: every entry cites its model card.
    source: String,
}

#[derive(Deserialize)]
struct FamilyFile {
    family: Vec<Family>,
}

static FAMILIES: LazyLock<Vec<Family>> = LazyLock::new(|| {
    toml::from_str::<FamilyFile>(include_str!("../../../knowledge/model_families.toml"))
        .expect("knowledge/model_families.toml is valid (checked by a unit test)")
        .family
});

/// A size stated in a model id: `-7b`, `_1.3B`, `-350m`, between delimiters.
static STATED_SIZE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(?:^|[-_.])(\d+(?:\.\d+)?)([bm])(?:$|[-_.])").expect("valid regex"));

/// A name that says the model is a tiny test model: the Hub's `hf-internal-testing/tiny-random-gpt2`,
/// `sshleifer/tiny-gpt2`, `trl-internal-testing/tiny-Qwen2ForCausalLM`: a few thousand to a few
/// million parameters.
static TINY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(?:^|[-_/.])tiny(?:$|[-_/.])").expect("tiny regex compiles"));

/// What a tiny test model is taken to have: more than any of them, far less than a real model.
pub const TINY_PARAMETERS: f64 = 10e6;

/// A model size and the fact it was read from, for messages.
#[derive(Clone, Debug, PartialEq)]
pub struct Size {
    pub parameters: f64,
    pub fact: String,
}

/// Parameters of a model id: a family of the table (longest match), else the size the id states,
/// else a tiny test model's. `None` when nothing in the id says.
pub fn parameters_of_id(id: &str) -> Option<f64> {
    let name = id.rsplit('/').next().unwrap_or(id).to_ascii_lowercase();
    let stated = STATED_SIZE.captures(&name).and_then(|captures| {
        let number: f64 = captures[1].parse().ok()?;
        Some(if captures[2].eq_ignore_ascii_case("b") { number * 1e9 } else { number * 1e6 })
    });
    let family = FAMILIES
        .iter()
        .filter(|family| {
            name.strip_prefix(family.name.as_str()).is_some_and(|rest| {
                // A family matches up to a delimiter, and only when what follows states no
                // other size (DeepSeek-R1-Distill-Qwen-7B is 7B, not DeepSeek-R1's 671B).
                (rest.is_empty() || rest.starts_with(['-', '_', '.'])) && !STATED_SIZE.is_match(rest)
            })
        })
        .max_by_key(|family| family.name.len());
    family.map(|family| family.parameters).or(stated).or_else(|| TINY.is_match(id).then_some(TINY_PARAMETERS))
}

/// The size of the model a `from_pretrained(...)` / `from_config(...)` call loads, from facts.
pub fn of_load<'a>(model: &Model<'a>, call: Node<'a>) -> Option<Size> {
    let argument = ast::positional_args(call)
        .first()
        .copied()
        .or_else(|| ast::keyword_arg(call, "pretrained_model_name_or_path", model.text))
        .or_else(|| ast::keyword_arg(call, "config", model.text))
        .or_else(|| ast::keyword_arg(call, "model_name", model.text))?;
    of_expression(model, call, argument)
}

fn of_expression<'a>(model: &Model<'a>, call: Node<'a>, argument: Node<'a>) -> Option<Size> {
    if let Some(id) = ast::string_value(argument, model.text) {
        let parameters = parameters_of_id(&id)?;
        return Some(Size { parameters, fact: format!("`{id}`") });
    }
    match argument.kind() {
        "call" => of_config_call(model, argument),
        "attribute" => of_argument_default(model, argument),
        "identifier" => {
            // A name bound, in the function around the call (else at module level), only to values
            // whose size is known, and not a parameter of that function: the largest of them.
            let variable = model.node_text(argument);
            let function = model.enclosing_function(call);
            if function.is_some_and(|f| ast::is_parameter(f, variable, model.text)) {
                return None;
            }
            let assignments = model.assignments_seen_from(variable, function);
            if assignments.is_empty() {
                return None;
            }
            let mut largest: Option<Size> = None;
            for assignment in assignments {
                if assignment.kind() != "assignment"
                    || assignment.field("left").is_none_or(|left| left.kind() != "identifier")
                {
                    return None;
                }
                let value = assignment.field("right")?;
                let size = if let Some(id) = ast::string_value(value, model.text) {
                    Size { parameters: parameters_of_id(&id)?, fact: format!("`{id}`") }
                } else if value.kind() == "call" {
                    of_config_call(model, value)?
                } else {
                    return None;
                };
                if largest.as_ref().is_none_or(|l| size.parameters > l.parameters) {
                    largest = Some(size);
                }
            }
            largest
        }
        _ => None,
    }
}

/// `args.model` where the file declares `parser.add_argument("--model", default="...")`: the
/// size of the default, the model the script runs unless told otherwise.
fn of_argument_default<'a>(model: &Model<'a>, argument: Node<'a>) -> Option<Size> {
    let option = argument.field("attribute").map(|a| model.node_text(a))?;
    let defaults: Vec<String> = model
        .calls_named("add_argument")
        .iter()
        .filter(|call| {
            ast::positional_args(**call).iter().any(|flag| {
                ast::string_value(*flag, model.text)
                    .is_some_and(|flag| flag.trim_start_matches('-').replace('-', "_") == option)
            })
        })
        .filter_map(|call| {
            ast::keyword_arg(*call, "default", model.text).and_then(|d| ast::string_value(d, model.text))
        })
        .collect();
    let [id] = defaults.as_slice() else { return None };
    let parameters = parameters_of_id(id)?;
    Some(Size { parameters, fact: format!("`{id}`, the default of `--{}`", option.replace('_', "-")) })
}

/// `LlamaConfig(hidden_size=64, num_hidden_layers=2, vocab_size=1000)`, `GPT2Config(n_embd=32,
/// n_layer=2)`: a transformer of that width and depth has about 12·layers·width² parameters
/// in its blocks, plus vocabulary·width in its embeddings.
fn of_config_call<'a>(model: &Model<'a>, call: Node<'a>) -> Option<Size> {
    let callee = ast::callee(call).map(|c| model.node_text(c))?;
    if !callee.ends_with("Config") {
        return None;
    }
    let literal = |names: &[&str]| {
        names.iter().find_map(|name| {
            ast::keyword_arg(call, name, model.text)
                .and_then(|v| model.node_text(v).replace('_', "").parse::<f64>().ok())
        })
    };
    let width = literal(&["hidden_size", "n_embd", "d_model", "dim", "hidden_dim"])?;
    let layers = literal(&["num_hidden_layers", "n_layer", "num_layers", "n_layers"])?;
    let vocabulary = literal(&["vocab_size"]).unwrap_or(0.0);
    let parameters = 12.0 * layers * width * width + vocabulary * width;
    Some(Size { parameters, fact: format!("`{callee}` with width {width} and {layers} layers") })
}

/// `13B parameters`, `350M parameters`.
pub fn parameters_text(parameters: f64) -> String {
    if parameters >= 1e9 {
        format!("{:.1}B parameters", parameters / 1e9).replace(".0B", "B")
    } else {
        format!("{:.0}M parameters", parameters / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_table_loads_with_sources() {
        assert!(FAMILIES.len() >= 30);
        assert!(FAMILIES.iter().all(|f| f.parameters > 1e6 && f.source.starts_with("https://")));
    }

    #[test]
    fn parameters_from_names_families_and_tiny_models() {
        let cases = [
            ("meta-llama/Llama-2-13b-hf", Some(13e9)),
            ("facebook/opt-1.3b", Some(1.3e9)),
            ("facebook/opt-125m", Some(125e6)),
            ("bigscience/bloom-560m", Some(560e6)),
            ("Qwen/Qwen3-30B-A3B", Some(30e9)),
            ("mistralai/Mixtral-8x7B-Instruct-v0.1", Some(46.7e9)),
            ("google/gemma-7b-it", Some(8.54e9)),
            ("gpt2", Some(124e6)),
            ("gpt2-xl", Some(1.5e9)),
            ("google/flan-t5-small", Some(77e6)),
            ("deepseek-ai/DeepSeek-R1", Some(671e9)),
            ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", Some(7e9)),
            ("hf-internal-testing/tiny-random-LlamaForCausalLM", Some(TINY_PARAMETERS)),
            ("stabilityai/stable-diffusion-xl-base-1.0", None),
            ("my-org/custom-model", None),
        ];
        for (id, expected) in cases {
            assert_eq!(parameters_of_id(id), expected, "{id}");
        }
    }

    #[test]
    fn parameter_text() {
        assert_eq!(parameters_text(13e9), "13B parameters");
        assert_eq!(parameters_text(1.3e9), "1.3B parameters");
        assert_eq!(parameters_text(46.7e9), "46.7B parameters");
        assert_eq!(parameters_text(124e6), "124M parameters");
    }
}
