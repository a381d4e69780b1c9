//! The knowledge base: every entry file is compiled in, complete in both languages, cited, and
//! its patterns match the message variants it lists.

use std::path::{Path, PathBuf};

use culint::explain::{ExplainOptions, explain};
use culint::knowledge::{BUILTIN_FILES, Base, Lang, Localized, builtin};

/// Ids of the checks `culint probe` reports (server/src/probe). Entries name them so that a probe
/// result and an error can point at each other. `env` stands for the `env.<VARIABLE>` checks.
const PROBE_CHECKS: &[&str] = &[
    "driver",
    "devices",
    "device",
    "context",
    "memory.free",
    "memory.other-processes",
    "memory.largest-allocation",
    "cublas.handle",
    "cublaslt.heuristic",
    "torch.cuda",
    "env",
];

/// Rule codes of the catalogue (RULES.md). Related rules must name one of these.
const CATALOGUE: &[&str] = &[
    "CUL101", "CUL102", "CUL103", "CUL201", "CUL202", "CUL203", "CUL204", "CUL301", "CUL302", "CUL303", "CUL401",
    "CUL402", "CUL403", "CUL404", "CUL501", "CUL502", "CUL503", "CUL601", "CUL602", "CUL801", "CUL802", "CUL803",
];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_entry_file_is_compiled_in() {
    let mut on_disk = Vec::new();
    for group in std::fs::read_dir(repo_root().join("knowledge")).unwrap() {
        let group = group.unwrap().path();
        if !group.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&group).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "toml") {
                on_disk.push(file.strip_prefix(repo_root()).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    on_disk.sort();
    let mut compiled: Vec<String> = BUILTIN_FILES.iter().map(|(path, _)| (*path).to_owned()).collect();
    compiled.sort();
    assert_eq!(
        on_disk, compiled,
        "knowledge/<group>/*.toml and BUILTIN_FILES in server/src/knowledge/builtin.rs differ"
    );
}

#[test]
fn ids_match_file_paths() {
    for (path, _) in BUILTIN_FILES {
        let id = path.trim_start_matches("knowledge/").trim_end_matches(".toml");
        assert!(builtin().entry(id).is_some(), "{path} should declare id = \"{id}\"");
    }
    assert_eq!(builtin().len(), BUILTIN_FILES.len(), "ids are unique");
}

#[test]
fn the_required_errors_are_covered() {
    for id in [
        "cuda/oom-genuine",
        "cuda/oom-fragmentation",
        "cuda/oom-other-processes",
        "cublas/alloc-failed",
        "cublas/internal-error",
        "cublas/not-initialized",
        "cublas/execution-failed",
        "cublas/invalid-value",
        "cublas/not-supported",
        "cuda/illegal-memory-access",
        "cuda/device-side-assert",
        "cuda/no-kernel-image",
        "cuda/driver-too-old",
        "cuda/invalid-device-ordinal",
        "cudnn/status-error",
        "nccl/unhandled-cuda-error",
        "cuda/not-available",
        "cuda/oom-memory-fraction",
        "cuda/oom-outside-allocator",
        "cuda/devices-unavailable",
        "cuda/device-mismatch",
        "cuda/misaligned-address",
        "cuda/invalid-address-space",
        "nccl/watchdog-timeout",
        "nccl/invalid-usage",
        "nccl/system-error",
        "nccl/internal-error",
        "distributed/peer-lost",
        "distributed/child-failed",
        "distributed/store-timeout",
    ] {
        assert!(builtin().entry(id).is_some(), "missing entry {id}");
    }
}

#[test]
fn every_entry_matches_at_least_two_message_variants() {
    for entry in builtin().entries() {
        let examples = &entry.matching.examples;
        assert!(
            examples.len() >= 2,
            "{} lists {} example(s); add the variants of other versions",
            entry.id,
            examples.len()
        );
        for example in examples {
            assert!(entry.matches(example), "{}: no pattern matches `{example}`", entry.id);
        }
    }
}

#[test]
fn every_example_is_explained_as_its_entry() {
    for entry in builtin().entries() {
        for example in &entry.matching.examples {
            let report = explain(example, builtin(), &ExplainOptions::default());
            let ids: Vec<&str> = report.findings.iter().map(|f| f.entry.id.as_str()).collect();
            let expected_group: Vec<&str> = if entry.matching.diagnosis.is_some() {
                vec![
                    "cuda/oom-genuine",
                    "cuda/oom-fragmentation",
                    "cuda/oom-other-processes",
                    "cuda/oom-memory-fraction",
                    "cuda/oom-outside-allocator",
                ]
            } else {
                vec![entry.id.as_str()]
            };
            assert!(
                ids.iter().any(|id| expected_group.contains(id)),
                "{}: `{example}` was explained as {ids:?}",
                entry.id
            );
        }
    }
}

fn localized_fields(id: &str) -> Vec<(String, Localized)> {
    let entry = builtin().entry(id).unwrap();
    let mut fields = vec![("title".to_owned(), entry.title.clone()), ("cause".to_owned(), entry.cause.clone())];
    for (i, w) in entry.workarounds.iter().enumerate() {
        fields.push((format!("workarounds[{i}].action"), w.action.clone()));
        fields.push((format!("workarounds[{i}].when"), w.when.clone()));
    }
    for (i, d) in entry.dead_ends.iter().enumerate() {
        fields.push((format!("dead_ends[{i}].claim"), d.claim.clone()));
        fields.push((format!("dead_ends[{i}].why"), d.why.clone()));
    }
    for (i, v) in entry.versions.iter().enumerate() {
        fields.push((format!("versions[{i}].note"), v.note.clone()));
    }
    fields
}

fn has_cjk(text: &str) -> bool {
    text.chars().any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c))
}

#[test]
fn every_human_readable_field_is_in_english_and_chinese() {
    for entry in builtin().entries() {
        for (field, text) in localized_fields(&entry.id) {
            for lang in Lang::ALL {
                assert!(text.has(lang), "{}: `{field}` has no {} text", entry.id, lang.as_str());
            }
            assert!(has_cjk(text.get(Lang::Zh)), "{}: `{field}.zh` is not Chinese", entry.id);
            assert!(!has_cjk(text.get(Lang::En)), "{}: `{field}.en` contains Chinese", entry.id);
        }
    }
}

#[test]
fn every_workaround_cites_a_source_and_shows_code() {
    for entry in builtin().entries() {
        assert!(!entry.workarounds.is_empty(), "{} says nothing about what works", entry.id);
        for workaround in &entry.workarounds {
            assert!(!workaround.sources.is_empty(), "{}: `{}` has no source", entry.id, workaround.action.en);
            assert!(!workaround.code.trim().is_empty(), "{}: `{}` has no code example", entry.id, workaround.action.en);
            for url in &workaround.sources {
                assert!(url.starts_with("https://"), "{}: source `{url}` is not an https URL", entry.id);
            }
        }
        for dead_end in &entry.dead_ends {
            for url in &dead_end.sources {
                assert!(url.starts_with("https://"), "{}: source `{url}` is not an https URL", entry.id);
            }
        }
        for reference in &entry.references {
            assert!(reference.url.starts_with("https://"), "{}: reference `{}` is not https", entry.id, reference.url);
        }
    }
}

#[test]
fn related_rules_are_catalogue_codes() {
    for entry in builtin().entries() {
        for code in &entry.related_rules {
            assert!(CATALOGUE.contains(&code.as_str()), "{}: related rule {code} is not in RULES.md", entry.id);
            if let Some(rule) = culint::rules::by_code(code) {
                assert_eq!(rule.code, code, "{}: registered rule code differs in case", entry.id);
            }
        }
        for check in &entry.probe_checks {
            assert!(PROBE_CHECKS.contains(&check.as_str()), "{}: `{check}` is not a probe check id", entry.id);
        }
    }
}

#[test]
fn dead_ends_include_the_circulating_non_fixes() {
    let alloc_failed = builtin().entry("cublas/alloc-failed").unwrap();
    let claims: Vec<&str> = alloc_failed.dead_ends.iter().map(|d| d.claim.en.as_str()).collect();
    assert!(claims.iter().any(|c| c.contains("CUBLASLT_HEURISTIC_MODE")), "{claims:?}");
    assert!(claims.iter().any(|c| c.contains("empty_cache")), "{claims:?}");
    assert!(claims.iter().any(|c| c.contains("batch size")), "{claims:?}");
    // A dead end is never recommended.
    for entry in builtin().entries() {
        for workaround in &entry.workarounds {
            assert!(
                !workaround.code.contains("CUBLASLT_HEURISTIC_MODE"),
                "{} recommends a non-existent variable",
                entry.id
            );
        }
    }
}

#[test]
fn fragmentation_advice_says_which_setting_fits_which_version() {
    let entry = builtin().entry("cuda/oom-fragmentation").unwrap();
    let expandable = entry.workarounds.iter().find(|w| w.code.contains("expandable_segments:True")).unwrap();
    assert!(expandable.when.en.contains("2.1 or later"), "{}", expandable.when.en);
    let split = entry.workarounds.iter().find(|w| w.code.contains("max_split_size_mb")).unwrap();
    assert!(split.when.en.contains("before 2.1"), "{}", split.when.en);
}

#[test]
fn cublas_entries_lead_with_their_most_common_cause() {
    let lead = |id: &str| builtin().entry(id).unwrap().cause.en.split(". ").take(2).collect::<Vec<_>>().join(". ");
    assert!(lead("cublas/alloc-failed").contains("full"));
    assert!(lead("cublas/not-initialized").contains("full"));
    assert!(lead("cublas/internal-error").contains("environment"));
    assert!(builtin().entry("cublas/invalid-value").unwrap().cause.en.contains("cuBLASLt libraries"));
    assert!(lead("cublas/not-supported").contains("bf16"));
}

#[test]
fn markdown_is_rendered_in_the_requested_language() {
    let entry = builtin().entry("cublas/alloc-failed").unwrap();
    let en = entry.to_markdown(Lang::En);
    assert!(en.starts_with("### CUBLAS_STATUS_ALLOC_FAILED"), "{en}");
    assert!(en.contains("**What works**") && en.contains("**What does not work**"));
    assert!(en.contains("<https://docs.nvidia.com/cuda/cublas/index.html#cublasstatus-t>"));
    let zh = entry.to_markdown(Lang::from_locale("zh-CN"));
    assert!(
        zh.contains("cuBLAS 无法分配显存") && zh.contains("**可行的办法**") && zh.contains("**无效的做法**"),
        "{zh}"
    );
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

const USER_ENTRY: &str = r#"
id = "team/flaky-node"
title.en = "Node 7 loses its GPU"
cause.en = "GPU 3 on node 7 falls off the bus."

[match]
patterns = ['Xid 79|Xid \(PCI:[^)]*\): 79']
examples = ["NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "kernel: Xid 79 on node-7"]

[[workarounds]]
action.en = "Drain node 7 and open a ticket."
when.en = "Always."
code = "scontrol update nodename=node-7 state=drain reason=xid79"
code_lang = "sh"
sources = ["https://docs.nvidia.com/deploy/xid-errors/index.html"]
"#;

#[test]
fn user_directories_add_and_override_entries() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "team/flaky-node.toml", USER_ENTRY);
    let override_text =
        BUILTIN_FILES.iter().find(|(p, _)| p.ends_with("alloc-failed.toml")).unwrap().1.replace(
            "CUBLAS_STATUS_ALLOC_FAILED: cuBLAS could not allocate GPU memory",
            "Our own advice for ALLOC_FAILED",
        );
    write(dir.path(), "nested/override.toml", &override_text);
    let base = Base::with_user_dirs(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(base.len(), builtin().len() + 1);
    assert_eq!(base.entry("cublas/alloc-failed").unwrap().title.en, "Our own advice for ALLOC_FAILED");
    let user = base.entry("team/flaky-node").unwrap();
    assert_eq!(user.title.get(Lang::Zh), "Node 7 loses its GPU", "English stands in for missing Chinese");
    let report = explain("kernel: Xid 79 on node-7", &base, &ExplainOptions::default());
    assert_eq!(report.findings[0].entry.id, "team/flaky-node");
}

#[test]
fn broken_user_entries_name_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let bad_regex = write(dir.path(), "bad.toml", &USER_ENTRY.replace("'Xid 79|", "'Xid (79|"));
    let error = Base::with_user_dirs(&[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(error.contains(&bad_regex.display().to_string()) && error.contains("does not compile"), "{error}");

    std::fs::write(&bad_regex, USER_ENTRY.replace("code = ", "snippet = ")).unwrap();
    let error = Base::with_user_dirs(&[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(error.contains("unknown field `snippet`"), "{error}");

    std::fs::write(&bad_regex, USER_ENTRY.replace("kernel: Xid 79 on node-7", "kernel: GPU lost")).unwrap();
    let error = Base::with_user_dirs(&[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(error.contains("example `kernel: GPU lost` is matched by none of the patterns"), "{error}");

    std::fs::write(
        &bad_regex,
        USER_ENTRY.replace("sources = [\"https://docs.nvidia.com/deploy/xid-errors/index.html\"]", "sources = []"),
    )
    .unwrap();
    let error = Base::with_user_dirs(&[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(error.contains("has no `sources`"), "{error}");

    let missing = dir.path().join("nope");
    let error = Base::with_user_dirs(std::slice::from_ref(&missing)).unwrap_err().to_string();
    assert!(error.contains("knowledge-dirs") && error.contains(&missing.display().to_string()), "{error}");
}

#[test]
fn knowledge_links_of_registered_rules_resolve() {
    for rule in culint::rules::RULES {
        if let Some(id) = rule.knowledge {
            assert!(
                builtin().entry(id).is_some(),
                "{} {} links to unknown knowledge entry `{id}`",
                rule.code,
                rule.name
            );
        }
    }
}

#[test]
fn knowledge_links_of_probe_checks_resolve() {
    // Probe checks link entries with `.knowledge("id")` in code rather than a registry table.
    let link = regex::Regex::new(r#"\.knowledge\("([^"]+)"\)"#).unwrap();
    let mut links = 0;
    for file in std::fs::read_dir(repo_root().join("server/src/probe")).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for id in link.captures_iter(&text).map(|c| c[1].to_owned()) {
            links += 1;
            assert!(builtin().entry(&id).is_some(), "{} links to unknown knowledge entry `{id}`", path.display());
        }
    }
    assert!(links > 0, "no probe check links an entry; has the probe's API changed?");
}
