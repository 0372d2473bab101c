//! The journal's unit tests.

use super::*;

fn start() -> RunStart {
    RunStart {
        tactic: "t.yaml".into(),
        tactic_sha256: content_hash(b"x"),
        input: Some("hi".into()),
        vars: serde_json::Map::new(),
        limits: Vec::new(),
        session: None,
        parent_session: None,
        seed: Vec::new(),
        dialogs: Vec::new(),
        caller_tools: Vec::new(),
    }
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("lllm-journal-{name}-{}", std::process::id()))
}

#[test]
fn a_journal_remembers_dialogs_answers_and_tools_across_a_resume() {
    let path = temp("remember");
    std::fs::remove_file(&path).ok();
    let fresh = DialogId::new();
    {
        let journal = Journal::create(&path, start()).expect("create");
        assert_eq!(journal.dialog_id("a", "main", fresh).expect("id"), fresh);
        let (n, none) = journal.next_answer(fresh);
        assert_eq!((n, none), (0, None));
        journal
            .answered(fresh, 0, &Message::assistant("first"))
            .expect("answer");
        journal
            .tool_started(fresh, "c1", "t", &serde_json::json!({}))
            .expect("started");
        journal
            .tool_finished(fresh, "c1", "result", false)
            .expect("finished");
        journal
            .tool_started(fresh, "c2", "t", &serde_json::json!({}))
            .expect("started");
        assert!(matches!(
            Journal::create(&path, start()),
            Err(JournalError::Exists { .. })
        ));
    }
    // A torn line from a crash.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(b"{\"event\":\"answ"))
        .expect("tear");
    let journal = Journal::resume(&path).expect("resume");
    assert_eq!(journal.start(), &start());
    assert_eq!(
        journal.dialog_id("a", "main", DialogId::new()).expect("id"),
        fresh
    );
    assert_eq!(
        journal.next_answer(fresh).1.map(|m| m.text().to_owned()),
        Some("first".into())
    );
    assert_eq!(journal.next_answer(fresh).1, None, "not answered yet");
    assert_eq!(
        journal.tool(fresh, "c1"),
        ToolMemory::Finished {
            content: "result".into(),
            is_error: false
        }
    );
    assert_eq!(journal.tool(fresh, "c2"), ToolMemory::Interrupted);
    assert_eq!(journal.tool(fresh, "c3"), ToolMemory::New);
    journal.finish("done").expect("finish");
    drop(journal);
    // The torn line, followed by a resume, is no error; the run is finished.
    let again = Journal::resume(&path).expect("resume again");
    assert_eq!(again.finished().as_deref(), Some("done"));
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_broken_line_in_the_middle_is_an_error_naming_it() {
    let path = temp("broken");
    let good = serde_json::to_string(&Event::Start {
        version: JOURNAL_VERSION,
        start: start(),
    })
    .expect("json");
    std::fs::write(
        &path,
        format!("{good}\nnot json\n{{\"event\":\"end\",\"output\":\"x\"}}\n"),
    )
    .expect("write");
    let error = Journal::resume(&path).expect_err("broken");
    assert!(
        error.to_string().contains(":2: not a journal event"),
        "{error}"
    );
    std::fs::write(&path, "").expect("write");
    assert!(Journal::resume(&path).is_err());
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_start_line_without_dialogs_or_caller_tools_reads_as_none_and_new_ones_round_trip() {
    let old = r#"{"event":"start","version":1,"tactic":"t.yaml","tactic_sha256":"x","input":"hi","vars":{}}"#;
    let event: Event = serde_json::from_str(old).expect("an earlier journal's start");
    let Event::Start { start, .. } = event else {
        panic!("a start");
    };
    assert!(start.dialogs.is_empty() && start.caller_tools.is_empty());
    let mut start = start;
    start.caller_tools = vec![lllm_core::ToolSpec {
        name: "shell".into(),
        description: String::new(),
        parameters: serde_json::json!({"type": "object"}),
    }];
    let tree = lllm_core::DialogTree {
        active: Some("main".into()),
        ..Default::default()
    };
    start.dialogs = vec![("helper".into(), tree)];
    let line = serde_json::to_string(&Event::Start {
        version: JOURNAL_VERSION,
        start: start.clone(),
    })
    .expect("written");
    let Event::Start { start: back, .. } = serde_json::from_str(&line).expect("read") else {
        panic!("a start");
    };
    assert_eq!(back, start);
}
