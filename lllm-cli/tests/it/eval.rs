//! `lllm eval` end to end, against the real binary and the recording stub: each expectation
//! reported with its reason, trials and pass rates, the JSON and JUnit reports read back, exit codes,
//! record then replay with no server, drift, baselines, bad eval files.

use std::path::{Path, PathBuf};

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::Value;

use crate::support::{arg, lllm, Outcome, TempDir};

/// A chat tactic: `assistant` answers with a `lookup` tool; `judge` judges. One request at a time,
/// so that the stub's replies go to trials in order.
fn tactic(api_base: &str, system_prompt: &str) -> String {
    format!(
        r#"global:
  model_name: m
  model_args: {{api_base: "{api_base}", timeout: 30, max_in_flight: 1}}
  max_call_retries: 0
agent_configs:
  - name: assistant
    system_prompt: {system_prompt}
    tools:
      - name: lookup
        description: Looks a city up
        parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
        command: [echo, "found {{{{ city }}}}"]
  - name: judge
    system_prompt: You judge answers.
"#
    )
}

fn setup(dir: &TempDir, api_base: &str, evals: &str) -> PathBuf {
    dir.write("tactic.yaml", tactic(api_base, "You answer with tools."));
    dir.write("evals.yaml", evals)
}

/// `lllm eval EVALS ARGS...` run to its end; it exits `code`, its stderr holding `messages` and
/// nothing unexpected (`assert_clean`).
async fn eval(evals: &Path, args: &[&str], code: i32, messages: &[&str]) -> Outcome {
    let mut all = vec!["eval", arg(evals)];
    all.extend_from_slice(args);
    let outcome = lllm(&all).run().await;
    outcome.assert_clean(code, messages);
    outcome
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("JSON report")
}

fn case<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id} in {report}"))
}

fn lookup(city: &str) -> StubReply {
    StubReply::tool_calls(&[(
        "c1",
        "lookup",
        &format!(r#"{{"city": "{city}", "units": "C"}}"#),
    )])
}

const EVERY_CHECK: &str = r#"tactic: tactic.yaml
cases:
  - id: holds
    input: weather in Paris
    expect:
      tools: [{name: lookup, args: {city: Paris}}]
      tools_order: strict
      forbid_tools: [delete]
      output: {contains: Sunny}
  - id: wrong-city
    input: weather in Lyon
    expect:
      tools: [{name: lookup, args: {city: Rome}}]
  - id: forbidden
    input: weather in Nice
    expect:
      forbid_tools: [lookup]
  - id: equals
    input: say ok
    expect: {output: {equals: ok}}
  - id: regex
    input: say a number
    expect: {output: {regex: '^\d+ apples$'}}
  - id: schema
    input: say json
    expect: {output: {json_schema: {type: object, required: [n], properties: {n: {type: integer}}}}}
  - id: judged
    input: judge me
    expect: {judge: {agent: judge, criteria: "polite JUDGE-A"}}
  - id: judged-fail
    input: judge me too
    expect: {judge: {agent: judge, criteria: "polite JUDGE-B"}}
  - id: budget
    input: weather in Metz
    expect: {max_requests: 1}
"#;

fn script_every_check(server: &StubServer) {
    server.push(lookup("Paris").for_message("Paris"));
    server.push(StubReply::text("Sunny in Paris").for_message("Paris"));
    server.push(lookup("Lyon").for_message("Lyon"));
    server.push(StubReply::text("Rain").for_message("Lyon"));
    server.push(lookup("Nice").for_message("Nice"));
    server.push(StubReply::text("Warm").for_message("Nice"));
    server.push(StubReply::text(" ok\n").for_message("say ok"));
    server.push(StubReply::text("many apples").for_message("a number"));
    server.push(StubReply::text(r#"{"n": "x"}"#).for_message("say json"));
    server.push(StubReply::text("Thank you kindly").for_message("judge me"));
    server.push(StubReply::text("PASS: it is polite").for_message("JUDGE-A"));
    server.push(StubReply::text("Go away").for_message("judge me too"));
    server.push(StubReply::text("FAIL: it is rude").for_message("JUDGE-B"));
    server.push(lookup("Metz").for_message("Metz"));
    server.push(StubReply::text("Cold").for_message("Metz"));
}

#[tokio::test(flavor = "multi_thread")]
async fn each_expectation_is_reported_with_its_reason_in_json_and_junit() {
    let dir = TempDir::new("eval-checks");
    let server = StubServer::start().await.expect("stub");
    script_every_check(&server);
    let evals = setup(&dir, &server.base_url(), EVERY_CHECK);
    let (json, junit) = (dir.path("r.json"), dir.path("r.xml"));
    let outcome = eval(
        &evals,
        &["--json", arg(&json), "--junit", arg(&junit)],
        1,
        &["case(s) did not reach the pass rate 1"],
    )
    .await;
    let words = outcome.stdout_text();
    assert!(
        words.contains("PASS holds: 1/1 trials passed, 2 requests, 28 tokens"),
        "{words}"
    );
    assert!(words.contains("FAIL wrong-city: 0/1"), "{words}");
    let report = json_file(&json);
    assert_eq!(report["format"], 1);
    let passed = |id: &str| case(&report, id)["passed"].as_bool().expect("passed");
    let failure = |id: &str| {
        case(&report, id)["first_failure"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    for id in ["holds", "equals", "judged"] {
        assert!(passed(id), "{id}: {}", failure(id));
    }
    let expected = [
        (
            "wrong-city",
            r#"expected a call of `lookup` with arguments including {"city":"Rome"}, but the run called: `lookup` {"city":"Lyon","units":"C"}"#,
        ),
        (
            "forbidden",
            r#"called the forbidden tool `lookup` with {"city":"Nice","units":"C"}"#,
        ),
        (
            "regex",
            r#"the answer "many apples" does not match /^\d+ apples$/"#,
        ),
        ("schema", "the answer does not match the JSON Schema"),
        ("judged-fail", "the judge `judge` failed it: it is rude"),
        (
            "budget",
            "the run sent 2 requests, more than max_requests 1",
        ),
    ];
    for (id, reason) in expected {
        assert!(!passed(id), "{id} passed");
        assert!(failure(id).starts_with(reason), "{id}: {}", failure(id));
    }
    let trial = &case(&report, "judged")["trial_reports"][0];
    assert_eq!(trial["judge"], "it is polite");
    assert_eq!(trial["requests"], 1, "the judge's request is not the run's");
    assert_eq!(
        case(&report, "holds")["trial_reports"][0]["tool_calls"][0]["args"]["city"],
        "Paris"
    );
    // The judge saw the criteria and the answer.
    let judged = server
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("JUDGE-A"));
    let judged = judged.expect("the judge was asked").body.to_string();
    assert!(judged.contains("Thank you kindly") && judged.contains("You judge answers."));
    check_junit(&junit);
}

/// Reads the JUnit file with Python's XML parser and returns `name failures tests` and each
/// failed case's name.
fn check_junit(path: &Path) {
    let script = "import sys, xml.etree.ElementTree as E\n\
        root = E.parse(sys.argv[1]).getroot()\n\
        s = root.find('testsuite')\n\
        print(s.get('tests'), s.get('failures'))\n\
        for c in s.findall('testcase'):\n\
        \x20   f = c.find('failure')\n\
        \x20   print(c.get('name'), 'FAIL' if f is not None else 'ok', (f.text or '') if f is not None else '')\n";
    let out = std::process::Command::new("python3")
        .args(["-c", script, arg(path)])
        .output()
        .expect("python3 reads the JUnit file");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "9 6", "{text}");
    assert!(lines.contains(&"holds ok "), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("wrong-city FAIL expected a call of `lookup`")),
        "{text}"
    );
}

const TRIALS: &str = r#"tactic: tactic.yaml
pass_rate: PASS_RATE
cases:
  - id: weather
    input: weather in Paris
    trials: 4
    expect: {output: {contains: Sunny}}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn trials_count_against_the_pass_rate_and_a_baseline_says_what_regressed() {
    let dir = TempDir::new("eval-trials");
    let server = StubServer::start().await.expect("stub");
    let evals = |rate: &str| setup(&dir, &server.base_url(), &TRIALS.replace("PASS_RATE", rate));
    // All four pass, one request each: the baseline.
    for _ in 0..4 {
        server.push(StubReply::text("Sunny"));
    }
    let base = dir.path("base.json");
    let first = eval(&evals("1.0"), &["--json", arg(&base)], 0, &[]).await;
    assert!(first
        .stdout_text()
        .contains("PASS weather: 4/4 trials passed, 4 requests, 56 tokens"));
    // Two of four pass, with a tool round each (two requests).
    let script = |server: &StubServer| {
        for sunny in [true, false, true, false] {
            server.push(lookup("Paris"));
            server.push(StubReply::text(if sunny { "Sunny" } else { "Rain" }));
        }
    };
    script(&server);
    let half = eval(&evals("0.5"), &["--baseline", arg(&base)], 0, &[]).await;
    let words = half.stdout_text();
    assert!(
        words.contains("PASS weather: 2/4 trials passed, 8 requests, 112 tokens"),
        "{words}"
    );
    assert!(
        words.contains(
            "weather: REGRESSION: pass rate 100% → 50%; tokens per trial 14 → 28 (+100%); requests per trial 1 → 2 (+100%)"
        ),
        "{words}"
    );
    script(&server);
    let strict = eval(
        &evals("0.75"),
        &["--trials", "4"],
        1,
        &["1 of 1 case(s) did not reach the pass rate 0.75"],
    )
    .await;
    assert!(strict
        .stdout_text()
        .contains("first failure: the answer \"Rain\" does not contain \"Sunny\""));
}

const RECORDED: &str = r#"tactic: tactic.yaml
cases:
  - id: weather
    input: weather in Paris
    trials: 2
    expect:
      tools: [{name: lookup, args: {city: Paris}}]
      output: {contains: Sunny}
  - id: judged
    input: judge me
    expect: {judge: {agent: judge, criteria: "polite JUDGE-A"}}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn recorded_answers_replay_with_no_server_and_a_changed_prompt_is_drift() {
    let dir = TempDir::new("eval-replay");
    let server = StubServer::start().await.expect("stub");
    for _ in 0..2 {
        server.push(lookup("Paris").for_message("Paris"));
        server.push(StubReply::text("Sunny in Paris").for_message("Paris"));
    }
    server.push(StubReply::text("Thank you kindly").for_message("judge me"));
    server.push(StubReply::text("PASS: polite").for_message("JUDGE-A"));
    let evals = setup(&dir, &server.base_url(), RECORDED);
    let tapes = dir.path("recorded");
    let (live, replayed) = (dir.path("live.json"), dir.path("replayed.json"));
    eval(
        &evals,
        &["--record", arg(&tapes), "--json", arg(&live)],
        0,
        &[],
    )
    .await;
    assert_eq!(
        server.requests().len(),
        6,
        "two trials of two requests, a run and its judge"
    );
    assert!(
        tapes.join("weather/1.jsonl").is_file() && tapes.join("weather/2.journal.jsonl").is_file()
    );
    // No server at all: the tactic's api_base points at a closed port.
    drop(server);
    eval(
        &evals,
        &["--replay", arg(&tapes), "--json", arg(&replayed)],
        0,
        &[],
    )
    .await;
    let strip = |path: &Path| {
        let mut v = json_file(path);
        for case in v["cases"].as_array_mut().expect("cases") {
            case["seconds"] = Value::Null;
            for trial in case["trial_reports"].as_array_mut().expect("trials") {
                trial["seconds"] = Value::Null;
            }
        }
        v
    };
    assert_eq!(strip(&live), strip(&replayed), "the same results on replay");
    // One word of the system prompt changed: drift, both messages shown.
    dir.write(
        "tactic.yaml",
        tactic("http://127.0.0.1:9/v1", "You answer with care."),
    );
    let drifted = eval(
        &evals,
        &["--replay", arg(&tapes), "--json", arg(&replayed)],
        1,
        &[],
    )
    .await;
    let words = drifted.stdout_text();
    assert!(
        words.contains(r#"drift: the request differs from the recording at message 0: recorded system {"role":"system","content":"You answer with tools."}; sent system {"role":"system","content":"You answer with care."}"#),
        "{words}"
    );
    let report = json_file(&replayed);
    assert_eq!(
        case(&report, "weather")["trial_reports"][0]["drift"]["index"],
        0
    );
    assert_eq!(
        case(&report, "judged")["passed"],
        false,
        "the judged run drifts too"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_eval_file_exits_2_naming_file_line_and_column() {
    let dir = TempDir::new("eval-bad");
    dir.write(
        "tactic.yaml",
        tactic("http://127.0.0.1:9/v1", "You answer."),
    );
    let cases = [
        (
            "tactic: tactic.yaml\ncases:\n  - id: a\n    expect: {outptu: {equals: x}}\n",
            "evals.yaml:4:14: unknown key `outptu`",
            "did you mean `output`?",
        ),
        (
            "tactic: tactic.yaml\npass_rate: 1.5\ncases: [{id: a, expect: {}}]\n",
            "evals.yaml:2:12: pass_rate: expected a number from 0.0 to 1.0",
            "",
        ),
        (
            "tactic: tactic.yaml\ncases:\n  - id: a\n    expect: {output: {regex: '(unclosed'}}\n",
            "evals.yaml:4:30: cases[0].expect.output.regex: is not a valid regular expression",
            "",
        ),
        (
            "tactic: tactic.yaml\ncases:\n  - id: a\n    expect: {judge: {agent: nobody, criteria: x}}\n",
            "evals.yaml:4:29: cases[0].expect.judge.agent: the tactic has no agent `nobody`",
            "",
        ),
        (
            "tactic: tactic.yaml\ncases:\n  - {id: a, expect: {}}\n  - {id: a, expect: {}}\n",
            "evals.yaml:4:10: cases[1].id: `a` is already used at",
            "",
        ),
        (
            "tactic: missing.yaml\ncases: [{id: a, expect: {}}]\n",
            "evals.yaml:1:9: tactic: the tactic",
            "is not a file",
        ),
        (
            "tactic: tactic.yaml\ncases:\n  - {id: ../x, expect: {}}\n",
            "evals.yaml:3:10: cases[0].id: a case id is 1 to 100 letters",
            "",
        ),
    ];
    for (yaml, place, more) in cases {
        let evals = dir.write("evals.yaml", yaml);
        eval(&evals, &[], 2, &[place, more]).await;
    }
}

/// The eval example (`examples/eval/`): its tactic, eval file and committed recordings.
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/eval")
}

/// The answers the example's recordings hold, as the stub gives them: one request at a time (the
/// example's `max_in_flight: 1`), so in this order.
fn script_example(server: &StubServer) {
    let count = |id: &str, text: &str| {
        StubReply::tool_calls(&[(id, "word_count", &format!(r#"{{"text": "{text}"}}"#))])
    };
    for _ in 0..2 {
        server.push(count("c1", "the quick brown fox").for_message("quick brown fox"));
        server.push(StubReply::text("The text has 4 words.").for_message("quick brown fox"));
    }
    server.push(StubReply::text("Hello! Ask me about a text.").for_message("Hello!"));
    server.push(count("c2", "to be or not to be").for_message("to be or not"));
    server.push(StubReply::text("The text has 6 words.").for_message("to be or not"));
    server.push(StubReply::text("PASS: it says 6 words").for_message("has 6 words."));
}

/// The recordings of a folder (the tapes, not the journals), by their path inside it.
fn tapes(dir: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for case in std::fs::read_dir(dir)
        .expect("a folder of recordings")
        .flatten()
    {
        for file in std::fs::read_dir(case.path())
            .expect("a case's folder")
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.ends_with(".jsonl") && !name.ends_with(".journal.jsonl") {
                let key = format!("{}/{name}", case.file_name().to_string_lossy());
                found.push((key, std::fs::read_to_string(file.path()).expect("a tape")));
            }
        }
    }
    found.sort();
    found
}

/// The committed recordings are what recording the example against the stub writes: the example
/// replays real answers of this lllm. `LLLM_WRITE_EXAMPLES=1` writes them anew first (after a change
/// of the example or of the tape's format), and the comparison still runs.
#[tokio::test(flavor = "multi_thread")]
async fn the_eval_examples_recordings_are_what_recording_it_against_the_stub_writes() {
    let dir = TempDir::new("eval-example-record");
    let server = StubServer::start().await.expect("stub");
    script_example(&server);
    let fresh = dir.path("recorded");
    let evals = example().join("evals.yaml");
    let recorded = lllm(&["eval", arg(&evals), "--record", arg(&fresh)])
        .env("LLLM_API_BASE", &server.base_url())
        .run()
        .await;
    recorded.assert_clean(0, &[]);
    assert_eq!(server.requests().len(), 8, "2×2 + 1 + 2 + the judge's");
    let committed = example().join("recorded");
    if std::env::var_os("LLLM_WRITE_EXAMPLES").is_some() {
        for (name, text) in tapes(&fresh) {
            let path = committed.join(name);
            std::fs::create_dir_all(path.parent().expect("a case folder")).expect("mkdir");
            std::fs::write(path, text).expect("write a tape");
        }
    }
    assert_eq!(tapes(&committed), tapes(&fresh));
}

/// What CI runs (scripts/test.sh): the example on its recordings, with no server at all.
#[tokio::test(flavor = "multi_thread")]
async fn the_eval_example_passes_on_its_recordings_with_no_server() {
    let dir = TempDir::new("eval-example-replay");
    let report = dir.path("report.json");
    let evals = example().join("evals.yaml");
    let recordings = example().join("recorded");
    let outcome = lllm(&[
        "eval",
        arg(&evals),
        "--replay",
        arg(&recordings),
        "--json",
        arg(&report),
    ])
    // Nothing listens there: an answer that is not recorded fails.
    .env("LLLM_API_BASE", "http://127.0.0.1:9/v1")
    .run()
    .await;
    outcome.assert_clean(0, &[]);
    let words = outcome.stdout_text();
    for line in [
        "PASS counts-with-the-tool: 2/2 trials passed, 4 requests, 56 tokens",
        "PASS no-tool-for-a-greeting: 1/1 trials passed, 1 requests, 14 tokens",
        "PASS judged: 1/1 trials passed, 2 requests, 28 tokens",
        "all 3 case(s) reached the pass rate 1",
    ] {
        assert!(words.contains(line), "{line} in {words}");
    }
    let report = json_file(&report);
    let judged = &case(&report, "judged")["trial_reports"][0];
    assert_eq!(judged["judge"], "it says 6 words");
    assert_eq!(
        judged["tool_calls"][0]["args"]["text"],
        "to be or not to be"
    );
    // The recorded requests hold the tool's real result: the script ran again and counted 4.
    assert!(
        std::fs::read_to_string(recordings.join("counts-with-the-tool/2.jsonl"))
            .expect("a tape")
            .contains(r#""role":"tool","content":"4""#)
    );
}

/// `lllm schema --evals`: the eval file format's JSON Schema, derived from the types the loader
/// reads (so an unknown key is refused there too).
#[tokio::test(flavor = "multi_thread")]
async fn schema_evals_prints_the_eval_formats_json_schema() {
    let outcome = lllm(&["schema", "--evals"]).run().await;
    outcome.assert_clean(0, &[]);
    let schema: Value = serde_json::from_str(&outcome.stdout_text()).expect("a JSON Schema");
    assert_eq!(schema["title"], "lllm evals");
    assert_eq!(schema["additionalProperties"], false);
    for key in ["tactic", "pass_rate", "cases"] {
        assert!(schema["properties"][key].is_object(), "{key} in {schema}");
    }
    let expect = &schema["$defs"]["Expect"]["properties"];
    for key in [
        "tools",
        "tools_order",
        "forbid_tools",
        "output",
        "judge",
        "max_requests",
        "max_tokens",
    ] {
        assert!(expect[key].is_object(), "{key} in {expect}");
    }
    let tactic = lllm(&["schema"]).run().await;
    let tactic: Value = serde_json::from_str(&tactic.stdout_text()).expect("a JSON Schema");
    assert!(
        tactic["properties"]["agent_configs"].is_object(),
        "without --evals: the tactic's"
    );
}

/// Ctrl-C stops the eval at once, prints the report of the trials that ended and writes it as JSON,
/// marked interrupted, and exits 130. One request at a time (the tactic's `max_in_flight: 1`): when
/// the second case's request has arrived, the first case's trial has ended.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_prints_and_writes_the_partial_report_and_exits_130() {
    let dir = TempDir::new("eval-interrupt");
    let server = StubServer::start().await.expect("stub");
    server.push(StubReply::text("Sunny").for_message("Paris"));
    server.push(
        StubReply::text("late")
            .for_message("Lyon")
            .delay(std::time::Duration::from_secs(120)),
    );
    let evals = setup(
        &dir,
        &server.base_url(),
        "tactic: tactic.yaml\ncases:\n  - {id: quick, input: weather in Paris, expect: {output: {contains: Sunny}}}\n  - {id: slow, input: weather in Lyon, expect: {}}\n",
    );
    let json = dir.path("partial.json");
    let running = lllm(&["eval", arg(&evals), "--json", arg(&json)]).spawn();
    let started = std::time::Instant::now();
    while server.requests().len() < 2 && started.elapsed() < std::time::Duration::from_secs(20) {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        server.requests().len(),
        2,
        "the slow case's request arrived"
    );
    running.signal(nix::sys::signal::Signal::SIGINT);
    let outcome = tokio::task::spawn_blocking(move || running.wait())
        .await
        .expect("waiter");
    outcome.assert_clean(130, &["stopped by SIGINT"]);
    let words = outcome.stdout_text();
    for line in [
        "PASS quick: 1/1 trials passed, 1 requests, 14 tokens",
        "FAIL slow: 0/0 trials passed, 0 requests, 0 tokens",
        "     no trial ended",
        "interrupted: a partial report",
    ] {
        assert!(words.contains(line), "{line} in {words}");
    }
    let report = json_file(&json);
    assert_eq!(report["interrupted"], true);
    assert_eq!(report["passed"], false);
    assert_eq!(case(&report, "quick")["passes"], 1);
    assert_eq!(case(&report, "slow")["trials"], 0);
}
