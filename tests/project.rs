//! Project-aware analysis: calls into other modules of the same project are resolved to files,
//! summarised once, and the rules use those summaries. The layouts under
//! `tests/fixtures/project/` are shaped like real training repositories.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use culint::diagnostic::Diagnostic;
use culint::lint::{LintContext, LintSettings, RuleSet, lint_text};
use culint::project::{MAX_MODULE_BYTES, ProjectIndex, ProjectLookup};
use culint::semantic::FunctionSummary;
use culint::text::LineIndex;

fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/project").join(relative)
}

fn lint_with(path: &Path, project: Option<&ProjectIndex>, rules: RuleSet) -> Vec<Diagnostic> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    lint_text(
        &text,
        LintContext { path: Some(path), project, code_kind: None, preview: false },
        &LintSettings { rules, ..Default::default() },
    )
}

/// `(line, code)` of every finding of the rules that read project summaries: whether a helper
/// sets the device, enters autocast or enables checkpointing. Other rules have their own
/// fixtures, and these layouts are not meant to be free of everything they might report.
fn findings(path: &Path, project: Option<&ProjectIndex>) -> BTreeSet<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines = LineIndex::new(&text);
    lint_with(path, project, RuleSet::from_selectors(&PROJECT_AWARE_RULES))
        .iter()
        .map(|d| (lines.location(&text, d.range.start).row, d.code.to_owned()))
        .collect()
}

const PROJECT_AWARE_RULES: [&str; 3] = ["CUL101", "CUL301", "CUL302"];

/// `(line, code)` of every `# error: CODE` marker.
fn marked(path: &Path) -> BTreeSet<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| line.split_once("# error:").map(|(_, codes)| (i + 1, codes)))
        .flat_map(|(row, codes)| codes.split([',', ' ']).filter(|c| !c.is_empty()).map(move |c| (row, c.to_owned())))
        .collect()
}

fn found(lookup: ProjectLookup) -> FunctionSummary {
    match lookup {
        ProjectLookup::Found(summary) => summary,
        other => panic!("expected a summary, got {other:?}"),
    }
}

fn assert_missing(lookup: ProjectLookup) {
    assert!(matches!(lookup, ProjectLookup::Missing), "expected Missing, got {lookup:?}");
}

#[test]
fn helper_that_sets_the_device_keeps_missing_set_device_quiet() {
    let project = ProjectIndex::new();
    for file in ["ddp_helper/train.py", "ddp_helper/train_from_import.py", "ddp_helper/train_configure.py"] {
        let path = fixture(file);
        assert_eq!(findings(&path, Some(&project)), BTreeSet::new(), "{file}");
    }
    let summary = found(project.lookup(Some(&fixture("ddp_helper/train.py")), "utils.init_distributed_mode"));
    assert!(summary.calls_set_device);
    // Through a helper of the helper: `configure` calls `init_distributed_mode` in utils.py.
    assert!(found(project.lookup(Some(&fixture("ddp_helper/train.py")), "utils.configure")).calls_set_device);
}

#[test]
fn helper_whose_name_says_nothing_is_only_understood_through_the_project() {
    // Without the project, `utils.configure` is an unseen helper whose name does not suggest
    // distributed set-up, so the placement is flagged; the summary shows it calls set_device.
    let path = fixture("ddp_helper/train_configure.py");
    assert_eq!(findings(&path, None), BTreeSet::from([(13, "CUL101".to_owned())]));
    assert_eq!(findings(&path, Some(&ProjectIndex::new())), BTreeSet::new());
}

#[test]
fn star_imported_helpers_are_resolved_through_the_project() {
    let project = ProjectIndex::new();
    let quiet = fixture("ddp_helper/train_star_import.py");
    assert_eq!(findings(&quiet, Some(&project)), BTreeSet::new());
    // Without the project `configure` is unseen: quiet too, but only because it cannot be seen.
    let flagged = fixture("ddp_helper_no_set_device/train_star_import.py");
    assert_eq!(findings(&flagged, Some(&project)), marked(&flagged));
    assert!(!marked(&flagged).is_empty());
    assert_eq!(findings(&flagged, None), BTreeSet::new());
}

#[test]
fn setup_helper_that_hands_over_to_unseen_code_keeps_missing_set_device_quiet() {
    let project = ProjectIndex::new();
    let train = fixture("helper_calls_unseen/train.py");
    let summary = found(project.lookup(Some(&train), "utils.init_distributed_mode"));
    assert!(!summary.calls_set_device && summary.calls_unseen);
    assert_eq!(findings(&train, Some(&project)), BTreeSet::new());
    let logging = fixture("helper_calls_unseen/train_logging_helper.py");
    assert_eq!(findings(&logging, Some(&project)), marked(&logging));
    assert!(!marked(&logging).is_empty());
}

#[test]
fn helper_that_never_sets_the_device_is_flagged() {
    let path = fixture("ddp_helper_no_set_device/train.py");
    let project = ProjectIndex::new();
    assert_eq!(findings(&path, Some(&project)), marked(&path));
    assert!(!marked(&path).is_empty());
    let summary = found(project.lookup(Some(&path), "utils.init_distributed_mode"));
    assert!(!summary.calls_set_device && !summary.calls_unseen);
    // Without the project the helper is unseen, and the rule stays quiet rather than guess.
    assert_eq!(findings(&path, None), BTreeSet::new());
}

#[test]
fn engine_step_loop_is_summarised_with_its_autocast_and_zero_grad() {
    let main = fixture("engine_loop/main.py");
    let project = ProjectIndex::new();
    let train = found(project.lookup(Some(&main), "engine.train_one_epoch"));
    assert_eq!(
        train,
        FunctionSummary { has_step_loop: true, enters_autocast: true, zeroes_grads: true, ..Default::default() }
    );
    let evaluate = found(project.lookup(Some(&main), "engine.evaluate"));
    assert!(evaluate.runs_under_no_grad && !evaluate.has_step_loop);
    assert_eq!(found(project.lookup(Some(&main), "engine.log_metrics")), FunctionSummary::default());
    assert_missing(project.lookup(Some(&main), "engine.not_defined_anywhere"));
    assert!(findings(&main, Some(&project)).is_empty(), "{:?}", findings(&main, Some(&project)));
}

#[test]
fn helpers_that_zero_gradients_by_parameter_keep_missing_zero_grad_quiet() {
    let path = fixture("grad_helpers/train.py");
    let project = ProjectIndex::new();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = LineIndex::new(&text);
    let flagged: BTreeSet<(usize, String)> = lint_with(&path, Some(&project), RuleSet::from_selectors(&["CUL501"]))
        .iter()
        .map(|d| (lines.location(&text, d.range.start).row, d.code.to_owned()))
        .collect();
    assert_eq!(flagged, marked(&path));
    assert!(!marked(&path).is_empty());
    // Pyro's `p.grad = torch.zeros_like(p.grad)` and `p.grad.zero_()` zero; reading grads does not.
    assert!(found(project.lookup(Some(&path), "utils.zero_grads")).zeroes_grads);
    assert!(found(project.lookup(Some(&path), "utils.clear_grads")).zeroes_grads);
    assert!(!found(project.lookup(Some(&path), "utils.log_grads")).zeroes_grads);
}

#[test]
fn autocast_in_a_helper_of_the_step_loop_keeps_missing_autocast_quiet() {
    let project = ProjectIndex::new();
    assert_eq!(findings(&fixture("engine_loop/train_steps.py"), Some(&project)), BTreeSet::new());
    let fp32 = fixture("engine_loop/train_steps_fp32.py");
    assert_eq!(findings(&fp32, Some(&project)), marked(&fp32));
    assert!(!marked(&fp32).is_empty());
    // Without the project the helper is unseen, and the rule does not guess.
    assert_eq!(findings(&fp32, None), BTreeSet::new());
}

#[test]
fn star_imported_project_module_named_like_a_library_is_the_projects() {
    let project = ProjectIndex::new();
    let train = fixture("star_models/train.py");
    assert!(!marked(&train).is_empty());
    assert_eq!(findings(&train, Some(&project)), marked(&train));
    // Without the project, `denormalize` may come from anywhere and may enter autocast.
    assert_eq!(findings(&train, None), BTreeSet::new());
}

#[test]
fn package_reexports_are_followed_two_levels() {
    let user = fixture("engine_loop/uses_package.py");
    let project = ProjectIndex::new();
    // pkg/__init__.py → pkg/api.py → pkg/engine.py.
    let train = found(project.lookup(Some(&user), "pkg.train_one_epoch"));
    assert!(train.has_step_loop && train.enters_autocast);
    // pkg/__init__.py → api.py → relay.py → engine.py is one level too many.
    assert_missing(project.lookup(Some(&user), "pkg.far_train"));
    // A package that re-exports with `from .tools import *`.
    assert!(found(project.lookup(Some(&user), "star_pkg.pin_device")).calls_set_device);
    assert_eq!(found(project.lookup(Some(&user), "star_pkg.describe")), FunctionSummary::default());
    assert_missing(project.lookup(Some(&user), "star_pkg.nowhere"));
    // The same function by its own module is found, with the loop of the local helper it calls.
    let far = found(project.lookup(Some(&user), "pkg.engine.far_train"));
    assert!(far.has_step_loop && far.enters_autocast);
}

#[test]
fn classes_answer_for_their_constructor_and_methods() {
    let user = fixture("engine_loop/uses_package.py");
    let project = ProjectIndex::new();
    assert!(found(project.lookup(Some(&user), "pkg.Trainer")).calls_set_device);
    let fit = found(project.lookup(Some(&user), "pkg.engine.Trainer.fit"));
    assert!(fit.has_step_loop && fit.enables_checkpointing && fit.zeroes_grads);
    assert_eq!(found(project.lookup(Some(&user), "pkg.engine.Plain")), FunctionSummary::default());
    assert_missing(project.lookup(Some(&user), "pkg.engine.Plain.not_a_method"));
}

#[test]
fn relative_imports_resolve_from_the_importing_package() {
    let runner = fixture("engine_loop/pkg/sub/runner.py");
    let project = ProjectIndex::new();
    assert!(found(project.lookup(Some(&runner), ".helpers.warm_up")).runs_under_no_grad);
    assert!(found(project.lookup(Some(&runner), "..engine.train_one_epoch")).has_step_loop);
    // `from .. import train_one_epoch`: the parent package's `__init__.py` re-exports it.
    assert!(found(project.lookup(Some(&runner), "..train_one_epoch")).has_step_loop);
    assert_missing(project.lookup(Some(&runner), ".missing_module.vanished"));
    assert_missing(project.lookup(Some(&runner), &format!("{}too_far.f", ".".repeat(64))));
    // A relative import with no file to start from cannot be resolved.
    assert_missing(project.lookup(None, ".helpers.warm_up"));
    // The whole module summarised: the helpers' loop and autocast, and a call it cannot see.
    let run = found(project.lookup(Some(&fixture("engine_loop/uses_package.py")), "pkg.sub.runner.run"));
    assert!(run.has_step_loop && run.enters_autocast && run.calls_unseen);
}

#[test]
fn checkpointing_turned_on_in_a_peft_helper_is_summarised() {
    let train = fixture("peft_helper/train.py");
    let project = ProjectIndex::new();
    assert!(found(project.lookup(Some(&train), "model_utils.enable_memory_savings")).enables_checkpointing);
    assert!(found(project.lookup(Some(&train), "model_utils.enable_checkpointing_by_flag")).enables_checkpointing);
    assert!(!found(project.lookup(Some(&train), "model_utils.add_lora")).enables_checkpointing);
    assert!(findings(&train, Some(&project)).is_empty(), "{:?}", findings(&train, Some(&project)));
    // A helper that only adds adapters leaves the 7B model without checkpointing.
    let lora_only = fixture("peft_helper/train_lora_only.py");
    assert_eq!(findings(&lora_only, Some(&project)), marked(&lora_only));
    assert!(!marked(&lora_only).is_empty());
    assert_eq!(findings(&lora_only, None), BTreeSet::new());
    // A helper that hands the model to code culint cannot see may turn checkpointing on.
    assert!(found(project.lookup(Some(&train), "model_utils.prepare_with_vendor_kit")).calls_unseen);
    assert_eq!(findings(&fixture("peft_helper/train_vendor_kit.py"), Some(&project)), BTreeSet::new());
}

#[test]
fn src_layouts_are_searched_under_the_project_root() {
    let script = fixture("src_layout/scripts/train.py");
    let project = ProjectIndex::new();
    assert!(found(project.lookup(Some(&script), "trainkit.distributed.setup")).calls_set_device);
    assert_eq!(findings(&script, Some(&project)), BTreeSet::new());
}

#[test]
fn helpers_that_cannot_be_found_keep_the_rules_quiet() {
    let train = fixture("missing/train.py");
    let project = ProjectIndex::new();
    assert_missing(project.lookup(Some(&train), ".launch.init_dist"));
    // `mypkg/` is a package of this project, so its missing module is a project module.
    assert_missing(project.lookup(Some(&train), "mypkg.launcher.init_process"));
    assert!(matches!(project.lookup(Some(&train), "dist_utils.setup_distributed"), ProjectLookup::NotInProject));
    assert!(matches!(project.lookup(Some(&train), "torch.cuda.set_device"), ProjectLookup::NotInProject));
    assert_eq!(findings(&train, Some(&project)), BTreeSet::new());
}

#[test]
fn import_cycles_end_and_answer_the_same_in_any_order() {
    let main = fixture("cycle/main.py");
    for order in [["a.helper_a", "b.helper_b"], ["b.helper_b", "a.helper_a"]] {
        let project = ProjectIndex::new();
        for name in order {
            let summary = found(project.lookup(Some(&main), name));
            assert!(summary.calls_set_device, "{name} after {order:?}");
        }
        assert_eq!(found(project.lookup(Some(&main), "b.only_b")), FunctionSummary::default());
    }
}

#[test]
fn one_index_serves_many_threads() {
    let project = ProjectIndex::new();
    let files: Vec<PathBuf> = [
        "ddp_helper/train.py",
        "ddp_helper/train_configure.py",
        "ddp_helper_no_set_device/train.py",
        "engine_loop/main.py",
        "engine_loop/uses_package.py",
        "missing/train.py",
        "cycle/main.py",
        "src_layout/scripts/train.py",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    let expected: Vec<_> = files.iter().map(|f| findings(f, Some(&ProjectIndex::new()))).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|thread| {
                let (project, files) = (&project, &files);
                scope.spawn(move || {
                    // Each thread walks the files from a different start, so module summaries
                    // are requested concurrently and in different orders.
                    (0..files.len())
                        .map(|i| (thread + i) % files.len())
                        .map(|i| (i, findings(&files[i], Some(project))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            for (i, got) in handle.join().expect("no thread panicked") {
                assert_eq!(got, expected[i], "{}", files[i].display());
            }
        }
    });
    for name in ["a.helper_a", "b.helper_b"] {
        assert!(found(project.lookup(Some(&fixture("cycle/main.py")), name)).calls_set_device);
    }
}

#[test]
fn oversized_modules_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
    let mut huge = String::from("import torch\n\n\ndef setup(rank):\n    torch.cuda.set_device(rank)\n");
    while huge.len() as u64 <= MAX_MODULE_BYTES {
        huge.push_str("# padding that makes this module larger than any hand-written one\n");
    }
    std::fs::write(dir.path().join("generated.py"), huge).unwrap();
    let main = dir.path().join("main.py");
    std::fs::write(&main, "from generated import setup\n").unwrap();
    assert_missing(ProjectIndex::new().lookup(Some(&main), "generated.setup"));
}

#[test]
fn changed_files_are_summarised_again_with_their_dependents() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
    let dist = dir.path().join("dist.py");
    std::fs::write(&dist, "def setup(rank):\n    pass\n").unwrap();
    std::fs::write(dir.path().join("launch.py"), "from dist import setup\n\n\ndef start(rank):\n    setup(rank)\n")
        .unwrap();
    let main = dir.path().join("main.py");
    std::fs::write(&main, "").unwrap();
    let project = ProjectIndex::new();
    assert!(!found(project.lookup(Some(&main), "launch.start")).calls_set_device);

    std::fs::write(&dist, "import torch\n\n\ndef setup(rank):\n    torch.cuda.set_device(rank)\n").unwrap();
    assert!(!found(project.lookup(Some(&main), "launch.start")).calls_set_device, "cached until invalidated");
    project.invalidate(&dist);
    assert!(found(project.lookup(Some(&main), "launch.start")).calls_set_device, "launch.py depends on dist.py");

    // An unsaved editor buffer takes the place of the file, and dropping it goes back to disk.
    project.set_overlay(&dist, Some(std::sync::Arc::new("def setup(rank):\n    return rank\n".to_owned())));
    assert!(!found(project.lookup(Some(&main), "dist.setup")).calls_set_device);
    assert!(!found(project.lookup(Some(&main), "launch.start")).calls_set_device);
    project.set_overlay(&dist, None);
    assert!(found(project.lookup(Some(&main), "launch.start")).calls_set_device);
}

#[test]
fn files_outside_any_project_search_their_own_folder() {
    let dir = tempfile::tempdir().unwrap();
    let helper = dir.path().join("helpers.py");
    std::fs::write(&helper, "import torch\n\n\ndef pin(rank):\n    torch.cuda.set_device(rank)\n").unwrap();
    let script = dir.path().join("script.py");
    std::fs::write(&script, "").unwrap();
    let project = ProjectIndex::new();
    assert!(found(project.lookup(Some(&script), "helpers.pin")).calls_set_device);
    // A relative path names the same file.
    let relative = relative_to_cwd(&script);
    assert!(found(project.lookup(Some(&relative), "helpers.pin")).calls_set_device);
    assert!(matches!(project.lookup(Some(&script), "nowhere.pin"), ProjectLookup::NotInProject));
}

/// `script` spelled relative to the current directory, through `..` components.
fn relative_to_cwd(script: &Path) -> PathBuf {
    let cwd = std::env::current_dir().unwrap();
    let ups = cwd.components().count() - 1;
    let mut relative = PathBuf::new();
    for _ in 0..ups {
        relative.push("..");
    }
    relative.join(script.strip_prefix("/").unwrap())
}

/// Lints every `.py` file under `$CULINT_REAL_WORLD` with one shared project index, as the CLI
/// does, and prints each finding and each file that does not parse cleanly. This is how the
/// public training scripts of tests/REAL_WORLD.md are reviewed:
/// `CULINT_REAL_WORLD=/tmp/realworld cargo test --test project real_world -- --ignored --nocapture`
/// (add `CULINT_NO_PROJECT=1` to lint each file on its own).
#[test]
#[ignore = "needs CULINT_REAL_WORLD, a folder of downloaded training scripts"]
fn real_world_scripts() {
    let root = PathBuf::from(std::env::var("CULINT_REAL_WORLD").expect("CULINT_REAL_WORLD names a folder"));
    let mut files = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                files.push(path);
            }
        }
    }
    files.sort();
    // `CULINT_NO_PROJECT=1` lints each file on its own, to see what the project index changes.
    let project = ProjectIndex::new();
    let project = std::env::var_os("CULINT_NO_PROJECT").is_none().then_some(&project);
    let mut total = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let syntax_errors = culint::parse::error_count(&culint::parse::parse(&text, None));
        if syntax_errors > 0 {
            println!("{}: {syntax_errors} syntax error node(s)", path.display());
        }
        let lines = LineIndex::new(&text);
        for diagnostic in lint_with(path, project, RuleSet::all()) {
            let at = lines.location(&text, diagnostic.range.start);
            println!("{}:{}:{}: {} {}", path.display(), at.row, at.column, diagnostic.code, diagnostic.message);
            total += 1;
        }
    }
    println!("{} files, {total} findings", files.len());
}
