use culint::lint::{LintContext, LintSettings, MatchMemo, lint_remembering};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let settings = LintSettings::default();
    let tree = culint::parse::parse(&text, None);
    let memo = MatchMemo::default();
    let mut n = lint_remembering(&text, &tree, LintContext::default(), &settings, &memo).len();
    n += lint_remembering(&text, &tree, LintContext::default(), &settings, &memo).len();
    println!("{n}");
}
