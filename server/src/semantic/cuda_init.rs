//! Where the CUDA context gets created, and whether that has happened before a given statement in
//! execution order. Settings read once at CUDA initialisation (the allocator config) are ignored
//! when they come later.
//!
//! Which calls initialise CUDA was checked on a GPU with torch 2.11: CUDA tensors (`.cuda()`,
//! `.to("cuda")`, factories with a CUDA device), `set_device`, `current_device`, the device
//! queries, `synchronize`, `mem_get_info` and `with torch.cuda.device(...)` do; `import torch`,
//! `is_available`, `device_count`, `manual_seed_all`, `memory_allocated`, `empty_cache`,
//! `torch.device("cuda")`, `torch.backends.*` flags and `torch.amp.GradScaler("cuda")` do not.

use tree_sitter::Node;

use super::{CallTarget, Model, ast};
use crate::grammar_ids::FieldChild;

/// `torch.cuda` functions that create the CUDA context.
const INITIALISING_FUNCTIONS: &[&str] = &[
    "torch.cuda.init",
    "torch.cuda.set_device",
    "torch.cuda.current_device",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_capability",
    "torch.cuda.get_device_properties",
    "torch.cuda.is_bf16_supported",
    "torch.cuda.synchronize",
    "torch.cuda.mem_get_info",
    "torch.cuda.memory.mem_get_info",
];

/// torch callables that take a CUDA device without creating the context.
const DEVICE_WITHOUT_INIT: &[&str] = &[
    "torch.device",
    "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.autocast",
    "torch.amp.autocast",
];

/// Libraries whose loaders put weights on the GPU when given a CUDA `device` or `device_map`.
const MODEL_LOADERS: &[&str] = &["transformers", "diffusers", "peft", "sentence_transformers", "accelerate"];

/// How far calls into local functions (and call sites of the enclosing function) are followed.
const MAX_DEPTH: usize = 3;

impl<'a> Model<'a> {
    /// Whether evaluating this call creates the CUDA context.
    pub fn initialises_cuda(&self, call: Node<'a>) -> bool {
        let Some(callee) = ast::callee(call) else { return false };
        let qualified = self.qualified_name(callee).unwrap_or_default();
        if INITIALISING_FUNCTIONS.contains(&qualified.as_str()) {
            return true;
        }
        if qualified == "torch.cuda.device" || qualified == "torch.cuda.device_of" {
            // Only entering it switches (and so initialises) the device.
            return is_with_item(call);
        }
        if DEVICE_WITHOUT_INIT.contains(&qualified.as_str()) {
            return false;
        }
        let method =
            (callee.kind() == "attribute").then(|| callee.field("attribute").map(|a| self.node_text(a))).flatten();
        match method {
            Some("cuda") => return true,
            Some("to") => {
                let device =
                    ast::keyword_arg(call, "device", self.text).or_else(|| ast::positional_args(call).first().copied());
                return device.is_some_and(|d| self.is_cuda_device(d, 0));
            }
            _ => {}
        }
        let root = qualified.split('.').next().unwrap_or_default();
        if root == "torch" {
            return ast::keyword_arg(call, "device", self.text).is_some_and(|d| self.is_cuda_device(d, 0));
        }
        if MODEL_LOADERS.contains(&root) {
            return ["device", "device_map"]
                .iter()
                .filter_map(|key| ast::keyword_arg(call, key, self.text))
                .any(|d| self.is_cuda_device(d, 0) || self.is_automatic_device_map(d));
        }
        false
    }

    /// Whether an expression names a CUDA device: `"cuda"`, `"cuda:1"`, `f"cuda:{rank}"`, an index,
    /// `torch.device("cuda")`, a conditional with a CUDA branch, or a name assigned one of these.
    pub fn is_cuda_device(&self, value: Node<'_>, depth: usize) -> bool {
        match value.kind() {
            "string" => {
                // The text after the prefix and the opening quote, so f-strings count too.
                let body = self.node_text(value).trim_start_matches(|c: char| c.is_ascii_alphabetic());
                let body = body.trim_start_matches(['"', '\'']);
                body.starts_with("cuda:") || body.strip_prefix("cuda").is_some_and(|rest| rest.starts_with(['"', '\'']))
            }
            "integer" => true,
            "conditional_expression" => {
                let mut cursor = value.walk();
                let branches: Vec<_> = value.named_children(&mut cursor).collect();
                [branches.first(), branches.get(2)].into_iter().flatten().any(|b| self.is_cuda_device(*b, depth))
            }
            "parenthesized_expression" => value.named_child(0).is_some_and(|v| self.is_cuda_device(v, depth)),
            "call" => {
                self.call_resolves_to(value, &["torch.device"])
                    && ast::positional_args(value).first().is_some_and(|a| self.is_cuda_device(*a, depth))
            }
            "identifier" if depth < 2 => self
                .assignments_to(self.node_text(value))
                .iter()
                .any(|assignment| assignment.field("right").is_some_and(|r| self.is_cuda_device(r, depth + 1))),
            _ => false,
        }
    }

    fn is_automatic_device_map(&self, value: Node<'_>) -> bool {
        ast::string_value(value, self.text)
            .is_some_and(|v| matches!(v.as_str(), "auto" | "balanced" | "balanced_low_0" | "sequential"))
    }

    /// The first call seen to create the CUDA context before `node` runs: earlier statements of
    /// the blocks around it, the headers of the statements that hold it, and, when it sits in a
    /// function, what ran before the function's call sites. Branches that exclude each other and
    /// code that runs later (a loop's next iteration) are not counted.
    pub fn cuda_initialised_before(&self, node: Node<'a>) -> Option<Node<'a>> {
        self.initialised_before_at_depth(node, 0)
    }

    fn initialised_before_at_depth(&self, node: Node<'a>, depth: usize) -> Option<Node<'a>> {
        let mut current = self.statement_of(node);
        loop {
            let mut sibling = current.prev_named_sibling();
            while let Some(earlier) = sibling {
                if let Some(call) = self.initialising_call_in(earlier, depth) {
                    return Some(call);
                }
                sibling = earlier.prev_named_sibling();
            }
            let block = current.parent()?;
            if block.kind() == "module" {
                return None;
            }
            let holder = block.parent()?;
            if holder.kind() == "function_definition" {
                return self.initialised_before_call_sites(holder, depth);
            }
            if ast::is_function_boundary(holder) {
                return None;
            }
            for header in headers_before(holder) {
                if let Some(call) = self.initialising_call_in(header, depth) {
                    return Some(call);
                }
            }
            current = self.statement_of(holder);
        }
    }

    fn initialised_before_call_sites(&self, function: Node<'a>, depth: usize) -> Option<Node<'a>> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let name = ast::function_name(function, self.text)?;
        self.calls_named(name)
            .iter()
            .filter(|call| matches!(self.resolve_call(**call), CallTarget::Local(f) if f.id() == function.id()))
            .find_map(|call| self.initialised_before_at_depth(*call, depth + 1))
    }

    /// The first call in `node` (not in a nested definition) that creates the CUDA context,
    /// directly or through a function of this file.
    fn initialising_call_in(&self, node: Node<'a>, depth: usize) -> Option<Node<'a>> {
        if matches!(node.kind(), "function_definition" | "class_definition" | "decorated_definition" | "comment") {
            return None;
        }
        self.own_calls_within(node).find(|call| {
            self.initialises_cuda(*call)
                || (depth < MAX_DEPTH
                    && matches!(self.resolve_call(*call), CallTarget::Local(f) if self.function_initialises_cuda(f, depth + 1)))
        })
    }

    fn function_initialises_cuda(&self, function: Node<'a>, depth: usize) -> bool {
        function.field("body").is_some_and(|body| self.initialising_call_in(body, depth).is_some())
    }
}

/// `with torch.cuda.device(i):` rather than a bare `torch.cuda.device(i)`.
fn is_with_item(call: Node<'_>) -> bool {
    let mut parent = call.parent();
    while let Some(p) = parent.filter(|p| p.kind() == "as_pattern" || p.kind() == "parenthesized_expression") {
        parent = p.parent();
    }
    parent.is_some_and(|p| p.kind() == "with_item")
}

/// The parts of a compound statement that always run before the block holding the node: an
/// `if`'s condition (and its earlier `elif` conditions), a loop's iterable or condition, a
/// `with`'s items.
fn headers_before(holder: Node<'_>) -> Vec<Node<'_>> {
    match holder.kind() {
        "if_statement" | "while_statement" => holder.field("condition").into_iter().collect(),
        "for_statement" => holder.field("right").into_iter().collect(),
        "with_statement" => {
            let mut cursor = holder.walk();
            holder.named_children(&mut cursor).filter(|c| c.kind() == "with_clause").collect()
        }
        "elif_clause" | "else_clause" => {
            let Some(statement) = holder.parent().filter(|p| p.kind() == "if_statement") else { return Vec::new() };
            let mut headers: Vec<Node<'_>> = statement.field("condition").into_iter().collect();
            let mut cursor = statement.walk();
            for clause in statement.named_children(&mut cursor) {
                if clause.id() == holder.id() {
                    break;
                }
                if clause.kind() == "elif_clause" {
                    headers.extend(clause.field("condition"));
                }
            }
            if holder.kind() == "elif_clause" {
                headers.extend(holder.field("condition"));
            }
            headers
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::lint::LintContext;
    use crate::parse::parse;
    use crate::semantic::Model;

    /// The source of the first call that initialises CUDA before the last `marker()`, if any.
    fn initialised_by(source: &str) -> Option<String> {
        let tree = parse(source, None);
        let model = Model::new(source, &tree, LintContext::default());
        let at = source.rfind("marker()").expect("a marker");
        let marker = tree.root_node().descendant_for_byte_range(at, at).expect("the marker's node");
        model.cuda_initialised_before(marker).map(|call| model.node_text(call).to_owned())
    }

    #[test]
    fn calls_that_initialise_cuda() {
        for (setup, call) in [
            ("x = t.cuda()", "t.cuda()"),
            ("x = t.to('cuda:1')", "t.to('cuda:1')"),
            ("dev = torch.device('cuda' if ok else 'cpu')\nx = t.to(dev)", "t.to(dev)"),
            ("x = torch.zeros(1, device=f'cuda:{rank}')", "torch.zeros(1, device=f'cuda:{rank}')"),
            ("torch.cuda.set_device(0)", "torch.cuda.set_device(0)"),
            ("n = torch.cuda.get_device_name()", "torch.cuda.get_device_name()"),
            ("ok = torch.cuda.is_bf16_supported()", "torch.cuda.is_bf16_supported()"),
            ("free, total = torch.cuda.mem_get_info()", "torch.cuda.mem_get_info()"),
            ("with torch.cuda.device(1):\n    pass", "torch.cuda.device(1)"),
            ("m = AutoModel.from_pretrained(n, device_map='auto')", "AutoModel.from_pretrained(n, device_map='auto')"),
        ] {
            let source = format!("import torch\nfrom transformers import AutoModel\n{setup}\nmarker()\n");
            assert_eq!(initialised_by(&source).as_deref(), Some(call), "{setup}");
        }
    }

    #[test]
    fn calls_that_do_not_initialise_cuda() {
        for setup in [
            "torch.cuda.is_available()",
            "torch.cuda.device_count()",
            "torch.cuda.manual_seed_all(0)",
            "torch.cuda.memory_allocated()",
            "torch.cuda.empty_cache()",
            "d = torch.device('cuda')",
            "torch.backends.cudnn.benchmark = True",
            "s = torch.amp.GradScaler('cuda')",
            "s = torch.amp.GradScaler(device='cuda')",
            "c = torch.cuda.device(1)",
            "x = t.to(torch.float16)",
            "x = torch.zeros(1, device='cpu')",
            "def later():\n    return t.cuda()",
        ] {
            let source = format!("import torch\n{setup}\nmarker()\n");
            assert_eq!(initialised_by(&source), None, "{setup}");
        }
        let other_branch = "import torch\nif use_gpu:\n    t.cuda()\nelse:\n    marker()\n";
        assert_eq!(initialised_by(other_branch), None);
    }

    #[test]
    fn follows_local_functions_and_call_sites() {
        let helper = "import torch\ndef build():\n    return Net().cuda()\nm = build()\nmarker()\n";
        assert_eq!(initialised_by(helper).as_deref(), Some("build()"));
        let caller = "import torch\ndef configure():\n    marker()\nm = Net().cuda()\nconfigure()\n";
        assert_eq!(initialised_by(caller).as_deref(), Some("Net().cuda()"));
    }
}
