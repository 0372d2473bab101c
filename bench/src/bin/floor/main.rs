//! lllm against the floor of its stack: the real `lllm run` binary and a bare async-openai client
//! (`bare_client`) send the same growing conversation to the same stand-in server (the testing
//! stub, in this process), in one run, legs alternating. Prints, for both and as ratios, the cold
//! one-turn run (wall and CPU of the whole process), the marginal CPU per turn (a TURNS-turn run
//! minus a one-turn run, over TURNS − 1), the peak RSS of the TURNS-turn run and the size of the
//! binaries, as a markdown table of medians with their spread, and the marginal CPU per turn from
//! each leg's least runs (the criterion: interference only adds CPU time). It never asserts timings.
//!
//! `floor [--repeats N] [--turns N] [--lllm PATH] [--floor-runtime multi|current]`;
//! `scripts/bench_floor.sh` builds the release binaries and runs it. The floor runs on Tokio's
//! multi-threaded runtime (`#[tokio::main]`, as `lllm run` does) unless told `current`. `bare_client`, `rusage` and (by default) `lllm` are taken from the folder
//! of this binary.
#![allow(clippy::print_stdout)]

mod report;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use lllm_runtime::testing::StubServer;
use serde_json::Value;

use report::{Figures, Run};

type Error = Box<dyn std::error::Error>;

/// Settings from the command line.
struct Settings {
    repeats: usize,
    turns: usize,
    lllm: PathBuf,
    bin_dir: PathBuf,
    /// The bare client's Tokio runtime: `multi` or `current`.
    floor_runtime: String,
}

/// The two clients compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leg {
    /// `lllm run` on a tactic of one step per turn.
    Lllm,
    /// The bare async-openai client.
    Bare,
}

/// What a leg needs to run: the stub, the tactic folder and the binaries.
struct Stand {
    server: StubServer,
    tactics: PathBuf,
    settings: Settings,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let settings = settings()?;
    let load_before = load_average();
    let server = StubServer::start().await?;
    let tactics = std::env::temp_dir().join(format!("lllm-floor-{}", std::process::id()));
    std::fs::create_dir_all(&tactics)?;
    let stand = Stand {
        server,
        tactics,
        settings,
    };
    let outcome = measure_all(&stand).await;
    std::fs::remove_dir_all(&stand.tactics).ok();
    let (lllm, bare, same_body) = outcome?;
    let sizes = report::Sizes::of(
        &stand.settings.lllm,
        &stand.settings.bin_dir.join("bare_client"),
    );
    println!(
        "{}",
        report::table(&lllm, &bare, &sizes, stand.settings.turns)
    );
    println!();
    println!(
        "{} repeats, legs alternating; median (min–max); the floor on Tokio's `{}` runtime. \
         Request bodies of the two legs: {same_body}. \
         Load average (1, 5, 15 min) before: {load_before}; after: {}.",
        stand.settings.repeats,
        stand.settings.floor_runtime,
        load_average()
    );
    Ok(())
}

/// Runs every repeat of both legs; returns the figures of lllm, of the floor, and how their last
/// requests compare.
async fn measure_all(stand: &Stand) -> Result<(Figures, Figures, String), Error> {
    let turns = stand.settings.turns;
    for n in [1, turns] {
        std::fs::write(tactic_path(stand, n), tactic(&stand.server.base_url(), n))?;
    }
    // Both binaries' pages come into the page cache the same way, read ahead by the warm-up run:
    // the peak RSS counts the binary's pages a run maps, and how many a fault maps depends on the
    // size of the page cache's folios, which depends on how the file got there (a binary just
    // written by the linker or copied measures up to 3 MiB off the same binary read from disk).
    for binary in [
        &stand.settings.lllm,
        &stand.settings.bin_dir.join("bare_client"),
    ] {
        evict(binary)?;
    }
    for leg in [Leg::Lllm, Leg::Bare] {
        run_leg(stand, leg, 1).await?;
    }
    let (mut lllm, mut bare) = (Figures::default(), Figures::default());
    let mut same_body = String::new();
    for repeat in 0..stand.settings.repeats {
        let order = if repeat % 2 == 0 {
            [Leg::Lllm, Leg::Bare]
        } else {
            [Leg::Bare, Leg::Lllm]
        };
        let mut last_bodies = Vec::new();
        for leg in order {
            let one = run_leg(stand, leg, 1).await?;
            let many = run_leg(stand, leg, turns).await?;
            last_bodies.push((leg, many.1));
            let figures = if leg == Leg::Lllm {
                &mut lllm
            } else {
                &mut bare
            };
            figures.add(one.0, many.0, turns);
        }
        if repeat == 0 {
            same_body = compare_bodies(&last_bodies)?;
        }
    }
    Ok((lllm, bare, same_body))
}

/// One run of `leg` for `turns` turns: its costs and the last request's body.
async fn run_leg(stand: &Stand, leg: Leg, turns: usize) -> Result<(Run, Value), Error> {
    stand.server.clear_requests();
    let api_base = stand.server.base_url();
    let mut command = tokio::process::Command::new(stand.settings.bin_dir.join("rusage"));
    match leg {
        Leg::Lllm => command
            .arg(&stand.settings.lllm)
            .arg("run")
            .arg(tactic_path(stand, turns)),
        Leg::Bare => command
            .arg(stand.settings.bin_dir.join("bare_client"))
            .arg(&api_base)
            .arg(turns.to_string())
            .arg(&stand.settings.floor_runtime),
    };
    // Nothing from the environment may change what either side does (export, logging, servers).
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("OTEL_")
            || name_text.starts_with("LLLM_")
            || name_text.starts_with("OPENAI_")
        {
            command.env_remove(&name);
        }
    }
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (answer, figures) = stdout.trim_end().rsplit_once('\n').unwrap_or(("", &stdout));
    let run =
        Run::from_json(figures).ok_or_else(|| format!("{leg:?}: no figures in {stdout:?}"))?;
    let expected = format!("stub answer to: turn {}: say something short", turns - 1);
    if run.code != Some(0) || answer.trim() != expected {
        return Err(format!(
            "{leg:?} with {turns} turns failed ({:?}): {answer:?}",
            run.code
        )
        .into());
    }
    let requests = stand.server.requests();
    if requests.len() != turns {
        return Err(format!("{leg:?} sent {} requests for {turns} turns", requests.len()).into());
    }
    let last = requests
        .into_iter()
        .last()
        .map(|r| r.body)
        .unwrap_or_default();
    Ok((run, last))
}

/// Whether both legs sent the same last request: the conversations must be the same (else the
/// comparison means nothing); other fields are reported.
fn compare_bodies(bodies: &[(Leg, Value)]) -> Result<String, Error> {
    let [(_, a), (_, b)] = bodies else {
        return Err("two legs expected".into());
    };
    if a.get("messages") != b.get("messages") {
        return Err(format!("the legs sent different conversations: {a} against {b}").into());
    }
    if a == b {
        return Ok("identical".to_owned());
    }
    Ok(format!(
        "same messages, other fields differ: {a} against {b}"
    ))
}

/// Drops the file's pages from the page cache (only clean pages no process maps are dropped).
fn evict(path: &Path) -> Result<(), Error> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    nix::fcntl::posix_fadvise(
        &file,
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    )?;
    Ok(())
}

/// The tactic of `turns` steps: one agent, one dialog, one step per turn.
fn tactic(api_base: &str, turns: usize) -> String {
    let mut yaml = format!(
        "agent_configs:\n  - name: bench\n    model_name: hosted_vllm/stub\n    system_prompt: You are a concise assistant.\n    model_args: {{api_base: \"{api_base}\", max_tokens: 16}}\nsteps:\n"
    );
    for turn in 0..turns {
        yaml.push_str(&format!(
            "  - {{agent: bench, receive: \"turn {turn}: say something short\"}}\n"
        ));
    }
    yaml
}

fn tactic_path(stand: &Stand, turns: usize) -> PathBuf {
    stand.tactics.join(format!("turns_{turns}.yaml"))
}

/// `/proc/loadavg`'s three averages: the machine's load while measuring.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn settings() -> Result<Settings, Error> {
    let bin_dir = std::env::current_exe()?
        .parent()
        .map(Path::to_path_buf)
        .ok_or("no folder for this binary")?;
    let mut settings = Settings {
        repeats: 31,
        turns: 100,
        lllm: bin_dir.join("lllm"),
        bin_dir,
        floor_runtime: "multi".to_owned(),
    };
    let mut args = std::env::args_os().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag:?} needs a value"));
        match flag.to_str() {
            Some("--repeats") => settings.repeats = parse(value()?)?,
            Some("--turns") => settings.turns = parse(value()?)?,
            Some("--lllm") => settings.lllm = PathBuf::from(value()?),
            Some("--floor-runtime") => {
                settings.floor_runtime = value()?.to_string_lossy().into_owned();
            }
            _ => {
                return Err(format!(
                    "usage: floor [--repeats N] [--turns N] [--lllm PATH] [--floor-runtime multi|current]; not {flag:?}"
                )
                .into())
            }
        }
    }
    if settings.repeats == 0 || settings.turns < 2 {
        return Err("--repeats must be at least 1 and --turns at least 2".into());
    }
    Ok(settings)
}

fn parse(value: OsString) -> Result<usize, Error> {
    Ok(value.to_string_lossy().parse()?)
}
