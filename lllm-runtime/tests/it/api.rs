//! The shape of the public API: a short root, and every guide in `docs/` rendered by `cargo doc`
//! (which also runs its examples as doctests). Read from the sources, since the root's names and the
//! guides' homes are what a reader of the code sees.

use std::path::{Path, PathBuf};

/// The most names the crate root may hold, modules included.
const MAX_ROOT_NAMES: usize = 45;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

/// `text` without its `//` comments (line and doc comments alike).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names a `pub use` tree brings in: `a::{b, c::d as e}` gives `b` and `e`.
fn use_names(tree: &str) -> Vec<String> {
    let flat: String = tree
        .chars()
        .filter(|c| !c.is_whitespace() || *c == ' ')
        .collect();
    let inner = match (flat.find('{'), flat.rfind('}')) {
        (Some(open), Some(close)) => &flat[open + 1..close],
        _ => flat.as_str(),
    };
    inner
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            let last = part.rsplit(" as ").next().unwrap_or(part);
            last.rsplit("::").next().unwrap_or(last).to_owned()
        })
        .collect()
}

/// Every name `lib.rs` makes public at the root: each `pub use` name, `pub mod` and `pub` item.
fn root_names(lib: &str) -> Vec<String> {
    let lib = code(lib);
    let mut names = Vec::new();
    for (i, _) in lib.match_indices("pub use ") {
        let rest = &lib[i + "pub use ".len()..];
        let tree = &rest[..rest.find(';').expect("a use ends with `;`")];
        names.extend(use_names(tree));
    }
    for line in lib.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["pub", kind, name, ..] = words.as_slice() {
            if ["mod", "fn", "struct", "enum", "trait", "const", "type"].contains(kind) {
                let end = name
                    .find(|c: char| !c.is_alphanumeric() && c != '_')
                    .unwrap_or(name.len());
                names.push(name[..end].to_owned());
            }
        }
    }
    names
}

#[test]
fn the_root_holds_at_most_45_names() {
    let lib =
        std::fs::read_to_string(workspace().join("lllm-runtime/src/lib.rs")).expect("lib.rs reads");
    let names = root_names(&lib);
    assert!(
        names.len() <= MAX_ROOT_NAMES,
        "the root of lllm_runtime holds {} names, more than {MAX_ROOT_NAMES}: {names:?}; put the \
         new ones in the namespace of their guide",
        names.len()
    );
    // The count reads the file as it is: the names a first program meets are among them.
    for name in [
        "Agent",
        "Engine",
        "Invoker",
        "InferenceHints",
        "load_tactic",
        "tool_fn",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} is at the root: {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n == "internal"),
        "no `internal` module: {names:?}"
    );
}

#[test]
fn the_name_counter_counts_what_a_root_exports() {
    let lib = "//! docs naming pub use x::{A, B};\npub mod agent;\nmod private;\n\
               pub use engine::{Engine, Host as H};\npub use lllm_core::{\n    a::B, C,\n};\n\
               pub fn halt() {}\n";
    assert_eq!(
        root_names(lib),
        ["Engine", "H", "B", "C", "agent", "halt"].map(String::from)
    );
}

/// The files whose documentation may include a guide: the runtime's sources, and the roots of the
/// command's and the benchmarks' crates.
fn documented_sources() -> Vec<PathBuf> {
    let root = workspace();
    let mut files = vec![
        root.join("lllm-cli/src/lib.rs"),
        root.join("bench/src/lib.rs"),
    ];
    let mut dirs = vec![root.join("lllm-runtime/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the sources list") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn every_guide_renders_in_the_crate_docs() {
    let sources: String = documented_sources()
        .iter()
        .map(|path| std::fs::read_to_string(path).expect("a source reads"))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(workspace().join("docs")).expect("docs/ lists") {
        let name = entry
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !name.ends_with(".md") {
            continue;
        }
        let included = format!("docs/{name}\")]");
        if !sources.lines().any(|line| {
            line.trim_start().starts_with("#![doc = include_str!(") && line.contains(&included)
        }) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "guides no namespace renders with #![doc = include_str!(..)]: {missing:?}"
    );
}
