//! The peer of BENCHMARKS.md's 10,000-line target: a process that reads a file and parses it with
//! the same tree-sitter grammar culint uses, and does nothing else. `culint check` on that file
//! is measured against this process's wall time.
//!
//! Usage: cargo build --release --example bare_parse && target/release/examples/bare_parse FILE

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: bare_parse FILE");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("bare_parse: {path}: {e}");
        std::process::exit(2);
    });
    let tree = culint::parse::parse(&text, None);
    // Print something of the tree, so that the parse cannot be optimised away.
    println!("{} nodes under the root", tree.root_node().descendant_count());
}
