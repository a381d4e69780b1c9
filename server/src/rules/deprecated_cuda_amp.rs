//! CUL303 deprecated-cuda-amp.

use tree_sitter::Node;

use super::Checker;
use super::{Candidate, FixAvailability, Prefilter, Rule, edits};
use crate::diagnostic::Severity;
use crate::fix::{Edit, Fix};
use crate::grammar_ids::FieldChild;
use crate::semantic::{Model, ast, torch_floor};
use crate::text::TextRange;

pub const RULE: Rule = Rule {
    code: "CUL303",
    name: "deprecated-cuda-amp",
    severity: Severity::Warning,
    fix: FixAvailability::Sometimes,
    query: include_str!("../../../queries/python/deprecated_cuda_amp.scm"),
    prefilter: Prefilter { all_of: &[&["cuda.amp", "cuda import amp"]], scan: None },
    check,
    doc: DOC,
    knowledge: None,
    deprecated: true,
    quiet_in_test_code: false,
    needs_hardware: false,
};

const DOC: &str = r#"# deprecated-cuda-amp (CUL303)

## What it does
Flags `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`, `torch.cuda.amp.custom_fwd` and
`torch.cuda.amp.custom_bwd`, however they are reached: `torch.cuda.amp.X(...)`,
`from torch.cuda import amp` then `amp.X(...)`, or `from torch.cuda.amp import X` then `X(...)`.
Each import from `torch.cuda.amp` is reported, and each call or decorator.

## Why is this bad?
These names are deprecated aliases of the device-generic `torch.amp` API. They raise a
`FutureWarning` on every use and will be removed, at which point a training script that relies on
them for mixed precision (and so for its memory budget) stops working. `torch.amp` takes the
device explicitly.

Not flagged: `torch.amp` and `torch.autocast` themselves, `torch.cpu.amp` (out of scope), and
compatibility code for old torch: an import of `torch.cuda.amp` in the `except ImportError` of a
`try`, or a use in the old-torch branch of a version check (`if hasattr(torch, "amp")`,
`if torch.__version__ ...`, `... if _TORCH_GREATER_EQUAL_2_4 else ...`), the check written
out or assigned to a flag first (`HAS_DEVICE = version.parse(torch.__version__) >= ...`, then
`if HAS_DEVICE:`), whatever the flag is called.

## Example
```python
from torch.cuda.amp import GradScaler, autocast

scaler = GradScaler()
with autocast(dtype=torch.float16):
    loss = model(batch)
```

## Use instead
```python
from torch.amp import GradScaler, autocast

scaler = GradScaler("cuda")
with autocast("cuda", dtype=torch.float16):
    loss = model(batch)
```

## Fix safety
The fix is safe: `torch.amp.autocast("cuda", ...)`, `torch.amp.GradScaler("cuda", ...)` and
`torch.amp.custom_fwd(device_type="cuda")` / `custom_bwd(device_type="cuda")` behave as the old
names do. It is unsafe, and says why, when the project declares an older torch than the
replacement needs (`torch.amp.GradScaler` is 2.3 or newer, `torch.amp.custom_fwd(device_type=...)`
2.4 or newer): the floor is the lower bound of the `torch` requirement in the nearest
`pyproject.toml`, `setup.cfg`, `setup.py` or `requirements*.txt` above the file. Positional arguments of `autocast` become keywords, since its parameter order changed.
When the name came from an import, the import is rewritten too (`from torch import amp`,
`from torch.amp import autocast`), together with every use of the imported names; the edit of
the import is shared, so it is applied once. There is no fix when an imported name is used other
than by a call or a decorator (passed around as a value, or rebound), or when the import also
brings in names that `torch.amp` does not have.

## References
- PyTorch: automatic mixed precision, `torch.amp` — https://pytorch.org/docs/stable/amp.html
- PyTorch: AMP examples — https://pytorch.org/docs/stable/notes/amp_examples.html
"#;

const DEPRECATED_MODULE: &str = "torch.cuda.amp";

/// The deprecated names; each has a namesake in `torch.amp`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Api {
    Autocast,
    GradScaler,
    CustomFwd,
    CustomBwd,
}

impl Api {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "autocast" => Some(Api::Autocast),
            "GradScaler" => Some(Api::GradScaler),
            "custom_fwd" => Some(Api::CustomFwd),
            "custom_bwd" => Some(Api::CustomBwd),
            _ => None,
        }
    }

    fn of_qualified(qualified: &str) -> Option<Self> {
        qualified.strip_prefix("torch.cuda.amp.").and_then(Self::from_name)
    }

    fn name(self) -> &'static str {
        match self {
            Api::Autocast => "autocast",
            Api::GradScaler => "GradScaler",
            Api::CustomFwd => "custom_fwd",
            Api::CustomBwd => "custom_bwd",
        }
    }

    /// The oldest torch whose `torch.amp` has the replacement: `torch.amp.GradScaler` came in
    /// 2.3, `torch.amp.custom_fwd(device_type=...)` in 2.4, `torch.amp.autocast` in 1.10.
    fn needs(self) -> torch_floor::Version {
        match self {
            Api::Autocast => (1, 10),
            Api::GradScaler => (2, 3),
            Api::CustomFwd | Api::CustomBwd => (2, 4),
        }
    }

    /// How the call reads with `torch.amp`.
    fn replacement(self) -> String {
        match self {
            Api::Autocast | Api::GradScaler => format!("torch.amp.{}(\"cuda\", ...)", self.name()),
            Api::CustomFwd | Api::CustomBwd => format!("torch.amp.{}(device_type=\"cuda\")", self.name()),
        }
    }
}

/// Parameters of `torch.cuda.amp.autocast`, in order: `torch.amp.autocast` takes `device_type`
/// first and `dtype` before `enabled`, so positional arguments must become keywords.
const CUDA_AUTOCAST_PARAMETERS: &[&str] = &["enabled", "dtype", "cache_enabled"];

fn check<'a>(checker: &mut Checker<'_, 'a>, candidate: &Candidate<'a>) {
    let model = checker.model;
    let node = candidate.node;
    if is_compatibility_fallback(model, node) {
        return;
    }
    match node.kind() {
        "import_from_statement" | "import_statement" => check_import(checker, node),
        "call" => check_use(checker, node, ast::callee(node)),
        "decorator" => check_use(checker, node, node.named_child(0)),
        _ => {}
    }
}

fn check_import<'a>(checker: &mut Checker<'_, 'a>, statement: Node<'a>) {
    let model = checker.model;
    if !imports_deprecated_module(model, statement) {
        return;
    }
    let fix = checker
        .memo(statement.id(), || import_plan(model, statement))
        .map(|edits| fix_for_floor(model, "Import from `torch.amp` instead".into(), edits, needs_of_file(model)));
    let diagnostic =
        checker.report_node(statement, "`torch.cuda.amp` is deprecated and will be removed: import from `torch.amp`");
    if let Some(fix) = fix {
        diagnostic.with_fix(fix);
    }
}

/// A call (`autocast(...)`) or a bare decorator (`@custom_fwd`) whose callee is `target`.
fn check_use<'a>(checker: &mut Checker<'_, 'a>, site: Node<'a>, target: Option<Node<'a>>) {
    let model = checker.model;
    let Some(target) = target.filter(|t| matches!(t.kind(), "identifier" | "attribute")) else { return };
    let Some(api) = model.qualified_name(target).as_deref().and_then(Api::of_qualified) else { return };
    let (fix, title, needs) = match importing_statement(model, target) {
        Some(statement) => (
            checker.memo(statement.id(), || import_plan(model, statement)),
            format!("Use `{}`, rewriting the import and its other uses", api.replacement()),
            needs_of_file(model).max(api.needs()),
        ),
        None => (site_edits(model, site, api, true), format!("Use `{}`", api.replacement()), api.needs()),
    };
    let message =
        format!("`torch.cuda.amp.{}` is deprecated and will be removed: use `{}`", api.name(), api.replacement());
    let diagnostic = checker.report_node(site, message);
    if let Some(edits) = fix {
        diagnostic.with_fix(fix_for_floor(model, title, edits, needs));
    }
}

/// What an import's fix needs: it rewrites every use of the names it imports, so the newest
/// replacement the file uses.
fn needs_of_file(model: &Model<'_>) -> torch_floor::Version {
    [Api::CustomFwd, Api::CustomBwd, Api::GradScaler, Api::Autocast]
        .into_iter()
        .filter(|api| model.text.contains(api.name()))
        .map(Api::needs)
        .max()
        .unwrap_or((1, 10))
}

/// A safe fix, unless the project declares a torch floor older than the replacement needs: the
/// fix would break it on the versions it supports, so it is unsafe and says why.
fn fix_for_floor(model: &Model<'_>, title: String, edits: Vec<Edit>, needs: torch_floor::Version) -> Fix {
    match model.context.path.and_then(torch_floor::of_file) {
        Some(floor) if floor < needs => Fix::unsafe_edits(
            format!(
                "{title} (unsafe: needs torch {} or newer, and the project declares torch >= {})",
                torch_floor::text(needs),
                torch_floor::text(floor)
            ),
            edits,
        ),
        _ => Fix::safe(title, edits),
    }
}

/// `from torch.cuda.amp import ...`, `from torch.cuda import amp`, `import torch.cuda.amp`.
fn imports_deprecated_module<'a>(model: &Model<'a>, statement: Node<'a>) -> bool {
    match statement.kind() {
        "import_from_statement" => match from_module(model, statement) {
            Some(DEPRECATED_MODULE) => true,
            Some("torch.cuda") => imported_names(model, statement).iter().any(|(name, _)| *name == "amp"),
            _ => false,
        },
        _ => imported_modules(model, statement).iter().any(|(module, _)| *module == DEPRECATED_MODULE),
    }
}

fn from_module<'a>(model: &Model<'a>, statement: Node<'_>) -> Option<&'a str> {
    statement.field("module_name").map(|m| model.node_text(m))
}

/// `(imported name, local name)` of a `from` import; `None` for a wildcard.
fn imported_names<'a>(model: &Model<'a>, statement: Node<'_>) -> Vec<(&'a str, &'a str)> {
    let mut cursor = statement.walk();
    statement
        .children_by_field_name("name", &mut cursor)
        .filter_map(|name| match name.kind() {
            "dotted_name" => Some((model.node_text(name), model.node_text(name))),
            "aliased_import" => {
                let imported = model.node_text(name.field("name")?);
                Some((imported, model.node_text(name.field("alias")?)))
            }
            _ => None,
        })
        .collect()
}

/// `(module node text, local alias)` of a plain import; the alias is `None` for `import a.b`.
fn imported_modules<'a>(model: &Model<'a>, statement: Node<'a>) -> Vec<(&'a str, Option<Node<'a>>)> {
    let mut cursor = statement.walk();
    statement
        .children_by_field_name("name", &mut cursor)
        .filter_map(|name| match name.kind() {
            "dotted_name" => Some((model.node_text(name), None)),
            "aliased_import" => Some((model.node_text(name.field("name")?), name.field("alias"))),
            _ => None,
        })
        .collect()
}

/// The import statement that binds the name a use starts from, when that name stands for
/// `torch.cuda.amp` or one of its functions (not for `torch` itself).
fn importing_statement<'a>(model: &Model<'a>, target: Node<'a>) -> Option<Node<'a>> {
    let root = ast::root_identifier(target)?;
    let binding = model.imports.binding(model.node_text(root))?;
    if !binding.qualified.starts_with(DEPRECATED_MODULE) {
        return None;
    }
    model
        .descendant_for_byte_range(binding.statement.start_byte, binding.statement.end_byte)
        .filter(|n| matches!(n.kind(), "import_statement" | "import_from_statement"))
}

/// Every edit that moves one import to `torch.amp`: the import itself and every use of the names
/// it binds. `None` when some use cannot be rewritten, since a rewritten import would break it.
fn import_plan<'a>(model: &Model<'a>, statement: Node<'a>) -> Option<Vec<Edit>> {
    let (import_edit, locals) = import_rewrite(model, statement)?;
    let mut all = vec![import_edit];
    for (local, module_alias) in locals {
        for use_site in identifier_uses(model, statement, local) {
            let (site, api) = use_site_of(model, use_site, module_alias)?;
            all.extend(site_edits(model, site, api, false)?);
        }
    }
    Some(all)
}

/// The edit that points an import at `torch.amp`, and the local names it binds (with whether
/// each names the module rather than a function).
fn import_rewrite<'a>(model: &Model<'a>, statement: Node<'a>) -> Option<(Edit, Vec<(&'a str, bool)>)> {
    match statement.kind() {
        "import_from_statement" => {
            let module = statement.field("module_name")?;
            let names = imported_names(model, statement);
            if names.is_empty() {
                return None;
            }
            match model.node_text(module) {
                DEPRECATED_MODULE if names.iter().all(|(name, _)| Api::from_name(name).is_some()) => Some((
                    Edit::replacement(TextRange::of(module), "torch.amp"),
                    names.iter().map(|(_, local)| (*local, false)).collect(),
                )),
                "torch.cuda" if names.iter().all(|(name, _)| *name == "amp") => Some((
                    Edit::replacement(TextRange::of(module), "torch"),
                    names.iter().map(|(_, local)| (*local, true)).collect(),
                )),
                _ => None,
            }
        }
        _ => {
            let mut cursor = statement.walk();
            let names: Vec<Node<'a>> = statement.children_by_field_name("name", &mut cursor).collect();
            let [name] = names.as_slice() else { return None };
            let (module, alias) = match name.kind() {
                "aliased_import" => (name.field("name")?, name.field("alias")),
                _ => (*name, None),
            };
            if model.node_text(module) != DEPRECATED_MODULE {
                return None;
            }
            let edit = Edit::replacement(TextRange::of(module), "torch.amp");
            // `import torch.cuda.amp` binds `torch`, whose uses are fixed one by one.
            let locals = alias.map(|a| vec![(model.node_text(a), true)]).unwrap_or_default();
            Some((edit, locals))
        }
    }
}

/// Where a name bound by the import is used: `(call or decorator, api)`. `None` for any other
/// use, which a rewritten import would break.
fn use_site_of<'a>(model: &Model<'a>, identifier: Node<'a>, module_alias: bool) -> Option<(Node<'a>, Api)> {
    let (target, api) = if module_alias {
        let attribute =
            identifier.parent().filter(|p| p.kind() == "attribute" && p.field("object") == Some(identifier))?;
        let api = Api::from_name(model.node_text(attribute.field("attribute")?))?;
        (attribute, api)
    } else {
        let api = model.qualified_name(identifier).as_deref().and_then(Api::of_qualified)?;
        (identifier, api)
    };
    let parent = target.parent()?;
    match parent.kind() {
        "call" if parent.field("function") == Some(target) => Some((parent, api)),
        "decorator" => Some((parent, api)),
        _ => None,
    }
}

/// Identifiers named `name` outside import statements that read a variable (not attribute or
/// keyword names).
fn identifier_uses<'a>(model: &Model<'a>, statement: Node<'a>, name: &str) -> Vec<Node<'a>> {
    let mut uses = Vec::new();
    let root = model.tree.root_node();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        // Other imports bind names; they do not read them.
        if node.id() == statement.id() || matches!(node.kind(), "import_statement" | "import_from_statement") {
            continue;
        }
        if node.kind() == "identifier" && model.node_text(node) == name && !is_member_name(node) {
            uses.push(node);
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    uses.sort_by_key(|n| n.start_byte());
    uses
}

fn is_member_name(identifier: Node<'_>) -> bool {
    identifier.parent().is_some_and(|p| {
        (p.kind() == "attribute" && p.field("attribute") == Some(identifier))
            || (p.kind() == "keyword_argument" && p.field("name") == Some(identifier))
    })
}

/// The edits that turn one call or decorator into its `torch.amp` form. With `rewrite_callee`,
/// a callee spelled through `torch` (`torch.cuda.amp.autocast`) becomes `torch.amp.autocast`;
/// otherwise the callee stays, because its import is rewritten.
fn site_edits(model: &Model<'_>, site: Node<'_>, api: Api, rewrite_callee: bool) -> Option<Vec<Edit>> {
    let (callee, call) = match site.kind() {
        "call" => (ast::callee(site)?, Some(site)),
        _ => (site.named_child(0)?, None),
    };
    let mut all = Vec::new();
    if rewrite_callee {
        let (replacement, import) = torch_amp_object(model, callee)?;
        all.push(replacement);
        all.extend(import);
    }
    match (call, api) {
        (Some(call), Api::Autocast) => all.extend(autocast_arguments(model, call)?),
        (Some(call), Api::GradScaler) => {
            let args = ast::arguments(call)?;
            let after_paren = args.start_byte() + 1;
            let separator = if has_arguments(args) { "\"cuda\", " } else { "\"cuda\"" };
            all.push(Edit::insertion(after_paren, separator));
        }
        (Some(call), Api::CustomFwd | Api::CustomBwd) => all.push(append_argument(call, "device_type=\"cuda\"")?),
        (None, Api::CustomFwd | Api::CustomBwd) => {
            all.push(Edit::insertion(callee.end_byte(), "(device_type=\"cuda\")"));
        }
        (None, Api::Autocast | Api::GradScaler) => return None,
    }
    Some(all)
}

/// Replace `torch.cuda.amp` in `torch.cuda.amp.autocast` by `torch.amp` (keeping an alias of
/// `torch`), with an `import torch` when the path was reached another way (`cuda.amp.autocast`).
fn torch_amp_object(model: &Model<'_>, callee: Node<'_>) -> Option<(Edit, Option<Edit>)> {
    let object = callee.field("object").filter(|_| callee.kind() == "attribute")?;
    if object.kind() != "attribute" || model.qualified_name(object).as_deref() != Some(DEPRECATED_MODULE) {
        return None;
    }
    let cuda = object.field("object")?;
    let torch_node = cuda.field("object").filter(|_| cuda.kind() == "attribute");
    let (torch, import) = match torch_node {
        Some(node) if model.qualified_name(node).as_deref() == Some("torch") => {
            (model.node_text(node).to_owned(), None)
        }
        _ => edits::module_reference(model, "torch"),
    };
    Some((Edit::replacement(TextRange::of(object), format!("{torch}.amp")), import))
}

/// `autocast(True, torch.float16)` → `autocast("cuda", enabled=True, dtype=torch.float16)`.
fn autocast_arguments(model: &Model<'_>, call: Node<'_>) -> Option<Vec<Edit>> {
    let args = ast::arguments(call)?;
    let mut cursor = args.walk();
    let children: Vec<Node<'_>> = args.named_children(&mut cursor).filter(|a| a.kind() != "comment").collect();
    if children.iter().any(|a| a.kind() == "list_splat") {
        return None;
    }
    let positional = ast::positional_args(call);
    if positional.len() > CUDA_AUTOCAST_PARAMETERS.len() {
        return None;
    }
    let mut insertions: Vec<(usize, String)> = Vec::new();
    let device = if children.is_empty() { "\"cuda\"" } else { "\"cuda\", " };
    insertions.push((args.start_byte() + 1, device.to_owned()));
    for (argument, parameter) in positional.iter().zip(CUDA_AUTOCAST_PARAMETERS) {
        if ast::keyword_arg(call, parameter, model.text).is_some() {
            return None;
        }
        insertions.push((argument.start_byte(), format!("{parameter}=")));
    }
    Some(merge_insertions(insertions))
}

/// Insertions at one offset become one edit, in the order given, so a fix never holds two
/// edits at the same point.
fn merge_insertions(insertions: Vec<(usize, String)>) -> Vec<Edit> {
    let mut merged: Vec<Edit> = Vec::new();
    for (at, content) in insertions {
        match merged.last_mut() {
            Some(last) if last.range.start == at => last.content = format!("{}{content}", last.content).into(),
            _ => merged.push(Edit::insertion(at, content)),
        }
    }
    merged
}

fn has_arguments(args: Node<'_>) -> bool {
    let mut cursor = args.walk();
    args.named_children(&mut cursor).any(|a| a.kind() != "comment")
}

/// Add a keyword argument after the last argument.
fn append_argument(call: Node<'_>, argument: &str) -> Option<Edit> {
    let args = ast::arguments(call)?;
    let mut cursor = args.walk();
    let last = args.named_children(&mut cursor).filter(|a| a.kind() != "comment").last();
    Some(match last {
        Some(last) => Edit::insertion(last.end_byte(), format!(", {argument}")),
        None => Edit::insertion(args.start_byte() + 1, argument),
    })
}

/// Code that keeps `torch.cuda.amp` for old torch: an import in the `except ImportError` of a
/// `try` that first tries `torch.amp`, or a use in the old-torch branch of a version check
/// (`if hasattr(torch, "amp")`, `... if _TORCH_GREATER_EQUAL_2_4 else ...`).
fn is_compatibility_fallback(model: &Model<'_>, node: Node<'_>) -> bool {
    let mut current = node.parent();
    while let Some(parent) = current {
        match parent.kind() {
            "except_clause" => {
                let handler = model.node_text(parent);
                if handler.contains("ImportError") || handler.contains("AttributeError") {
                    return true;
                }
            }
            "else_clause" | "elif_clause" => {
                let statement = parent.parent().filter(|p| p.kind() == "if_statement");
                let condition = statement.and_then(|s| s.field("condition"));
                if condition.is_some_and(|c| is_version_check(model, c)) {
                    return true;
                }
            }
            "if_statement" => {
                let condition = parent.field("condition");
                if condition.is_some_and(|c| is_version_check(model, c) && !ast::contains(c, node)) {
                    return true;
                }
            }
            // `torch.amp.GradScaler("cuda") if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()`
            "conditional_expression" => {
                let mut cursor = parent.walk();
                let condition = parent.named_children(&mut cursor).nth(1);
                if condition.is_some_and(|c| is_version_check(model, c) && !ast::contains(c, node)) {
                    return true;
                }
            }
            _ => {}
        }
        current = parent.parent();
    }
    false
}

/// A condition that tests which torch runs: written out, or through a flag assigned such a test
/// (torchrl's `_TORCH_GRAD_SCALER_HAS_DEVICE = version.parse(torch.__version__).release >= (2, 3)`),
/// whose name need not say so.
fn is_version_check(model: &Model<'_>, condition: Node<'_>) -> bool {
    if mentions_version_check(model.node_text(condition)) {
        return true;
    }
    let assigned_a_version_check = |flag: Node<'_>| {
        model.assignments_to(model.node_text(flag)).iter().any(|assignment| {
            assignment.field("right").is_some_and(|value| mentions_version_check(model.node_text(value)))
        })
    };
    ast::any_in_scope(condition, |node| node.kind() == "identifier" && assigned_a_version_check(node))
}

/// `torch.__version__ >= ...`, `hasattr(torch, "amp")`, `_TORCH_GREATER_EQUAL_2_4`, `TORCH_2_3`.
fn mentions_version_check(condition: &str) -> bool {
    let condition = condition.to_ascii_lowercase();
    ["version", "hasattr", "greater", "less_than", "torch_1", "torch_2"].iter().any(|hint| condition.contains(hint))
}

#[cfg(test)]
mod tests {
    use crate::lint::{LintContext, LintSettings, RuleSet, lint_text};

    /// `(line, has a fix)` for every finding.
    fn findings(source: &str) -> Vec<(usize, bool)> {
        let settings = LintSettings { rules: RuleSet::from_selectors(&["CUL303"]), ..Default::default() };
        let lines = crate::text::LineIndex::new(source);
        lint_text(source, LintContext::default(), &settings)
            .iter()
            .map(|d| (lines.location(source, d.range.start).row, d.fix.is_some()))
            .collect()
    }

    #[test]
    fn no_import_rewrite_when_a_name_is_used_as_a_value() {
        let source = "from torch.cuda.amp import autocast\nctx = autocast\nwith autocast():\n    pass\n";
        assert_eq!(findings(source), vec![(1, false), (3, false)]);
    }

    #[test]
    fn no_import_rewrite_when_the_import_brings_other_names() {
        let source = "from torch.cuda import amp, set_device\nscaler = amp.GradScaler()\n";
        assert_eq!(findings(source), vec![(1, false), (2, false)]);
    }

    #[test]
    fn every_use_shares_the_same_fix() {
        let source = "from torch.cuda.amp import GradScaler, autocast\ns = GradScaler()\nwith autocast():\n    pass\n";
        let settings = LintSettings { rules: RuleSet::from_selectors(&["CUL303"]), ..Default::default() };
        let found = lint_text(source, LintContext::default(), &settings);
        assert_eq!(found.len(), 3);
        assert!(found.iter().all(|d| d.fix.as_ref().map(|f| &f.edits) == found[0].fix.as_ref().map(|f| &f.edits)));
    }
}
