//! Loading (and so checking) large tactics: must stay near linear in the file's size. Two shapes:
//! many agents, each with tools and a step, over a base; and a large `base:` overlay of `model_args`
//! with few agents. Run with `cargo bench -p lllm-core --bench load`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use lllm_core::TacticLoader;

/// Writes `base.yaml` (global with `args` model_args keys and as many extra_body keys) and `t.yaml`
/// (the same keys overlaid, `agents` agents with 3 tools each, one step per agent); returns t.yaml.
fn write_tactic(dir: &Path, agents: usize, args: usize) -> PathBuf {
    let mut base = String::from(
        "global:\n  model_name: m\n  model_args:\n    api_base: http://127.0.0.1:9/v1\n    extra_body:\n",
    );
    let mut top = String::from("base: base.yaml\nglobal:\n  model_args:\n    extra_body:\n");
    for i in 0..args {
        writeln!(base, "      k{i}: {i}").ok();
        writeln!(top, "      k{i}: {}", i + 1).ok();
    }
    for i in 0..args {
        writeln!(base, "    p_{i}x: {i}").ok();
        writeln!(top, "    p_{i}x: {}", i + 1).ok();
    }
    top.push_str("agent_configs:\n");
    for a in 0..agents {
        writeln!(
            top,
            "  - name: a{a}\n    system_prompt: 'You are {{{{ input }}}} {a}'\n    tools:"
        )
        .ok();
        for t in 0..3 {
            writeln!(
                top,
                "      - name: t{t}\n        description: d\n        command: [sh]"
            )
            .ok();
        }
    }
    top.push_str("steps:\n");
    for a in 0..agents {
        writeln!(
            top,
            "  - agent: a{a}\n    receive: 'hi {{{{ input }}}}'\n    save: v{a}"
        )
        .ok();
    }
    std::fs::write(dir.join("base.yaml"), base).expect("write");
    std::fs::write(dir.join("t.yaml"), top).expect("write");
    dir.join("t.yaml")
}

fn load(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("lllm-bench-load-{}", std::process::id()));
    let loader = TacticLoader::new().env(|_| None);
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    // (name, agents, overlay keys): about 45,000 and 80,000 lines with the base.
    for (name, agents, args) in [
        ("3000_agents_45k_lines", 3000, 100),
        ("20000_key_overlay_80k_lines", 10, 20_000),
    ] {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).expect("dir");
        let tactic = write_tactic(&sub, agents, args);
        group.bench_function(name, |b| {
            b.iter(|| loader.load(&tactic).expect("valid"));
        });
    }
    group.finish();
    std::fs::remove_dir_all(&dir).ok();
}

criterion_group!(benches, load);
criterion_main!(benches);
