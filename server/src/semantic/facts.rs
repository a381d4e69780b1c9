//! Facts a finding rests on, in words a user can check against the code: where the file reaches
//! CUDA, a line of code quoted with its number. Worked out only when a rule reports, so they cost
//! nothing on files without findings.

use tree_sitter::Node;

use super::Model;

/// The longest quote of a line of code in a fact.
const QUOTE_CHARS: usize = 72;

impl<'a> Model<'a> {
    /// `` `device = "cuda" if torch.cuda.is_available() else "cpu"` (line 12) ``: the first
    /// statement of the file whose calls name CUDA, NCCL or the run-time accelerator, the reason
    /// the file counts as running on CUDA. `None` when only a name or a string does.
    pub fn cuda_evidence(&self) -> Option<String> {
        let names_cuda = |call: &Node<'a>| {
            let text = self.node_text(*call);
            ["cuda", "CUDA", "nccl", "NCCL", "current_accelerator"].iter().any(|word| text.contains(word))
        };
        let call = self.all_calls().iter().find(|call| names_cuda(call))?;
        Some(self.quote(self.statement_of(*call)))
    }

    /// A node's first line as a quote with its line number: `` `model = Net().cuda()` (line 40) ``.
    pub fn quote(&self, node: Node<'_>) -> String {
        let text = self.node_text(node);
        let first = text.lines().next().unwrap_or_default().trim();
        let mut quoted: String = first.chars().take(QUOTE_CHARS).collect();
        if quoted.len() < first.len() || text.trim_end().contains('\n') {
            quoted.push_str(" …");
        }
        format!("`{quoted}` (line {})", node.start_position().row + 1)
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse;
    use crate::semantic::{LintContext, Model};

    #[test]
    fn cuda_evidence_quotes_the_first_statement_that_reaches_cuda() {
        let text = "import torch\nx = 1\ndevice = \"cuda\" if torch.cuda.is_available() else \"cpu\"\nm.to(device)\n";
        let tree = parse(text, None);
        let model = Model::new(text, &tree, LintContext::default());
        assert_eq!(
            model.cuda_evidence().as_deref(),
            Some("`device = \"cuda\" if torch.cuda.is_available() else \"cpu\"` (line 3)")
        );
        let text = "import torch\nmodel.to(\"cpu\")\n";
        let tree = parse(text, None);
        assert_eq!(Model::new(text, &tree, LintContext::default()).cuda_evidence(), None);
    }

    #[test]
    fn long_and_multi_line_statements_are_cut() {
        let text = "setup(\n    a=1,\n)\n";
        let tree = parse(text, None);
        let model = Model::new(text, &tree, LintContext::default());
        assert_eq!(model.quote(model.top_level()[0]), "`setup( …` (line 1)");
    }
}
