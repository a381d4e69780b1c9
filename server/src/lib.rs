//! culint: finds the PyTorch code that runs GPUs out of memory or fails in cuBLAS, explains the
//! CUDA errors people already hit, and checks the GPU they will run on.

pub mod cli;
pub mod config;
pub mod cuda_env;
pub mod diagnostic;
pub mod document;
pub mod explain;
pub mod fix;
pub mod grammar_ids;
pub mod hardware;
pub mod knowledge;
pub mod lint;
pub mod lsp;
pub mod notebook;
pub mod parse;
pub mod patterns;
pub mod prefilter;
pub mod probe;
pub mod project;
pub mod rules;
pub mod semantic;
pub mod suppression;
#[cfg(test)]
mod test_support;
pub mod text;
