//! One file per LSP method, named after it.

pub mod code_action;
pub mod did_change;
pub mod did_change_configuration;
pub mod did_change_watched_files;
pub mod did_change_workspace_folders;
pub mod did_close;
pub mod did_open;
pub mod document_diagnostic;
pub mod execute_command;
pub mod hover;
pub mod initialize;
pub mod initialized;
pub mod notebook_did_change;
pub mod notebook_did_close;
pub mod notebook_did_open;
pub mod notebook_did_save;
pub mod shutdown;
