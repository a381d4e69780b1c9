//! CUL102 torch-load-to-saved-device.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule};
use crate::diagnostic::Severity;
use crate::fix::{Applicability, Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::prefilter;
use crate::semantic::{Model, ast, names};

pub const RULE: Rule = Rule {
    code: "CUL102",
    name: "torch-load-to-saved-device",
    severity: Severity::Warning,
    fix: FixAvailability::Always,
    query: include_str!("../../../queries/python/torch_load_to_saved_device.scm"),
    prefilter: Prefilter {
        all_of: &[
            &["load(", "load (", " load as", "load,"],
            &["cuda", "CUDA", "Cuda", "nccl", "NCCL", "current_accelerator"],
            &["torch"],
        ],
        scan: Some(could_load_without_map_location),
    },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-other-processes"),
    deprecated: false,
    quiet_in_test_code: true,
    needs_hardware: false,
};

const DOC: &str = r#"# torch-load-to-saved-device (CUL102)

## What it does
Flags `torch.load(...)` without `map_location` in a file that uses CUDA: one that names CUDA in
its code, or NCCL, which runs only on CUDA devices (`init_process_group("nccl")`).

## Why is this bad?
Without `map_location`, every tensor in the file comes back on the device it was saved from,
usually `cuda:0`. The checkpoint then occupies GPU 0 a second time while it is copied into the
model. In a distributed run every rank does this, so GPU 0 receives one full extra copy per rank
and runs out of memory, while the other GPUs are fine. On a machine without that device the load
fails outright.

Not flagged: loads whose path or result is clearly data rather than a checkpoint (`dataset.pt`,
`features = torch.load(...)`, embeddings, token caches) or a small state without model weights
(RNG state, metrics, scheduler or scaler state, an optimizer's param groups), calls that pass
`map_location` (also positionally or through `**kwargs`), and files that never use CUDA or
hide every GPU from their own process first (a module-level
`os.environ["CUDA_VISIBLE_DEVICES"] = ""`). A single-process file that reads back what it saved
itself earlier in the run is not flagged either: the tensors return to the device this process
uses (the save may write elsewhere first and move the file into place, as a cache does). A resume
that loads, above the training loop, the checkpoints that loop saves is flagged: the file comes
from an earlier run.

## Example
```python
model.load_state_dict(torch.load("checkpoint.pt"))
```

## Use instead
```python
model.load_state_dict(torch.load("checkpoint.pt", map_location="cpu"))
```

## Fix safety
The fix adds `map_location="cpu"`. It is safe when the result goes straight into
`load_state_dict` (directly, by key, or through a name used only there), which copies the values
into tensors that already sit on their device. Otherwise it is unsafe: code that uses the loaded
tensors directly now gets them on the CPU.

## References
- Knowledge entry: `cuda/oom-other-processes` (`culint explain`)
- PyTorch: `torch.load` — https://pytorch.org/docs/stable/generated/torch.load.html
- PyTorch: saving and loading models across devices — https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-model-across-devices
"#;

const TORCH_LOAD: &[&str] = &["torch.load", "torch.serialization.load"];
const TORCH_SAVE: &[&str] = &["torch.save", "torch.serialization.save"];
/// Calls that put a file at a new path: `(from, to)`.
const FILE_MOVES: &[&str] =
    &["shutil.move", "shutil.copyfile", "shutil.copy", "shutil.copy2", "os.replace", "os.rename"];

/// Words in a path or a variable name that say the file holds data, or a small state, rather than
/// model weights.
const DATA_WORDS: &[&str] = &[
    "data",
    "dataset",
    "datasets",
    "feature",
    "features",
    "feats",
    "embedding",
    "embeddings",
    "embeds",
    "token",
    "tokens",
    "tokenized",
    "label",
    "labels",
    "targets",
    "indices",
    "vocab",
    "samples",
    "cache",
    "cached",
    "stats",
    "latents",
    "activations",
    "corpus",
    // Small states that hold no CUDA tensors worth a second copy.
    "rng",
    "metrics",
    "metadata",
    "meta",
    "scheduler",
    "sched",
    "scaler",
    "hparams",
    "config",
];

/// Some `load(...)` call that could be `torch.load` and does not pass `map_location`, or an
/// alias of `load` whose calls the text cannot show. Library code that loads checkpoints nearly
/// always passes `map_location`, and other libraries' `json.load(f)` and `yaml.load(f)` are no
/// `torch.load`: such files need not be parsed for this rule.
fn could_load_without_map_location(text: &str) -> bool {
    if text.contains("load as") {
        return true;
    }
    memchr::memmem::find_iter(text.as_bytes(), b"load").any(|at| {
        let starts_a_name = text[..at].chars().next_back().is_none_or(|c| !prefilter::is_name_char(c));
        let after = &text[at + "load".len()..];
        let open = after.trim_start_matches([' ', '\t']);
        starts_a_name
            && open.starts_with('(')
            && receiver_could_be_torch(text, at)
            && prefilter::passes_keyword(text, text.len() - open.len(), "map_location") != Some(true)
    })
}

/// Whether the receiver of the `load` at `at` could resolve to `torch` or `torch.serialization`:
/// no receiver (`from torch import load`), a chain rooted at `torch` or `serialization`, or at a
/// name some `as` binds (`import torch as th`). Anything the scan cannot read counts.
fn receiver_could_be_torch(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end_matches([' ', '\t']);
    let Some(chain) = before.strip_suffix('.') else { return true };
    let chain = chain.trim_end_matches([' ', '\t']);
    let start = chain
        .char_indices()
        .rev()
        .find(|(_, c)| !(prefilter::is_name_char(*c) || *c == '.'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let receiver = &chain[start..];
    let root = receiver.split('.').next().unwrap_or_default();
    let read_whole = start == 0 || chain[..start].ends_with([' ', '\t', '\n', '(', '[', '{', ',', '=', ':', ';']);
    if root.is_empty() || !read_whole {
        return true;
    }
    // `as <root>`: an import could bind it.
    matches!(root, "torch" | "serialization")
        || prefilter::whole_words(text, root).any(|at| prefilter::follows_keyword(text, "as", at))
}

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let call = candidate.node;
    if !model.mentions_cuda || !model.call_resolves_to(call, TORCH_LOAD) || model.file_fact(hides_every_gpu) {
        return;
    }
    let maps_location = ast::keyword_arg(call, "map_location", model.text).is_some()
        || ast::positional_args(call).len() >= 2
        || ast::has_dictionary_splat(call)
        || has_list_splat(call);
    if maps_location || loads_data(model, call) || reloads_own_save(model, call) || saves_only_from_the_cpu(model) {
        return;
    }
    let fix = add_map_location(model, call);
    let diagnostic = checker.report_node(
        call,
        "`torch.load` without `map_location` puts every tensor back on the device it was saved from, usually GPU 0",
    );
    diagnostic.with_fact(match model.cuda_evidence() {
        Some(quote) => format!("device: the script runs on CUDA, from {quote}"),
        None => "device: the script runs on CUDA (the file names it)".to_owned(),
    });
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// A single-process script that reads back the file it saved itself earlier in the run
/// (`torch.save(model, f)` then `model = torch.load(f)` under the same `open(args.save, ...)`, as
/// pytorch/examples' word_language_model does): the tensors return to the device they were saved
/// from, which is the device this process uses. With several processes the file may come from rank 0's GPU, so
/// distributed files are not exempt.
fn reloads_own_save<'a>(model: &Model<'a>, load: Node<'a>) -> bool {
    let distributed = model.calls_to(names::INIT_PROCESS_GROUP).next().is_some()
        || model.calls_to(names::DDP).next().is_some()
        || model.frameworks().places_model();
    if distributed {
        return false;
    }
    let Some(loaded) = saved_path(model, ast::positional_args(load).first().copied(), load, "f") else {
        return false;
    };
    // Written elsewhere first and moved into place, as a cache that must never be read half
    // written is (MONAI's `PersistentDataset`): the save names where the move comes from.
    let moved_from: Vec<&str> = model
        .calls_to(FILE_MOVES)
        .filter_map(|moved| match ast::positional_args(moved)[..] {
            [from, to, ..] if model.node_text(to) == loaded => Some(model.node_text(path_itself(model, from))),
            _ => None,
        })
        .collect();
    // The save must come first: a load above every save of its path reads what an earlier run
    // left (`if opt.epoch != 0: G.load_state_dict(torch.load(...))` resuming a GAN whose training
    // loop saves below), from whichever GPU that run used. A function that saves outside any loop
    // and is called again (a cache: read the file if it is there, else make and save it) reads
    // what its own earlier call wrote.
    let load_function = model.enclosing_function(load);
    let saved_by_an_earlier_call = |save: Node<'a>| {
        load_function.is_some_and(|function| {
            model.enclosing_function(save).is_some_and(|f| f.id() == function.id())
                && !model
                    .ancestors(save)
                    .take_while(|n| n.id() != function.id())
                    .any(|n| matches!(n.kind(), "for_statement" | "while_statement"))
        })
    };
    model.calls_to(TORCH_SAVE).any(|save| {
        let path = ast::positional_args(save).get(1).copied();
        (ast::precedes(save, load) || saved_by_an_earlier_call(save))
            && saved_path(model, path, save, "f").is_some_and(|saved| saved == loaded || moved_from.contains(&saved))
    })
}

/// A single-process script whose every `torch.save(m.state_dict(), ...)` comes right after `m` was
/// moved to the CPU (`m.eval().cpu()`, `m.to("cpu")`), as pytorch/examples' fast_neural_style
/// saves the models it later stylizes with: the checkpoints it makes hold CPU tensors, which load
/// onto the CPU.
fn saves_only_from_the_cpu(model: &Model<'_>) -> bool {
    let distributed =
        model.calls_to(names::INIT_PROCESS_GROUP).next().is_some() || model.calls_to(names::DDP).next().is_some();
    let saves: Vec<Node<'_>> = model.calls_to(TORCH_SAVE).collect();
    !distributed
        && !saves.is_empty()
        && saves.iter().all(|save| {
            let Some(saved) = ast::positional_args(*save).first().copied() else { return false };
            let text = model.node_text(saved);
            let Some(module) = text.strip_suffix(".state_dict()") else { return false };
            let statement = model.statement_of(*save);
            std::iter::successors(statement.prev_named_sibling(), |s| s.prev_named_sibling()).take(4).any(|before| {
                let before = model.node_text(before);
                before.starts_with(module)
                    && (before.ends_with(".cpu()")
                        || before.ends_with(".to(\"cpu\")")
                        || before.ends_with(".to('cpu')"))
            })
        })
}

/// Asked once per file, not once per `torch.load`: it reads every top-level statement.
fn hides_every_gpu(model: &Model<'_>) -> bool {
    model.hides_every_gpu()
}

/// `path` for `str(path)` or `os.fspath(path)`, which name the same file; anything else as it is.
fn path_itself<'a>(model: &Model<'a>, expression: Node<'a>) -> Node<'a> {
    if expression.kind() != "call" {
        return expression;
    }
    let names_the_path = ast::callee(expression).is_some_and(|callee| model.node_text(callee) == "str")
        || model.call_resolves_to(expression, &["os.fspath"]);
    match ast::positional_args(expression)[..] {
        [path] if names_the_path => path,
        _ => expression,
    }
}

/// The text naming the file of a save or load: the `open(...)` arguments when the argument is
/// the name bound by `with open(...) as f`, else the argument itself.
fn saved_path<'a>(model: &Model<'a>, argument: Option<Node<'a>>, call: Node<'a>, keyword: &str) -> Option<&'a str> {
    let argument = argument.or_else(|| ast::keyword_arg(call, keyword, model.text))?;
    if argument.kind() == "identifier" {
        let name = model.node_text(argument);
        let opened = model.enclosing_with_items(call).into_iter().find_map(|item| {
            let clause = item.parent().filter(|p| p.kind() == "with_item" || p.kind() == "as_pattern")?;
            let binds_name = model.node_text(clause).ends_with(&format!("as {name}"));
            let opens = item.kind() == "call" && ast::callee_name(item, model.text) == Some("open");
            (binds_name && opens).then(|| ast::positional_args(item).first().map(|p| model.node_text(*p)))?
        });
        if let Some(path) = opened {
            return Some(path);
        }
    }
    Some(model.node_text(argument))
}

fn has_list_splat(call: Node<'_>) -> bool {
    let Some(args) = ast::arguments(call) else { return false };
    let mut cursor = args.walk();
    args.named_children(&mut cursor).any(|a| a.kind() == "list_splat")
}

/// The path, or the name the result is stored under, says the file holds data.
fn loads_data(model: &Model<'_>, call: Node<'_>) -> bool {
    let path = ast::positional_args(call).first().copied().or_else(|| ast::keyword_arg(call, "f", model.text));
    let stored_as = call.parent().filter(|p| p.kind() == "assignment").and_then(|assignment| assignment.field("left"));
    [path, stored_as].into_iter().flatten().any(|node| names_data(model.node_text(node)))
}

fn names_data(text: &str) -> bool {
    // Split camelCase too, so `trainData` and `DATA_DIR` both count.
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && previous_lower {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = c.is_ascii_lowercase();
            word.push(c.to_ascii_lowercase());
        } else {
            words.push(std::mem::take(&mut word));
            previous_lower = false;
        }
    }
    words.push(word);
    words.retain(|w| !w.is_empty());
    // An optimizer's param groups: its hyperparameters and the parameters' indices, no tensors.
    let names_param_groups = words.windows(2).any(|pair| pair[0] == "param" && pair[1].starts_with("group"));
    // `dataset_name` labels a run (`saved_models/%s/G_%d.pth" % (opt.dataset_name, epoch)`, a
    // checkpoint per dataset); it does not say the file holds data.
    let names_a_label = |i: usize| {
        matches!(words[i].as_str(), "data" | "dataset" | "datasets")
            && words.get(i + 1).is_some_and(|next| next == "name" || next == "names")
    };
    names_param_groups || words.iter().enumerate().any(|(i, w)| DATA_WORDS.contains(&w.as_str()) && !names_a_label(i))
}

/// Add `map_location="cpu"` as the last argument.
fn add_map_location<'a>(model: &Model<'a>, call: Node<'a>) -> Option<Fix> {
    let args = ast::arguments(call)?;
    let mut cursor = args.walk();
    let last = args.named_children(&mut cursor).filter(|a| a.kind() != "comment").last();
    let edit = match last {
        Some(last) => Edit::insertion(last.end_byte(), ", map_location=\"cpu\""),
        None => Edit::insertion(args.start_byte() + 1, "map_location=\"cpu\""),
    };
    let applicability = if feeds_load_state_dict(model, call) { Applicability::Safe } else { Applicability::Unsafe };
    Some(Fix::new("Add `map_location=\"cpu\"`", applicability, vec![edit]))
}

/// The loaded object only ever reaches `load_state_dict(...)`: passed straight in (or one key of
/// it), or bound to a name whose every other use is such an argument.
fn feeds_load_state_dict<'a>(model: &Model<'a>, call: Node<'a>) -> bool {
    if is_load_state_dict_argument(model, call) {
        return true;
    }
    let Some(assignment) = call.parent().filter(|p| p.kind() == "assignment") else { return false };
    let Some(target) = assignment.field("left").filter(|l| l.kind() == "identifier") else {
        return false;
    };
    let name = model.node_text(target);
    let scope = model.scope_of(call);
    let uses = identifier_uses(model, scope, name, target);
    !uses.is_empty() && uses.iter().all(|u| is_load_state_dict_argument(model, *u))
}

/// `x` in `m.load_state_dict(x)`, `m.load_state_dict(x["model"])`, `m.load_state_dict(x, strict=False)`,
/// `m.load_state_dict(state_dict=x)`.
fn is_load_state_dict_argument(model: &Model<'_>, node: Node<'_>) -> bool {
    let mut value = node;
    while let Some(parent) = value.parent().filter(|p| p.kind() == "subscript") {
        if parent.field("value").is_some_and(|v| v.id() == value.id()) {
            value = parent;
        } else {
            break;
        }
    }
    let Some(parent) = value.parent() else { return false };
    let (args, positional) = match parent.kind() {
        "argument_list" => (parent, true),
        "keyword_argument" if parent.field("name").is_some_and(|n| model.node_text(n) == "state_dict") => {
            let Some(args) = parent.parent() else { return false };
            (args, false)
        }
        _ => return false,
    };
    let Some(outer) = args.parent().filter(|p| p.kind() == "call") else { return false };
    ast::callee_name(outer, model.text) == Some("load_state_dict")
        && (!positional || ast::positional_args(outer).first().is_some_and(|first| first.id() == value.id()))
}

/// Every reading of `name` in `scope` other than `binding`, not inside nested definitions.
fn identifier_uses<'a>(model: &Model<'a>, scope: Node<'a>, name: &str, binding: Node<'a>) -> Vec<Node<'a>> {
    let mut uses = Vec::new();
    let mut stack = vec![scope];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier" && node.id() != binding.id() && model.node_text(node) == name {
            let is_attribute_name =
                node.parent().is_some_and(|p| p.kind() == "attribute" && p.field("attribute") == Some(node));
            let is_keyword_name =
                node.parent().is_some_and(|p| p.kind() == "keyword_argument" && p.field("name") == Some(node));
            if !is_attribute_name && !is_keyword_name {
                uses.push(node);
            }
        }
        if node.id() == scope.id() || !ast::is_function_boundary(node) {
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::could_load_without_map_location;
    use crate::fix::Applicability;
    use crate::lint::{LintContext, LintSettings, RuleSet, lint_text};

    fn applicability(source: &str) -> Option<Applicability> {
        let settings = LintSettings { rules: RuleSet::from_selectors(&["CUL102"]), ..Default::default() };
        let found = lint_text(source, LintContext::default(), &settings);
        assert_eq!(found.len(), 1, "{source}");
        found[0].fix.as_ref().map(|f| f.applicability)
    }

    #[test]
    fn the_scan_reads_which_loads_could_be_torch_load() {
        for text in [
            "torch.load(p)",
            "x = torch . load(p)",
            "import torch as th\nth.load(p)",
            "from torch import serialization as ser\nser.load(p)",
            "torch.serialization.load(p)",
            "from torch import load\nload(p)",
            "from torch import load as read\nread(p)",
            "get_backend().load(p)",
            "(torch).load(p)",
            "«x.load(p)",
        ] {
            assert!(could_load_without_map_location(text), "{text}");
        }
        for text in [
            "json.load(f)",
            "import yaml\ncfg = yaml.load(f)",
            "self.torch.load(p)",
            "torch.load(p, map_location='cpu')",
            "state = download(p)",
        ] {
            assert!(!could_load_without_map_location(text), "{text}");
        }
    }

    #[test]
    fn safe_only_when_the_result_goes_into_load_state_dict() {
        let preamble = "import torch\nmodel = Net().cuda()\n";
        let straight = format!("{preamble}model.load_state_dict(torch.load(p))\n");
        assert_eq!(applicability(&straight), Some(Applicability::Safe));
        let by_key = format!("{preamble}model.load_state_dict(torch.load(p)['model'], strict=False)\n");
        assert_eq!(applicability(&by_key), Some(Applicability::Safe));
        let through_name =
            format!("{preamble}sd = torch.load(p)\nmodel.load_state_dict(sd)\nopt.load_state_dict(sd)\n");
        assert_eq!(applicability(&through_name), Some(Applicability::Safe));
        let used_directly = format!("{preamble}sd = torch.load(p)\nmodel.load_state_dict(sd)\nprint(sd['step'] + 1)\n");
        assert_eq!(applicability(&used_directly), Some(Applicability::Unsafe));
        let as_keyword = format!("{preamble}model.load_state_dict(state_dict=torch.load(p))\n");
        assert_eq!(applicability(&as_keyword), Some(Applicability::Safe));
        let elsewhere = format!("{preamble}model.load_weights(torch.load(p))\n");
        assert_eq!(applicability(&elsewhere), Some(Applicability::Unsafe));
    }
}
