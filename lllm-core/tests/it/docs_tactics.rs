//! Every complete tactic shown in the README and the guides (a ```yaml block with `agent_configs:`)
//! loads: the documentation cannot drift from the format.

use std::path::{Path, PathBuf};

use lllm_core::parse_tactic;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The ```yaml blocks of a Markdown file, with the line each starts on.
fn yaml_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        match current.as_mut() {
            Some(_) if fence.starts_with("```") => blocks.extend(current.take()),
            Some((_, block)) => {
                block.push_str(line);
                block.push('\n');
            }
            None if fence.starts_with("```yaml") => current = Some((number + 2, String::new())),
            None => {}
        }
    }
    blocks
}

fn documents() -> Vec<PathBuf> {
    let root = repository();
    let mut files = vec![root.join("README.md")];
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        files.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md")),
        );
    }
    files.sort();
    files
}

#[test]
fn every_tactic_in_the_documentation_loads() {
    let root = repository();
    let mut loaded = 0;
    let mut failures = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("read the document");
        for (line, block) in yaml_blocks(&text) {
            // A file with `base:` needs its base beside it; the guides show those as fragments.
            let has_base = block.lines().any(|l| l.starts_with("base:"));
            if !block.contains("agent_configs:") || has_base {
                continue;
            }
            // Loaded as if it were a file at the repository root, so `prompts/` resolves.
            let path = root.join("documented.yaml");
            let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-doc".to_owned());
            match parse_tactic(block.as_bytes(), &path, &env) {
                Ok(_) => loaded += 1,
                Err(e) => failures.push(format!("{}:{line}: {e}", file.display())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        loaded >= 2,
        "the README and guides show tactics ({loaded} found)"
    );
}

/// Every eval file shown in the eval guide (a ```yaml block with `cases:`) loads, beside the eval
/// example's tactic (the guide's `tactic: tactic.yaml`), and so does the example's own eval file.
#[test]
fn every_eval_file_in_the_eval_guide_loads() {
    let root = repository();
    let dir = std::env::temp_dir().join(format!("lllm-doc-evals-{}", std::process::id()));
    let example = root.join("examples/eval");
    // The tactic's tool runs `../word_count/count_words.py`: the folder keeps that layout.
    std::fs::create_dir_all(dir.join("eval")).expect("a folder");
    std::fs::copy(example.join("tactic.yaml"), dir.join("eval/tactic.yaml")).expect("copy");
    let text = std::fs::read_to_string(root.join("docs/eval.md")).expect("the eval guide");
    let mut loaded = 0;
    let mut failures = Vec::new();
    for (line, block) in yaml_blocks(&text) {
        if !block.contains("cases:") {
            continue;
        }
        let path = dir.join("eval/evals.yaml");
        std::fs::write(&path, &block).expect("write");
        match lllm_core::load_evals(&path) {
            Ok(suite) => loaded += suite.cases.len(),
            Err(e) => failures.push(format!("docs/eval.md:{line}: {e}")),
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    if let Err(e) = lllm_core::load_evals(&example.join("evals.yaml")) {
        failures.push(format!("examples/eval/evals.yaml: {e}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        loaded >= 3,
        "the guide shows an eval file ({loaded} cases found)"
    );
}
