//! The knowledge base of CUDA / cuBLAS / cuDNN / NCCL runtime errors.
//!
//! Each entry lives in `knowledge/<group>/<name>.toml` (format: `knowledge/README.md`) and is
//! compiled into the binary, so an installed `culint` needs no data files. Users add directories
//! of their own entries through the `knowledge-dirs` setting.
//!
//! # Stable API (used by the language server and the CLI)
//!
//! - [`builtin()`]`.entry(id) -> Option<&Entry>`: the entry a diagnostic's `knowledge` id names.
//! - [`Base::with_user_dirs`]`(&[PathBuf]) -> Result<Base, KnowledgeError>`: built-in entries plus
//!   the user's; a user entry with a built-in id replaces it.
//! - [`Entry::to_markdown`]`(lang)`: the whole entry as Markdown for hover, in [`Lang::En`] or
//!   [`Lang::Zh`] ([`Lang::from_locale`] maps an editor locale such as `zh-CN`).
//! - [`crate::explain::explain_markdown`]`(text, lang)`: explain an error text as Markdown.

mod base;
mod builtin;
mod entry;
mod lang;

pub use base::{Base, KnowledgeError, builtin, parse_entry};
pub use builtin::BUILTIN_FILES;
pub use entry::{
    Culprits, DeadEnd, Diagnosis, Entry, EntrySpec, MatchSpec, Reference, VersionNote, Workaround, rule_label,
};
pub use lang::{Label, Lang, Localized, is_cjk};
