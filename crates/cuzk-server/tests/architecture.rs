//! ARCHITECTURE.md stays true: every config key it names in backticks
//! (`daemon.listen`, `gpus.tuning.trace_msm`) is in `cuzk.example.toml`
//! under its section, and every type (`ProverBackend`, `Opened::salvage`)
//! is defined in the sources — a struct, enum, trait, type alias or enum
//! variant, or a message or RPC of the wire contract — with its member,
//! when one is named, present in the sources too. (The paths it names are
//! checked by `scripts/check-doc-paths.sh`, a CI step.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Files and directories of the repository, relative to its root (no
/// build output, no VCS or scratch directories).
fn tree(root: &Path) -> (Vec<String>, BTreeSet<String>) {
    let mut files = Vec::new();
    let mut dirs = BTreeSet::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(root.join(&rel)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "target" | ".git" | ".dev" | "node_modules") {
                continue;
            }
            let path = rel.join(&name);
            let text = path.to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                dirs.insert(text);
                stack.push(path);
            } else {
                files.push(text);
            }
        }
    }
    (files, dirs)
}

/// `section.key` (or `section.key = value`) of a config section.
fn config_key(t: &str) -> Option<(String, String)> {
    let k = t.split(" = ").next()?;
    let (section, key) = k.rsplit_once('.')?;
    // A file name (`params.rs`), not a key.
    if ["rs", "md", "toml", "cu", "cuh", "sh", "proto"].contains(&key) {
        return None;
    }
    let top = section.split('.').next()?;
    let known = ["daemon", "engine", "memory", "srs", "params", "gpus"];
    let word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    (known.contains(&top) && section.split('.').all(word) && word(key))
        .then(|| (section.to_string(), key.to_string()))
}

/// `Type` or `Type::member` (optionally with `()`), CamelCase; gRPC codes
/// (all capitals) are not types.
fn type_name(t: &str) -> Option<(String, Option<String>)> {
    let t = t.strip_suffix("()").unwrap_or(t);
    let (ty, member) = match t.split_once("::") {
        Some((a, b)) => (a, Some(b)),
        None => (t, None),
    };
    let camel = ty.len() > 1
        && ty.starts_with(|c: char| c.is_ascii_uppercase())
        && ty.chars().all(|c| c.is_ascii_alphanumeric())
        && ty.chars().any(|c| c.is_ascii_lowercase());
    let member_ok = member
        .is_none_or(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    (camel && member_ok).then(|| (ty.to_string(), member.map(str::to_string)))
}

/// The keys of each section of the example config, commented-out ones too.
fn example_keys(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root.join("cuzk.example.toml")).unwrap();
    let mut keys: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(s) = line.strip_prefix('[') {
            section = s.trim_end_matches(']').to_string();
            keys.entry(section.clone()).or_default();
        } else if let Some((k, _)) = line.trim_start_matches("# ").split_once(" = ") {
            if !k.contains(' ') && !k.starts_with('#') {
                keys.entry(section.clone())
                    .or_default()
                    .insert(k.to_string());
            }
        }
    }
    keys
}

/// Whether `name` is defined in `src`: an item, or an enum variant (a
/// line starting with it), or a message or RPC of the wire contract.
fn defined(src: &str, proto: &str, name: &str) -> bool {
    let item = ["struct", "enum", "trait", "type", "union"]
        .iter()
        .any(|k| {
            src.contains(&format!("{k} {name} "))
                || src.contains(&format!("{k} {name}<"))
                || src.contains(&format!("{k} {name}("))
                || src.contains(&format!("{k} {name};"))
                || src.contains(&format!("{k} {name}:"))
        });
    let variant = src.lines().any(|l| {
        let l = l.trim_start();
        l.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with([',', '(', ' ', '{']) || rest.is_empty())
    });
    let wire =
        proto.contains(&format!("rpc {name}(")) || proto.contains(&format!("message {name} "));
    item || variant || wire
}

fn read_sources(root: &Path, files: &[String], ext: &[&str]) -> String {
    files
        .iter()
        .filter(|f| ext.iter().any(|e| f.ends_with(e)))
        .map(|f| std::fs::read_to_string(root.join(f)).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn architecture_names_what_exists() {
    let root = root();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let (files, _) = tree(&root);
    let src = read_sources(&root, &files, &[".rs", ".cu", ".cuh"]);
    let proto = read_sources(&root, &files, &[".proto"]);
    let keys = example_keys(&root);
    // The standard library's types the text names.
    let std_types = [
        "BTreeMap", "HashMap", "Arc", "Mutex", "Condvar", "Vec", "Option", "Result", "String",
    ];
    let mut wrong = Vec::new();
    let (mut types, mut config) = (0, 0);
    for t in doc.split('`').skip(1).step_by(2) {
        let t = t.trim();
        if let Some((section, key)) = config_key(t) {
            config += 1;
            if !keys.get(&section).is_some_and(|k| k.contains(&key)) {
                wrong.push(format!(
                    "config key `{t}`: not in cuzk.example.toml [{section}]"
                ));
            }
        } else if let Some((ty, member)) = type_name(t) {
            types += 1;
            if std_types.contains(&ty.as_str()) {
                continue;
            }
            if !defined(&src, &proto, &ty) {
                wrong.push(format!("type `{t}`: `{ty}` is defined nowhere"));
            } else if let Some(m) = member {
                let used = src.contains(&format!("fn {m}"))
                    || src.contains(&format!("{m}:"))
                    || src.contains(&format!("{m},"))
                    || src.contains(&format!("{m}("));
                if !used {
                    wrong.push(format!("type `{t}`: no member `{m}`"));
                }
            }
        }
    }
    eprintln!("ARCHITECTURE.md: {config} config keys, {types} types checked");
    assert!(
        config > 10 && types > 30,
        "the checks found too little to check"
    );
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md is out of date:\n{}",
        wrong.join("\n")
    );
}
