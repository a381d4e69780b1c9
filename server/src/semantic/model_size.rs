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

/// A size stated in a model id: `-7b`, `_1.3B`, `-350m`, between delimiters; also BLOOM's
/// `-1b7` and `-7b1`, whose digits after the unit are the decimals (1.7B, 7.1B).
static STATED_SIZE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(?:^|[-_.])(\d+(?:\.\d+)?)([bm])(\d*)(?:$|[-_.])").expect("valid regex"));

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
        let decimals = &captures[3];
        let number: f64 = if decimals.is_empty() {
            captures[1].parse().ok()?
        } else if captures[1].contains('.') {
            return None;
        } else {
            format!("{}.{decimals}", &captures[1]).parse().ok()?
        };
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

/// What the layers of a module class built in the file add up to, when every layer has literal
/// sizes: `nn.Linear(10, 32)`, `nn.Conv2d(3, 16, 5)`, `nn.Embedding(1000, 64)`, repeated by
/// `range(4)` comprehensions, and the module classes of the file it builds in turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Layers {
    pub class: String,
    pub parameters: f64,
    /// The values one sample keeps for the backward in a stack of dense layers: the sum of their
    /// output widths. Only meaningful when `dense_only`.
    pub kept_per_sample: f64,
    /// Every layer with parameters is a dense one (`Linear`, a norm): what it keeps per sample
    /// is its width. A convolution keeps a value per pixel, an embedding or recurrent layer a
    /// value per token, neither of which the code states.
    pub dense_only: bool,
}

impl Layers {
    pub fn fact(&self) -> String {
        let parameters = if self.parameters >= 1e6 {
            parameters_text(self.parameters)
        } else {
            format!("{} parameters", self.parameters as u64)
        };
        format!("`{}`, {parameters} (from its layers' literal sizes)", self.class)
    }
}

/// Layers that hold no parameters, or whose count is not worth telling apart.
const PARAMETER_FREE: &[&str] = &[
    "ReLU",
    "ReLU6",
    "GELU",
    "SiLU",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "LeakyReLU",
    "ELU",
    "Mish",
    "Hardswish",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "Identity",
    "Flatten",
    "Unflatten",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool2d",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "CrossEntropyLoss",
    "MSELoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "L1Loss",
    "Upsample",
];

/// Calls in an `__init__` that build nothing.
const INERT_CALLS: &[&str] = &["super", "__init__", "range", "int", "float", "len", "print"];

/// The layers of the module the expression `value` builds: a class of this file
/// (`ToyModel()`), also through `.to(device)`, `.cuda()` or a wrapper such as `DDP(model)`,
/// `parallelize_module(module=model, ...)` or `fully_shard(model)`. `None` when anything about
/// it is not known from the code.
pub fn layers_of_value<'a>(model: &Model<'a>, value: Node<'a>, depth: usize) -> Option<Layers> {
    if depth > 4 {
        return None;
    }
    match value.kind() {
        "identifier" => layers_of_name(model, value, depth + 1),
        "call" => {
            let callee = ast::callee(value)?;
            let name = model.callee_name(value)?;
            if callee.kind() == "attribute"
                && matches!(name, "to" | "cuda" | "float" | "train" | "eval" | "requires_grad_")
            {
                return layers_of_value(model, ast::receiver(value)?, depth + 1);
            }
            if matches!(
                name,
                "DDP"
                    | "DistributedDataParallel"
                    | "DataParallel"
                    | "FSDP"
                    | "FullyShardedDataParallel"
                    | "fully_shard"
                    | "parallelize_module"
                    | "compile"
            ) {
                let wrapped = ast::keyword_arg(value, "module", model.text)
                    .or_else(|| ast::keyword_arg(value, "model", model.text))
                    .or_else(|| ast::positional_args(value).first().copied())?;
                return layers_of_value(model, wrapped, depth + 1);
            }
            let class = local_class(model, name)?;
            layers_of_class(model, class, depth + 1)
        }
        _ => None,
    }
}

/// A name bound, where `name` is used, only to modules whose layers are known: the largest.
/// A rebinding through a wrapper of the same name (`model = DDP(model)`) reads the bindings
/// before it.
fn layers_of_name<'a>(model: &Model<'a>, name: Node<'a>, depth: usize) -> Option<Layers> {
    let function = model.enclosing_function(name);
    let variable = model.node_text(name);
    if function.is_some_and(|f| ast::is_parameter(f, variable, model.text)) {
        return None;
    }
    let assignments: Vec<Node<'a>> = model
        .assignments_seen_from(variable, function)
        .into_iter()
        .filter(|assignment| assignment.end_byte() <= name.start_byte())
        .collect();
    if assignments.is_empty() {
        return None;
    }
    let mut largest: Option<Layers> = None;
    for assignment in assignments {
        if assignment.kind() != "assignment" || assignment.field("left").is_none_or(|l| l.kind() != "identifier") {
            return None;
        }
        let layers = layers_of_value(model, assignment.field("right")?, depth)?;
        if largest.as_ref().is_none_or(|l| layers.parameters > l.parameters) {
            largest = Some(layers);
        }
    }
    largest
}

fn local_class<'a>(model: &Model<'a>, name: &str) -> Option<Node<'a>> {
    model.all_classes().iter().copied().find(|class| class.field("name").is_some_and(|n| model.node_text(n) == name))
}

/// The layers a module class of the file builds in its `__init__`.
fn layers_of_class<'a>(model: &Model<'a>, class: Node<'a>, depth: usize) -> Option<Layers> {
    // A class that builds itself, directly or through others, has no finite size to read.
    if depth > 8 {
        return None;
    }
    let class_name = model.node_text(class.field("name")?).to_owned();
    // Only a direct `nn.Module` subclass: a base class of the project may build layers too.
    let bases = class.field("superclasses")?;
    let mut cursor = bases.walk();
    let plain_module = bases
        .named_children(&mut cursor)
        .all(|base| matches!(model.node_text(base), "nn.Module" | "torch.nn.Module" | "Module"));
    if !plain_module {
        return None;
    }
    let body = class.field("body")?;
    let init = model.all_functions().iter().copied().find(|f| {
        ast::contains(body, *f)
            && model.method_class(*f).is_some_and(|c| c.id() == class.id())
            && ast::function_name(*f, model.text) == Some("__init__")
    })?;
    let mut layers = Layers { class: class_name, parameters: 0.0, kept_per_sample: 0.0, dense_only: true };
    for call in model.calls_within(init) {
        let name = model.callee_name(call)?;
        if INERT_CALLS.contains(&name) || PARAMETER_FREE.contains(&name) {
            continue;
        }
        let repeats = repeats(model, call, init)?;
        let literal = |index: usize, keyword: &str| {
            ast::keyword_arg(call, keyword, model.text)
                .or_else(|| ast::positional_args(call).get(index).copied())
                .and_then(|v| literal_number(model, v))
        };
        let (parameters, kept, dense) = match name {
            "Linear" => {
                let (inputs, outputs) = (literal(0, "in_features")?, literal(1, "out_features")?);
                let bias = ast::keyword_arg(call, "bias", model.text).is_none_or(|b| b.kind() != "false");
                (inputs * outputs + if bias { outputs } else { 0.0 }, outputs, true)
            }
            "LayerNorm" | "BatchNorm1d" | "BatchNorm2d" | "BatchNorm3d" | "RMSNorm" => {
                let width = literal(0, "normalized_shape").or_else(|| literal(0, "num_features"))?;
                (2.0 * width, width, true)
            }
            "Embedding" => (literal(0, "num_embeddings")? * literal(1, "embedding_dim")?, 0.0, false),
            "Conv1d" | "Conv2d" | "Conv3d" => {
                let (inputs, outputs) = (literal(0, "in_channels")?, literal(1, "out_channels")?);
                let dimensions = f64::from(name.as_bytes()[4] - b'0');
                let kernel = literal(2, "kernel_size")?.powf(dimensions);
                (inputs * outputs * kernel + outputs, 0.0, false)
            }
            other => {
                let inner = layers_of_class(model, local_class(model, other)?, depth + 1)?;
                (inner.parameters, inner.kept_per_sample, inner.dense_only)
            }
        };
        layers.parameters += repeats * parameters;
        layers.kept_per_sample += repeats * kept;
        layers.dense_only &= dense;
    }
    (layers.parameters > 0.0).then_some(layers)
}

/// How many times a layer call in `__init__` runs: 1, or the literal counts of the
/// `range(n)` comprehensions and loops around it. `None` for a loop over anything else.
fn repeats<'a>(model: &Model<'a>, call: Node<'a>, init: Node<'a>) -> Option<f64> {
    let mut count = 1.0;
    for ancestor in model.ancestors(call) {
        if ancestor.id() == init.id() {
            break;
        }
        let iterable = match ancestor.kind() {
            "for_statement" => ancestor.field("right"),
            "list_comprehension" | "generator_expression" => {
                let mut cursor = ancestor.walk();
                let clause = ancestor.named_children(&mut cursor).find(|c| c.kind() == "for_in_clause");
                clause.and_then(|c| c.field("right"))
            }
            _ => continue,
        };
        let iterable = iterable?;
        if iterable.kind() != "call" || model.callee_name(iterable) != Some("range") {
            return None;
        }
        let [n] = ast::positional_args(iterable)[..] else { return None };
        count *= literal_number(model, n)?;
    }
    Some(count)
}

/// An integer literal, or a product, sum or difference of them (`16 * 5 * 5`).
fn literal_number(model: &Model<'_>, node: Node<'_>) -> Option<f64> {
    match node.kind() {
        "integer" => model.node_text(node).replace('_', "").parse().ok(),
        "parenthesized_expression" => literal_number(model, node.named_child(0)?),
        "tuple" => {
            // A square kernel `(3, 3)`: one side.
            let first = node.named_child(0)?;
            let side = literal_number(model, first)?;
            let mut cursor = node.walk();
            node.named_children(&mut cursor).all(|c| literal_number(model, c) == Some(side)).then_some(side)
        }
        "binary_operator" => {
            let (left, right) =
                (literal_number(model, node.field("left")?)?, literal_number(model, node.field("right")?)?);
            match model.node_text(node.field("operator")?) {
                "*" => Some(left * right),
                "+" => Some(left + right),
                "-" => Some(left - right),
                "//" => Some((left / right).floor()),
                _ => None,
            }
        }
        _ => None,
    }
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
            ("bigscience/bloom-1b7", Some(1.7e9)),
            ("bigscience/bloom-7b1", Some(7.1e9)),
            ("bigscience/bloom", Some(176e9)),
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

    fn layers_of(text: &str, variable: &str) -> Option<Layers> {
        let tree = crate::parse::parse(text, None);
        let model = Model::new(text, &tree, crate::semantic::LintContext::default());
        let use_site = model.text.rfind(variable).expect("the variable is used");
        let call = model.descendant_for_byte_range(use_site, use_site + variable.len()).expect("a node");
        layers_of_value(&model, ast::callee(call).expect("a call of the module"), 0)
    }

    #[test]
    fn layers_add_up_from_literal_sizes() {
        let toy = "import torch.nn as nn\nclass Toy(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.a = nn.Linear(10, 32)\n        self.act = nn.ReLU()\n        self.b = nn.Linear(32, 5, bias=False)\nm = Toy().to('cuda')\nm = DDP(m)\nm(x)\n";
        let layers = layers_of(toy, "m(x)").expect("known");
        assert_eq!((layers.parameters, layers.kept_per_sample, layers.dense_only), (352.0 + 160.0, 37.0, true));
        let stacked = "import torch.nn as nn\nclass S(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.e = nn.Embedding(100, 8)\n        self.c = nn.ModuleList([nn.Conv2d(8, 8, (3, 3)) for _ in range(2 * 2)])\nnet = S()\nnet(x)\n";
        let layers = layers_of(stacked, "net(x)").expect("known");
        assert_eq!((layers.parameters, layers.dense_only), (800.0 + 4.0 * (8.0 * 8.0 * 9.0 + 8.0), false));
        // A size from a variable, a helper that builds layers, a base class of the project: unknown.
        let unknown = "import torch.nn as nn\nclass U(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.a = nn.Linear(d, 4)\nclass H(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.a = make_layers(4)\nclass B(Base):\n    def __init__(self):\n        super().__init__()\n        self.a = nn.Linear(4, 4)\nu = U(3)\nh = H()\nb = B()\nu(x)\nh(x)\nb(x)\n";
        for call in ["u(x)", "h(x)", "b(x)"] {
            assert_eq!(layers_of(unknown, call), None, "{call}");
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
