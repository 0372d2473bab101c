//! The journal through the Rust API: a team journals its run, and a team built on the resumed
//! journal answers from it, with the same dialog ids, without calling the model again.

use std::sync::Arc;

use lllm_runtime::journal::{content_hash, Journal, RunStart};
use lllm_runtime::tactic::{StepsTactic, Team};
use lllm_runtime::testing::ScriptedInvoker;
use lllm_runtime::Tactic;

const TACTIC: &str = "agent_configs:\n  - {name: lead, model_name: m, system_prompt: You lead.}\n  - {name: critic, model_name: m, system_prompt: You criticise.}\nsteps:\n  - {agent: lead, receive: \"{{ input }}\", save: plan}\n  - {agent: critic, dialog: review, receive: \"{{ plan }}\", save: critique}\n  - {agent: lead, fork_from: main, dialog: retry, receive: \"{{ critique }}\", save: final}\noutput: \"{{ final }}\"\n";

#[tokio::test]
async fn a_resumed_team_answers_from_the_journal_with_the_same_dialogs() {
    let spec = lllm_runtime::config::parse_tactic(
        TACTIC.as_bytes(),
        std::path::Path::new("t.yaml"),
        &|_| None,
    )
    .expect("tactic");
    let tactic = StepsTactic::new(spec.steps().to_vec(), spec.output().map(str::to_owned));
    let mut vars = lllm_runtime::config::PromptVars::new();
    vars.insert("input".into(), "plan a trip".into());
    let path = std::env::temp_dir().join(format!("lllm-journal-api-{}", std::process::id()));
    std::fs::remove_file(&path).ok();
    let start = RunStart {
        tactic: "t.yaml".into(),
        tactic_sha256: content_hash(TACTIC.as_bytes()),
        input: Some("plan a trip".into()),
        vars: serde_json::Map::new(),
        limits: Vec::new(),
        session: None,
        parent_session: None,
        seed: Vec::new(),
        dialogs: Vec::new(),
        caller_tools: Vec::new(),
    };

    let invoker = Arc::new(
        ScriptedInvoker::new()
            .reply("a plan")
            .reply("too long")
            .reply("a shorter plan"),
    );
    let journal = Arc::new(Journal::create(&path, start.clone()).expect("journal"));
    let team = Team::builder(&spec)
        .invoker(invoker.clone())
        .journal(journal.clone())
        .build()
        .expect("team");
    let first = tactic.run(&team, &vars).await.expect("run");
    journal.finish(&first).expect("finish");
    assert_eq!(first, "a shorter plan");
    assert_eq!(invoker.calls().len(), 3);
    let ids = |team: &Team| -> Vec<String> {
        team.agents()
            .iter()
            .flat_map(|a| {
                a.dialogs()
                    .dialogs
                    .into_iter()
                    .map(|d| d.dialog.id().to_string())
            })
            .collect()
    };
    let before = ids(&team);
    drop(team);
    drop(journal);

    // The same run again on the resumed journal: nothing reaches the model.
    let resumed = Arc::new(Journal::resume(&path).expect("resume"));
    assert_eq!(resumed.start(), &start);
    assert_eq!(resumed.finished().as_deref(), Some("a shorter plan"));
    let silent = Arc::new(ScriptedInvoker::new());
    let team = Team::builder(&spec)
        .invoker(silent.clone())
        .journal(resumed.clone())
        .build()
        .expect("team");
    let again = tactic.run(&team, &vars).await.expect("replayed");
    assert_eq!(again, first);
    assert!(silent.calls().is_empty(), "answered from the journal");
    assert_eq!(resumed.replayed_answers(), 3);
    assert_eq!(
        ids(&team),
        before,
        "the same dialog ids, so the same sessions"
    );
    std::fs::remove_file(&path).ok();
}
