use std::fs;
use std::path::Path;

use super::*;
use crate::rules::RULES;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A rule that exists, so selection tests do not depend on which rules the registry has.
fn some_rule() -> &'static crate::rules::Rule {
    RULES.first().expect("the registry has at least one rule")
}

#[test]
fn unknown_key_names_the_file_the_key_and_the_known_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pyproject.toml");
    write(&path, "[tool.culint]\nselct = [\"ALL\"]\n");
    let error = load(&path).unwrap_err().to_string();
    assert!(error.starts_with(&path.display().to_string()), "{error}");
    assert!(error.contains("unknown key `selct` in [tool.culint]; expected one of `select`"), "{error}");
}

#[test]
fn wrong_value_shapes_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("culint.toml");
    let cases = [
        ("select = \"ALL\"", "`select` at the top level: expected a list of strings, found a string"),
        ("unsafe-fixes = 1", "`unsafe-fixes` at the top level: expected true or false, found an integer"),
        ("output-format = \"xml\"", "unknown format `xml`; expected one of full, concise, json, sarif, github"),
        ("max-file-size = \"5TB\"", "more than the limit of 1 GiB"),
        ("max-file-size = -3", "expected a positive size, found -3"),
        ("exclude = [\"a/[b\"]", "not a valid glob"),
        ("select = [\"NOPE999\"]", "unknown rule selector `NOPE999`"),
        ("severity = { ALL = \"fatal\" }", "must be \"error\", \"warning\", \"info\" or \"hint\""),
        ("select = [", "invalid TOML"),
    ];
    for (text, expected) in cases {
        write(&path, text);
        let error = load(&path).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
}

#[test]
fn knowledge_dirs_must_stay_inside_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    fs::create_dir_all(project.join("kb")).unwrap();
    fs::create_dir_all(dir.path().join("outside")).unwrap();
    let path = project.join("culint.toml");

    write(&path, "knowledge-dirs = [\"kb\"]\n");
    let config = load(&path).unwrap();
    assert_eq!(config.options.knowledge_dirs, vec![project.join("kb").canonicalize().unwrap()]);

    write(&path, "knowledge-dirs = [\"../outside\"]\n");
    let error = load(&path).unwrap_err().to_string();
    assert!(error.contains("outside") && error.contains("must stay inside the project"), "{error}");

    write(&path, "knowledge-dirs = [\"missing\"]\n");
    assert!(load(&path).unwrap_err().to_string().contains("directory `missing` cannot be read"));
}

#[test]
fn nearest_configuration_wins_and_pyproject_without_table_does_not_count() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join("culint.toml"), "output-format = \"json\"\n");
    write(&root.join("a/pyproject.toml"), "[project]\nname = \"a\"\n");
    write(&root.join("b/pyproject.toml"), "[tool.culint]\noutput-format = \"concise\"\n");
    write(&root.join("b/c/x.py"), "");
    let resolver = Resolver::new(Overrides::default()).unwrap();

    let in_a = resolver.config_for_directory(&root.join("a")).unwrap().unwrap();
    assert_eq!(in_a.path.file_name().unwrap(), "culint.toml");
    let in_c = resolver.config_for_directory(&root.join("b/c")).unwrap().unwrap();
    assert_eq!(in_c.path.file_name().unwrap(), "pyproject.toml");
    assert_eq!(in_c.options.output_format, Some(OutputFormat::Concise));
}

#[test]
fn culint_toml_wins_over_pyproject_in_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("pyproject.toml"), "[tool.culint]\noutput-format = \"json\"\n");
    write(&dir.path().join("culint.toml"), "output-format = \"sarif\"\n");
    assert_eq!(find_config_file(dir.path()).unwrap().unwrap().file_name().unwrap(), "culint.toml");
}

#[test]
fn broken_configuration_is_reported_for_every_file_below_it() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("culint.toml"), "bogus = 1\n");
    let resolver = Resolver::new(Overrides::default()).unwrap();
    let error = resolver.settings_for(&dir.path().join("sub/train.py")).unwrap_err();
    assert!(error.message.contains("unknown key `bogus`"));
    assert!(resolver.settings_for(&dir.path().join("other.py")).is_err());
}

#[test]
fn per_file_ignores_and_exclude_apply_relative_to_the_config() {
    let rule = some_rule();
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("culint.toml"),
        &format!("exclude = [\"vendored\", \"gen/*.py\"]\n[per-file-ignores]\n\"tests/**\" = [\"{}\"]\n", rule.code),
    );
    let resolver = Resolver::new(Overrides::default()).unwrap();
    assert!(!resolver.settings_for(&dir.path().join("tests/unit/t.py")).unwrap().lint.rules.contains(rule));
    assert!(resolver.settings_for(&dir.path().join("train.py")).unwrap().lint.rules.contains(rule));
    assert!(resolver.is_excluded(&dir.path().join("lib/vendored")).unwrap());
    assert!(resolver.is_excluded(&dir.path().join("gen/x.py")).unwrap());
    assert!(!resolver.is_excluded(&dir.path().join("gen/deep/x.py")).unwrap());
}

#[test]
fn command_line_select_replaces_config_select_and_specific_selectors_win() {
    let rule = some_rule();
    let dir = tempfile::tempdir().unwrap();
    let prefix = &rule.code[..4];
    write(&dir.path().join("culint.toml"), &format!("select = [\"{}\"]\nignore = [\"{prefix}\"]\n", rule.name));
    let file = dir.path().join("x.py");

    let configured = Resolver::new(Overrides::default()).unwrap();
    assert!(
        configured.settings_for(&file).unwrap().lint.rules.contains(rule),
        "the name is more specific than the prefix"
    );

    let overridden = Resolver::new(Overrides { ignore: vec![rule.code.to_owned()], ..Overrides::default() }).unwrap();
    assert!(!overridden.settings_for(&file).unwrap().lint.rules.contains(rule));

    let forced = Resolver::new(Overrides {
        config_file: Some(dir.path().join("culint.toml")),
        select: Some(vec!["ALL".to_owned()]),
        ..Overrides::default()
    })
    .unwrap();
    assert_eq!(forced.settings_for(Path::new("/elsewhere/y.py")).unwrap().lint.rules.iter().count(), RULES.len());
}

#[test]
fn severity_overrides_expand_to_codes() {
    let rule = some_rule();
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("culint.toml"), &format!("[severity]\nALL = \"hint\"\n{} = \"error\"\n", rule.code));
    let resolver = Resolver::new(Overrides::default()).unwrap();
    let settings = resolver.settings_for(&dir.path().join("x.py")).unwrap();
    assert_eq!(settings.lint.severities.get(rule.code), Some(&crate::diagnostic::Severity::Error));
    assert!(
        settings.lint.severities.values().filter(|s| **s == crate::diagnostic::Severity::Hint).count()
            == RULES.len() - 1
    );
}

#[test]
fn absurdly_nested_toml_is_an_error_of_readable_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("culint.toml");
    let depth = 100_000;
    write(&path, &format!("select = {}{}\n", "[".repeat(depth), "]".repeat(depth)));
    let error = load(&path).unwrap_err().to_string();
    assert!(error.contains("invalid TOML"), "{error}");
    assert!(error.lines().all(|line| line.chars().count() <= 200), "{error}");
}

#[test]
fn oversized_configuration_files_are_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("culint.toml");
    write(&path, &format!("# {}\n", "x".repeat(2 << 20)));
    let error = load(&path).unwrap_err().to_string();
    assert!(error.contains("too large for a configuration file"), "{error}");
}

/// Paths reach the resolver through symbolic links, `..` and relative forms; each must meet the
/// per-file ignores of the configuration it really lives under.
#[test]
fn per_file_ignores_match_however_the_path_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let code = some_rule().code;
    let project = dir.path().join("project");
    write(&project.join("culint.toml"), &format!("[per-file-ignores]\n\"scripts/*.py\" = [\"{code}\"]\n"));
    write(&project.join("scripts/train.py"), "import torch\n");
    write(&dir.path().join("other/culint.toml"), "select = [\"ALL\"]\n");
    std::os::unix::fs::symlink(project.join("scripts"), dir.path().join("linked_dir")).unwrap();
    std::os::unix::fs::symlink(project.join("scripts/train.py"), dir.path().join("other/linked.py")).unwrap();
    let resolver = Resolver::new(Overrides::default()).unwrap();
    let ignored = |path: &Path| !resolver.settings_for(path).unwrap().lint.rules.contains(some_rule());
    assert!(ignored(&project.join("scripts/train.py")));
    assert!(ignored(&project.join("scripts/../scripts/train.py")));
    assert!(ignored(&dir.path().join("linked_dir/train.py")), "a path through a linked folder");
    assert!(ignored(&dir.path().join("other/linked.py")), "a linked file takes its target's configuration");
    assert!(!ignored(&project.join("train.py")), "a file the pattern does not match");
}
