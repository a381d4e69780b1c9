//! The language server: `culint server` speaks LSP over stdio.
//!
//! `server.rs` maps each LSP method to a one-line call into `handlers/<method>.rs`; the engine
//! work behind every handler is the same `lint`/`fix_text` the CLI runs.

pub mod capabilities;
pub mod commands;
pub mod context;
pub mod diagnostics;
pub mod direct_answers;
pub mod edits;
pub mod framing;
pub mod handlers;
pub mod ignore_comment;
mod json_text;
pub mod log;
pub mod notebook_documents;
pub mod notebooks;
pub mod outbox;
pub mod position;
pub mod rule_docs;
pub mod server;
pub mod session;
pub mod settings;
pub mod stdio;
#[cfg(test)]
pub mod testing;

pub use server::{Ending, Server, serve};
