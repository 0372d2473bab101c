//! `lllm run`: a chat with the tactic's first agent (one answer, or an interactive session).

use std::io::{BufRead, IsTerminal, Read, Write};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context};
use lllm_runtime::{
    load_tactic, Agent, AgentError, DryRunInvoker, Invoker, OpenAiInvoker, PreparedRequest,
    PromptVars,
};
use serde_json::{json, Value};

use crate::cli::RunArgs;
use crate::exit::{failed, usage, Failure};

/// The alias of the chat's dialog.
const MAIN: &str = "main";

pub(crate) fn run(args: RunArgs) -> Result<(), Failure> {
    let spec = load_tactic(&args.tactic).map_err(usage)?;
    let mut vars = parse_vars(&args.vars).map_err(usage)?;
    let input = match args.input.clone() {
        Some(text) => Some(text),
        None if !std::io::stdin().is_terminal() => Some(read_stdin().map_err(usage)?),
        None => None,
    };
    if let Some(text) = &input {
        if text.trim().is_empty() {
            return Err(usage(anyhow!(
                "the input is empty: pass --input TEXT or pipe text on standard input"
            )));
        }
        vars.insert("input".into(), Value::from(text.as_str()));
    }
    let agent_spec = &spec.agents[0];
    let invoker = invoker(args.dry_run);
    let agent = Agent::from_spec(agent_spec, invoker).map_err(usage)?;
    agent.open_with(MAIN, &vars).map_err(|e| match e {
        AgentError::Prompt { .. } => usage(e),
        other => failed(other),
    })?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(failed)?;
    match input {
        Some(text) => runtime.block_on(answer_once(&agent, &text, &args)),
        None => runtime.block_on(chat(&agent, &args)),
    }
}

/// Builds the invoker: the real one, or a dry run printing each request as a JSON line on stdout.
fn invoker(dry_run: bool) -> Arc<dyn Invoker> {
    let real = OpenAiInvoker::new();
    if !dry_run {
        return Arc::new(real);
    }
    let stdout = Mutex::new(std::io::stdout());
    Arc::new(DryRunInvoker::new(
        real,
        move |request: &PreparedRequest| {
            let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
            // A closed stdout must not abort the run; the exit code reports the final write.
            writeln!(out, "{}", request.to_redacted_json()).ok();
        },
    ))
}

fn parse_vars(raw: &[String]) -> anyhow::Result<PromptVars> {
    let mut vars = PromptVars::new();
    for item in raw {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| anyhow!("--var `{item}` must be KEY=VALUE"))?;
        let valid = !key.is_empty()
            && !key.starts_with(|c: char| c.is_ascii_digit())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(anyhow!(
                "--var `{item}`: `{key}` is not a variable name (letters, digits and _, not starting with a digit)"
            ));
        }
        vars.insert(key.to_owned(), Value::from(value));
    }
    Ok(vars)
}

fn read_stdin() -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read standard input")?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "standard input is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}

async fn answer_once(agent: &Agent, input: &str, args: &RunArgs) -> Result<(), Failure> {
    agent.receive_in(MAIN, input).map_err(failed)?;
    let answer = agent.respond_in(MAIN).await.map_err(failed)?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{}", summary(agent, answer.content.as_deref()))
    } else if args.dry_run {
        // stdout holds the request lines; the placeholder answer is a diagnostic.
        note(answer.text());
        Ok(())
    } else {
        writeln!(out, "{}", answer.text())
    };
    if answer.content.is_none() {
        note("the model returned no text");
    }
    written
        .context("cannot write to standard output")
        .map_err(failed)
}

/// `{"agent", "answer", "usage", "dialogs"}` for `--json`.
fn summary(agent: &Agent, answer: Option<&str>) -> Value {
    let usage = agent.usage();
    let dialogs: serde_json::Map<String, Value> = agent
        .dialogs()
        .dialogs
        .iter()
        .map(|d| (d.alias.clone(), Value::from(d.dialog.id().to_string())))
        .collect();
    let mut usage_json = json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens(),
    });
    if let Some(cached) = usage.cached_tokens {
        usage_json["cached_tokens"] = Value::from(cached);
    }
    json!({
        "agent": agent.name(),
        "answer": answer,
        "usage": usage_json,
        "dialogs": {agent.name(): dialogs},
    })
}

#[allow(clippy::print_stderr)]
fn note(text: &str) {
    eprintln!("{text}");
}

/// An interactive chat on one dialog: each line typed is a turn; `/exit` or end of input ends it.
#[allow(clippy::print_stderr)]
async fn chat(agent: &Agent, args: &RunArgs) -> Result<(), Failure> {
    eprintln!(
        "lllm: chatting with `{}` ({}); /exit or Ctrl-D to leave",
        agent.name(),
        agent.model()
    );
    let stdin = std::io::stdin();
    let mut line = String::new();
    let mut failures = 0usize;
    let mut last_answer: Option<String> = None;
    loop {
        eprint!("you> ");
        line.clear();
        let read = stdin
            .lock()
            .read_line(&mut line)
            .context("cannot read standard input")
            .map_err(failed)?;
        let text = line.trim();
        if read == 0 || text == "/exit" || text == "/quit" {
            break;
        }
        if text.is_empty() {
            continue;
        }
        agent.receive_in(MAIN, text).map_err(failed)?;
        match agent.respond_in(MAIN).await {
            Ok(answer) if args.dry_run => {
                // stdout holds the request lines; the placeholder answer is a diagnostic.
                eprintln!("{}", answer.text());
            }
            Ok(answer) => {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{}", answer.text())
                    .and_then(|()| out.flush())
                    .context("cannot write to standard output")
                    .map_err(failed)?;
                last_answer = answer.content;
            }
            Err(error) => {
                failures += 1;
                eprintln!("error: {error}");
            }
        }
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", summary(agent, last_answer.as_deref()))
            .context("cannot write to standard output")
            .map_err(failed)?;
    }
    if failures > 0 {
        return Err(failed(anyhow!("{failures} turn(s) failed")));
    }
    Ok(())
}
