//! CUL203 alloc-conf-after-cuda-init.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::cuda_env::alloc_conf;
use crate::diagnostic::Severity;
use crate::fix::{Applicability, Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::semantic::environ::EnvSetting;
use crate::semantic::{Model, ast};
use crate::text::{TextRange, line_ending};

pub const RULE: Rule = Rule {
    code: "CUL203",
    name: "alloc-conf-after-cuda-init",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/alloc_conf_after_cuda_init.scm"),
    prefilter: Prefilter { all_of: &[&["ALLOC_CONF"], &["environ", "putenv"]], scan: None },
    check,
    doc: DOC,
    knowledge: Some("cuda/oom-fragmentation"),
    deprecated: false,
    quiet_in_test_code: false,
    needs_hardware: false,
};

const DOC: &str = r#"# alloc-conf-after-cuda-init (CUL203)

## What it does
Flags code that sets `PYTORCH_CUDA_ALLOC_CONF` or `PYTORCH_ALLOC_CONF` (through
`os.environ[...] =`, `os.environ.setdefault`, `os.environ.update` or `os.putenv`) after CUDA has
been initialised, in execution order.

CUDA is initialised by any CUDA tensor (`.cuda()`, `.to("cuda")`, a factory with a CUDA device,
a model loaded with a CUDA `device_map`), by `torch.cuda.set_device`, `current_device`,
`get_device_name`, `get_device_capability`, `get_device_properties`, `is_bf16_supported`,
`synchronize`, `mem_get_info`, and by entering `with torch.cuda.device(...)`. It is **not**
initialised by `import torch`, `is_available()`, `device_count()`, `manual_seed_all()`,
`memory_allocated()`, `empty_cache()`, `torch.device("cuda")`, `torch.backends.*` flags or
`torch.amp.GradScaler("cuda")`; setting the variable after those is fine. (Checked on a GPU with
torch 2.11.)

## Why is this bad?
The caching allocator reads its configuration once, when CUDA is initialised. A setting made
later is silently ignored: `expandable_segments:True` or `max_split_size_mb` never take effect,
and the fragmentation they were meant to prevent still ends in an out-of-memory error.

The `backend:` key (`backend:cudaMallocAsync`) is stricter: it is read when torch is imported.
Set after `import torch`, it makes CUDA initialisation fail, so it must come before the import.
(`backend:native` is the default, so setting it late only matters after CUDA initialisation.)

## Example
```python
import os
import torch

model = Net().cuda()
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
```

## Use instead
```python
import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
import torch

model = Net().cuda()
```
Or set the variable in the shell that launches the script.

## Fix safety
The fix moves the statement to the top of the module, right after `import os` and before
`import torch`. It is safe when every value it sets is a literal and the statement runs
unconditionally. It is unsafe under an `if`, a loop or a `try`, because the setting then applies
on every run, and when the file names the variable more than once, because moving one setting
can change which one wins. A value computed at run time (`args.alloc_conf`) cannot move, so there
is no fix. Several late settings move together, in their order, so the last of them still
wins among them. No fix is offered when the top of the module still runs after CUDA is
initialised (a CUDA call above every import).

## References
- Knowledge entry: `cuda/oom-fragmentation` (`culint explain`)
- PyTorch: CUDA semantics, optimizing memory usage with `PYTORCH_CUDA_ALLOC_CONF` — https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf
"#;

/// The variables the caching allocator reads its configuration from.
pub const ALLOC_CONF_VARIABLES: &[&str] = &["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"];

/// Packages whose import imports torch, so `backend:` set after them comes too late.
const IMPORT_TORCH: &[&str] =
    &["torch", "torchvision", "torchaudio", "accelerate", "lightning", "pytorch_lightning", "deepspeed", "timm"];

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let settings = model.env_settings(candidate.node);
    let Some(setting) = settings.iter().find(|s| ALLOC_CONF_VARIABLES.contains(&s.name)) else { return };
    let Some(late) = lateness(model, setting) else { return };
    let statement = setting.statement().start_byte();
    let fix = checker
        .memo(0, || moves_to_top(model))
        .into_iter()
        .find(|group| group.statements.contains(&statement))
        .map(|group| group.fix);
    let diagnostic = checker.report_node(setting.node, late.message);
    diagnostic.with_related(TextRange::of(late.runs_first), late.note);
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// Why a setting comes too late for the allocator.
struct Lateness<'a> {
    message: String,
    /// What runs before it and reads the configuration: a torch import or a CUDA initialisation.
    runs_first: Node<'a>,
    note: &'static str,
}

fn lateness<'a>(model: &Model<'a>, setting: &EnvSetting<'a>) -> Option<Lateness<'a>> {
    let sets_backend = setting.literal_value(model).is_some_and(|v| switches_backend(&v));
    if let Some(import) = sets_backend.then(|| torch_imported_before(model, setting.node)).flatten() {
        let message = format!(
            "`backend` in `{}` is read when torch is imported: set after the import, it makes CUDA initialisation fail",
            setting.name
        );
        return Some(Lateness { message, runs_first: import, note: "torch is imported here" });
    }
    let init = model.cuda_initialised_before(setting.node)?;
    let message = format!("`{}` is set after CUDA is initialised, so the allocator never reads it", setting.name);
    Some(Lateness { message, runs_first: init, note: "CUDA is initialised here" })
}

/// Whether an allocator config string switches the backend to `cudaMallocAsync`. torch picks the
/// backend when it is imported and stops at CUDA initialisation when the config later disagrees;
/// `backend:native` late agrees with the default, so it is only subject to the CUDA-init check.
fn switches_backend(config: &str) -> bool {
    alloc_conf::options(config).iter().any(|option| option.key == "backend" && option.value == "cudaMallocAsync")
}

/// The import of torch (or of a package that imports it) that runs before `node`: earlier at
/// module level, or at module level at all when `node` sits in a function (functions run after
/// the module's imports), or earlier in the same function.
fn torch_imported_before<'a>(model: &Model<'a>, node: Node<'a>) -> Option<Node<'a>> {
    let function = model.enclosing_function(node).map(|f| f.id());
    model
        .imports
        .statements
        .iter()
        .filter(|statement| {
            statement.modules.iter().any(|m| IMPORT_TORCH.contains(&m.split('.').next().unwrap_or_default()))
        })
        .filter_map(|statement| model.descendant_for_byte_range(statement.range.start_byte, statement.range.end_byte))
        .find(|import| {
            let scope = model.enclosing_function(*import).map(|f| f.id());
            match (scope, function) {
                (None, Some(_)) => statement_is_unconditional(*import),
                (None, None) | (Some(_), Some(_)) => scope == function && ast::precedes(*import, node),
                (Some(_), None) => false,
            }
        })
}

fn statement_is_unconditional(statement: Node<'_>) -> bool {
    statement.parent().is_some_and(|p| p.kind() == "module")
}

/// Settings that go to the same place at the top, moved there together by one fix.
#[derive(Clone)]
struct MoveToTop {
    /// Where each moved statement starts.
    statements: Vec<usize>,
    fix: Fix,
}

/// A late setting's statement, bound for a place at the top.
struct Moved<'a> {
    statement: Node<'a>,
    unconditional: bool,
    /// The variable it sets.
    name: &'a str,
}

/// The fixes that move every late, movable setting of the allocator to the top of the module.
/// Settings bound for the same place move together, in their order: moved one at a time, each
/// would land before the one moved before it, reversing which of them wins, and a script with
/// many of them would need a fix pass for each.
fn moves_to_top(model: &Model<'_>) -> Vec<MoveToTop> {
    let mut bound: Vec<(Placement, Vec<Moved<'_>>)> = Vec::new();
    for node in allocator_settings(model) {
        let settings = model.env_settings(node);
        let Some(setting) = settings.iter().find(|s| ALLOC_CONF_VARIABLES.contains(&s.name)) else { continue };
        let statement = setting.statement();
        let whole_statement = statement.kind() == "expression_statement"
            && statement.named_child_count() == 1
            && statement.named_child(0).is_some_and(|c| c.id() == node.id());
        if !whole_statement || !sets_only_literals(model, node, &settings) || lateness(model, setting).is_none() {
            continue;
        }
        let Some(placement) = placement_at_top(model, setting) else { continue };
        if TextRange::of(statement).start <= placement.at || !placement_comes_first(model, &placement, setting) {
            continue;
        }
        let moved = Moved { statement, unconditional: runs_unconditionally(statement), name: setting.name };
        match bound.iter_mut().find(|(p, _)| *p == placement) {
            Some((_, statements)) => statements.push(moved),
            None => bound.push((placement, vec![moved])),
        }
    }
    // With several settings of the variables, moving them can change which of them wins.
    let set_once = ALLOC_CONF_VARIABLES.iter().map(|v| model.text.matches(v).count()).sum::<usize>() == 1;
    bound
        .into_iter()
        .filter_map(|(placement, statements)| {
            let nodes: Vec<Node<'_>> = statements.iter().map(|moved| moved.statement).collect();
            let taken = edits::take_statements(model, &nodes)?;
            let safe = set_once && statements.iter().all(|moved| moved.unconditional);
            let applicability = if safe { Applicability::Safe } else { Applicability::Unsafe };
            let title = match statements.as_slice() {
                [one] => format!("Set `{}` at the top of the module, before `import torch`", one.name),
                all => format!(
                    "Set the {} allocator settings at the top of the module, in their order, before `import torch`",
                    all.len()
                ),
            };
            let moved: Vec<&str> = taken.iter().map(|(_, moved)| moved.as_str()).collect();
            let mut fix_edits: Vec<Edit> = taken.iter().map(|(removal, _)| removal.clone()).collect();
            fix_edits.push(placement.insertion(model.text, &moved));
            Some(MoveToTop {
                statements: nodes.iter().map(|n| n.start_byte()).collect(),
                fix: Fix::new(title, applicability, fix_edits),
            })
        })
        .collect()
}

/// Every assignment or call that sets an allocator variable, in source order: found from the
/// variables' names in the text rather than by walking the tree.
fn allocator_settings<'a>(model: &Model<'a>) -> Vec<Node<'a>> {
    let mut found: Vec<Node<'a>> = Vec::new();
    for variable in ALLOC_CONF_VARIABLES {
        for (at, _) in model.text.match_indices(variable) {
            let Some(name) = model.descendant_for_byte_range(at, at + variable.len()) else { continue };
            // The name sits in a string or keyword a few levels below the assignment or call.
            let setter = std::iter::successors(Some(name), |n| n.parent()).take(6).find(|n| {
                model
                    .env_settings(*n)
                    .iter()
                    .any(|s| s.name == *variable && s.name_node.start_byte() <= at && at < s.name_node.end_byte())
            });
            if let Some(setter) = setter
                && !found.iter().any(|n| n.id() == setter.id())
            {
                found.push(setter);
            }
        }
    }
    found.sort_by_key(|n| n.start_byte());
    found
}

/// Where moved settings go, and what goes with them: `at` is the end of a line when the lines
/// follow a line break, else the start of a line.
#[derive(PartialEq)]
struct Placement {
    at: usize,
    /// The import the moved lines need before them, when it is not already there.
    import_line: Option<String>,
    lines_follow_break: bool,
}

impl Placement {
    fn insertion(&self, text: &str, moved: &[&str]) -> Edit {
        let eol = line_ending(text);
        let lines = self.import_line.as_deref().into_iter().chain(moved.iter().copied());
        let content: String = if self.lines_follow_break {
            lines.map(|line| format!("{eol}{line}")).collect()
        } else {
            lines.map(|line| format!("{line}{eol}")).collect()
        };
        Edit::insertion(self.at, content)
    }
}

/// Whether the moved setting would run before what makes it late: no CUDA initialisation (and,
/// for a backend switch, no torch import) before the statement that follows the placement.
fn placement_comes_first<'a>(model: &Model<'a>, placement: &Placement, setting: &EnvSetting<'a>) -> bool {
    let root = model.tree.root_node();
    let mut cursor = root.walk();
    let Some(next) = root.named_children(&mut cursor).find(|child| child.start_byte() >= placement.at) else {
        return false;
    };
    let sets_backend = setting.literal_value(model).is_some_and(|v| switches_backend(&v));
    model.cuda_initialised_before(next).is_none() && !(sets_backend && torch_imported_before(model, next).is_some())
}

/// Every value the call or assignment sets is a literal, so it can run before anything else.
fn sets_only_literals(model: &Model<'_>, node: Node<'_>, all: &[EnvSetting<'_>]) -> bool {
    let values_literal = all.iter().all(|s| s.value.is_some_and(|v| is_constant(model, v)));
    let arguments_parsed = match node.kind() {
        "call" => ast::arguments(node).is_some_and(|args| {
            let mut cursor = args.walk();
            args.named_children(&mut cursor).filter(|a| a.kind() != "comment").all(|a| match a.kind() {
                "dictionary" => {
                    let mut pairs = a.walk();
                    a.named_children(&mut pairs).filter(|p| p.kind() != "comment").all(|p| p.kind() == "pair")
                }
                _ => true,
            })
        }),
        _ => true,
    };
    !all.is_empty() && values_literal && arguments_parsed && all.len() == expected_settings(node)
}

/// How many variables the statement's syntax sets, to notice keys that are not literal names.
fn expected_settings(node: Node<'_>) -> usize {
    match node.kind() {
        "call" => {
            let args = ast::positional_args(node);
            match args.first() {
                Some(dictionary) if dictionary.kind() == "dictionary" => {
                    let mut cursor = dictionary.walk();
                    dictionary.named_children(&mut cursor).filter(|p| p.kind() == "pair").count()
                        + ast::keyword_args(node).len()
                }
                Some(_) => 1,
                None => ast::keyword_args(node).len(),
            }
        }
        _ => 1,
    }
}

fn is_constant(model: &Model<'_>, value: Node<'_>) -> bool {
    match value.kind() {
        "string" => ast::string_value(value, model.text).is_some(),
        "concatenated_string" => {
            let mut cursor = value.walk();
            value.named_children(&mut cursor).all(|part| is_constant(model, part))
        }
        "integer" | "float" | "true" | "false" => true,
        _ => false,
    }
}

/// At module level, or directly in a function body: not under a condition, loop or `try`.
fn runs_unconditionally(statement: Node<'_>) -> bool {
    let Some(parent) = statement.parent() else { return false };
    parent.kind() == "module"
        || (parent.kind() == "block" && parent.parent().is_some_and(|p| p.kind() == "function_definition"))
}

/// Where the moved statement goes: right after the top-level import that binds the name it
/// uses (`os`, `environ`), when that comes before torch is imported; otherwise right before the
/// first torch import, together with the import it needs.
fn placement_at_top(model: &Model<'_>, setting: &EnvSetting<'_>) -> Option<Placement> {
    let text = model.text;
    let environ_name = environ_root(setting.node)?;
    let binding = model.imports.binding(model.node_text(environ_name))?;
    let root = model.tree.root_node();
    let binding_import = model
        .descendant_for_byte_range(binding.statement.start_byte, binding.statement.end_byte)
        .filter(|n| matches!(n.kind(), "import_statement" | "import_from_statement"))
        .filter(|n| statement_is_unconditional(*n));
    let first_torch_import = {
        let mut cursor = root.walk();
        root.named_children(&mut cursor).find(|child| imports_torch(model, *child))
    };
    match (binding_import, first_torch_import) {
        (Some(import), torch) if torch.is_none_or(|t| ast::precedes(import, t)) => Some(Placement {
            at: edits::end_of_line(text, import.end_byte()),
            import_line: None,
            lines_follow_break: true,
        }),
        (_, Some(torch)) => {
            let line_start = crate::text::line_start(text, torch.start_byte());
            if line_start != torch.start_byte() {
                return None;
            }
            let import_line = import_line_for(model.node_text(environ_name), &binding.qualified)?;
            Some(Placement { at: line_start, import_line: Some(import_line), lines_follow_break: false })
        }
        (None, None) => {
            let import_line = import_line_for(model.node_text(environ_name), &binding.qualified)?;
            let insertion = edits::add_import(model, &import_line);
            let lines_follow_break = !insertion.content.ends_with('\n');
            Some(Placement { at: insertion.range.start, import_line: Some(import_line), lines_follow_break })
        }
        _ => None,
    }
}

/// Whether a top-level statement imports torch or a package that imports it.
fn imports_torch(model: &Model<'_>, statement: Node<'_>) -> bool {
    matches!(statement.kind(), "import_statement" | "import_from_statement")
        && model.imports.statements.iter().any(|s| {
            s.range.start_byte == statement.start_byte()
                && s.modules.iter().any(|m| IMPORT_TORCH.contains(&m.split('.').next().unwrap_or_default()))
        })
}

/// The name the statement reaches `os` through: `os` in `os.environ[...]`, `environ`, `putenv`.
fn environ_root(node: Node<'_>) -> Option<Node<'_>> {
    let target = match node.kind() {
        "assignment" => node.field("left")?.field("value")?,
        _ => ast::callee(node)?,
    };
    ast::root_identifier(target)
}

/// An import that binds `local` to `qualified` (`os`, `os.environ` or `os.putenv`).
fn import_line_for(local: &str, qualified: &str) -> Option<String> {
    let alias = |name: &str| if name == local { String::new() } else { format!(" as {local}") };
    match qualified {
        "os" => Some(format!("import os{}", alias("os"))),
        "os.environ" => Some(format!("from os import environ{}", alias("environ"))),
        "os.putenv" => Some(format!("from os import putenv{}", alias("putenv"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::fix::{Applicability, apply_fixes};
    use crate::lint::{LintContext, LintSettings, RuleSet, lint_text};

    fn findings(source: &str) -> Vec<crate::diagnostic::Diagnostic> {
        let settings = LintSettings { rules: RuleSet::from_selectors(&["CUL203"]), ..Default::default() };
        lint_text(source, LintContext::default(), &settings)
    }

    fn applicability(source: &str) -> Option<Applicability> {
        let found = findings(source);
        assert_eq!(found.len(), 1, "{source}");
        found[0].fix.as_ref().map(|f| f.applicability)
    }

    const PREAMBLE: &str = "import os\nimport torch\n\nx = torch.ones(1).cuda()\n";

    #[test]
    fn literal_set_once_and_unconditionally_is_safe() {
        let source = format!("{PREAMBLE}os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"\n");
        assert_eq!(applicability(&source), Some(Applicability::Safe));
        let fix = findings(&source).remove(0).fix.unwrap();
        let fixed = apply_fixes(&source, [&fix], Applicability::Safe).text;
        assert_eq!(
            fixed,
            "import os\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"\nimport torch\n\nx = torch.ones(1).cuda()\n"
        );
    }

    #[test]
    fn conditional_or_repeated_settings_are_unsafe() {
        let conditional = format!(
            "{PREAMBLE}if x.numel():\n    os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"\n"
        );
        assert_eq!(applicability(&conditional), Some(Applicability::Unsafe));
        let repeated = format!(
            "# PYTORCH_CUDA_ALLOC_CONF is also set by the launcher\n{PREAMBLE}os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"\n"
        );
        assert_eq!(applicability(&repeated), Some(Applicability::Unsafe));
    }

    #[test]
    fn computed_values_cannot_move() {
        let source = format!("{PREAMBLE}os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = conf\n");
        assert_eq!(applicability(&source), None);
        let update = format!(
            "{PREAMBLE}os.environ.update({{\"PYTORCH_CUDA_ALLOC_CONF\": \"expandable_segments:True\", **extra}})\n"
        );
        assert_eq!(applicability(&update), None);
    }

    /// Fixes every finding the way `culint check --fix --unsafe-fixes` does, in one pass.
    fn fixed_once(source: &str) -> String {
        let found = findings(source);
        apply_fixes(source, found.iter().filter_map(|d| d.fix.as_ref()), Applicability::Unsafe).text
    }

    #[test]
    fn late_settings_move_together_in_their_order() {
        let settings: String = (1..=12)
            .map(|n| format!("os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"max_split_size_mb:{n}\"\n"))
            .collect();
        let source = format!("{PREAMBLE}{settings}");
        let found = findings(&source);
        assert_eq!(found.len(), 12);
        let fix = found[0].fix.clone().expect("a fix");
        assert!(found.iter().all(|d| d.fix.as_ref() == Some(&fix)), "every finding offers the one move");
        assert_eq!(fix.applicability, Applicability::Unsafe, "several settings: which wins may change");
        let fixed = fixed_once(&source);
        assert_eq!(fixed, format!("import os\n{settings}import torch\n\nx = torch.ones(1).cuda()\n"));
        assert!(findings(&fixed).is_empty(), "one pass settles them all");
    }

    #[test]
    fn a_block_emptied_by_the_move_keeps_pass() {
        let source = format!(
            "{PREAMBLE}if x.numel():\n    os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"max_split_size_mb:1\"\n    os.environ[\"PYTORCH_ALLOC_CONF\"] = \"max_split_size_mb:2\"\n"
        );
        assert_eq!(
            fixed_once(&source),
            "import os\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"max_split_size_mb:1\"\nos.environ[\"PYTORCH_ALLOC_CONF\"] = \"max_split_size_mb:2\"\nimport torch\n\nx = torch.ones(1).cuda()\nif x.numel():\n    pass\n"
        );
    }

    #[test]
    fn no_fix_when_the_top_still_follows_cuda_initialisation() {
        // No torch import to go before, and `import os` comes after the initialisation.
        let source =
            "x = make().cuda()\nimport os\n\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"\n";
        assert_eq!(applicability(source), None);
    }

    #[test]
    fn crlf_line_endings_are_kept() {
        let source = "import os\r\nimport torch\r\nx = torch.ones(1).cuda()\r\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"\r\n";
        let fix = findings(source).remove(0).fix.unwrap();
        let fixed = apply_fixes(source, [&fix], Applicability::Safe).text;
        assert_eq!(
            fixed,
            "import os\r\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"\r\nimport torch\r\nx = torch.ones(1).cuda()\r\n"
        );
    }
}
