//! lsp (in progress)
