//! A tactic written in Rust, run by your own `lllm`: `tactic_type: debate` in a YAML file picks it.
//!
//! ```text
//! cargo run -p lllm-cli --example debate -- run examples/debate/tactic.yaml --input "Is tea better than coffee?" --dry-run
//! ```

use std::process::ExitCode;

use async_trait::async_trait;
use lllm_runtime::config::PromptVars;
use lllm_runtime::tactic::{TacticError, Team};
use lllm_runtime::{Tactic, TacticRegistry};

/// Two agents, `pro` and `con`, answer each other for `config.rounds` rounds.
struct Debate {
    rounds: u64,
}

#[async_trait]
impl Tactic for Debate {
    async fn run(&self, team: &Team, vars: &PromptVars) -> Result<String, TacticError> {
        let motion = vars
            .get("input")
            .and_then(|v| v.as_str())
            .ok_or_else(|| TacticError::invalid("pass the motion with --input"))?;
        let (pro, con) = match (team.agent("pro"), team.agent("con")) {
            (Some(pro), Some(con)) => (pro, con),
            _ => {
                return Err(TacticError::invalid(
                    "a debate needs agents `pro` and `con`",
                ))
            }
        };
        pro.open_with("main", vars)?;
        con.open_with("main", vars)?;
        let mut last = format!("The motion: {motion}");
        let mut transcript = Vec::new();
        for _ in 0..self.rounds {
            for (name, speaker) in [("pro", pro), ("con", con)] {
                speaker.receive_in("main", last.clone())?;
                last = speaker.respond("main").await?.content.unwrap_or_default();
                transcript.push(format!("{name}: {last}"));
            }
        }
        Ok(transcript.join("\n"))
    }
}

fn main() -> ExitCode {
    let mut registry = TacticRegistry::new();
    registry.register("debate", |spec| {
        let rounds = spec
            .config()
            .get("rounds")
            .and_then(|r| r.as_u64())
            .unwrap_or(1);
        if rounds == 0 || rounds > 20 {
            return Err(format!("config.rounds must be 1 to 20, not {rounds}").into());
        }
        Ok(Box::new(Debate { rounds }) as Box<dyn Tactic>)
    });
    lllm_cli::main_with(registry)
}
