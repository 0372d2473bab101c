//! OAuth 2.1 with MCP servers end to end: `lllm mcp login` against `tests/mcp/oauth_server.py` (the
//! Python `mcp` SDK's authorization server with an authorize endpoint that approves at once and
//! redirects to lllm's loopback listener, which this test follows as a browser would), then runs
//! that use and refresh the stored tokens; and the refusals (another host, another issuer, a 401
//! without `auth:`). Gated like the other MCP tests (`LLLM_MCP_PYTHON`, set by scripts/test.sh).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lllm_runtime::testing::{StubReply, StubServer};
use serde_json::Value;

use super::mcp::servers;
use crate::support::{arg, lllm, tool_messages, TempDir};

/// The OAuth-protected MCP server, killed when dropped.
struct OAuthServer {
    child: Child,
    url: String,
    record: PathBuf,
}

impl OAuthServer {
    fn start(python: &str, dir: &TempDir, args: &[&str]) -> OAuthServer {
        let record = dir.path("grants.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/oauth_server.py");
        let mut child = Command::new(python)
            .arg(&script)
            .arg("--record")
            .arg(&record)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("oauth_server.py starts");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("oauth_server.py says it is ready")
                .expect("line");
            if let Some(url) = line.strip_prefix("oauth_server: ready ") {
                break url.to_owned();
            }
        };
        // Its later lines (uvicorn's) are not needed; the pipe is drained so it never blocks.
        std::thread::spawn(move || lines.for_each(drop));
        OAuthServer { child, url, record }
    }

    /// The registrations and grants it recorded.
    fn grants(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect()
    }

    /// Every access and refresh token it issued.
    fn tokens(&self) -> Vec<String> {
        self.grants()
            .iter()
            .flat_map(|g| [g["access_token"].as_str(), g["refresh_token"].as_str()])
            .flatten()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// What `lllm mcp login` did.
struct Login {
    code: Option<i32>,
    stderr: String,
    /// The page lllm's loopback listener showed, if the flow got that far.
    page: Option<String>,
}

/// Runs `lllm mcp login` with `args`, approving as a browser would: the printed URL is fetched and
/// its redirect to lllm's loopback listener followed.
fn login(args: &[&str], cache: Option<&Path>) -> Login {
    login_past(args, cache, false)
}

/// [`login`], `hostile`: with other local clients at the loopback listener first (see [`harass`]).
fn login_past(args: &[&str], cache: Option<&Path>, hostile: bool) -> Login {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lllm"));
    command
        .args(["mcp", "login"])
        .args(args)
        .env_remove("LLLM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(cache) = cache {
        command.env("LLLM_CACHE_DIR", cache);
    }
    let mut child = command.spawn().expect("lllm starts");
    let mut stderr = String::new();
    let mut page = None;
    let mut url = None;
    for line in BufReader::new(child.stderr.take().expect("stderr")).lines() {
        let line = line.expect("line");
        if let Some(found) = line.split_whitespace().find(|w| w.contains("/authorize?")) {
            url = Some(found.to_owned());
        }
        if let Some(redirect) = line.split_whitespace().find(|w| w.ends_with("/callback")) {
            if hostile {
                harass(redirect);
            }
            page = url.as_deref().map(approve);
        }
        stderr.push_str(&line);
        stderr.push('\n');
    }
    let status = child.wait().expect("lllm ends");
    Login {
        code: status.code(),
        stderr,
        page,
    }
}

/// What another local process could do to the loopback listener before the real redirect: hold a
/// connection open without a word, send a head larger than any request, ask for another path, and
/// send a callback with another `state` over a connection it never reads.
fn harass(redirect: &str) {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let address = redirect
        .trim_start_matches("http://")
        .trim_end_matches("/callback")
        .to_owned();
    let silent = TcpStream::connect(&address).expect("connect");
    let mut huge = TcpStream::connect(&address).expect("connect");
    huge.write_all(&vec![b'A'; 64 * 1024]).ok();
    let mut answer = Vec::new();
    huge.read_to_end(&mut answer).ok();
    assert!(answer.is_empty(), "an oversized head gets no answer");
    let mut other = TcpStream::connect(&address).expect("connect");
    other
        .write_all(b"GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let mut answer = String::new();
    other.read_to_string(&mut answer).ok();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    // Kept open until lllm is done: it must not wait for them.
    std::mem::forget(silent);
}

/// Fetches the authorization URL, following its redirect: the page lllm's listener answers.
fn approve(url: &str) -> String {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let answer = client
        .get(url)
        .send()
        .expect("the authorization server answers");
    answer.text().expect("page")
}

fn tactic(api_base: &str, url: &str, auth: &str) -> String {
    format!(
        "mcp_servers:\n  remote:\n    url: {url}\n{auth}\nagent_configs:\n  - name: a\n    model_name: m\n    system_prompt: You use tools.\n    model_args: {{api_base: \"{api_base}\", timeout: 60}}\n    max_tool_rounds: 2\n    mcp: [remote]\n"
    )
}

/// The grants were a code, then refreshes only (more than one when a loaded machine lets a
/// one-second token expire again within the run).
#[track_caller]
fn assert_refreshed(kinds: &[&str]) {
    assert_eq!(kinds.first(), Some(&"authorization_code"), "{kinds:?}");
    assert!(kinds.len() >= 2, "no refresh: {kinds:?}");
    assert!(
        kinds[1..].iter().all(|k| *k == "refresh_token"),
        "{kinds:?}"
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777
}

/// A login against the authorization server started with `flag`, which must fail (exit 1): what it
/// printed, its folder and the server, for the checks of what was refused.
async fn refused_login(
    python: &str,
    name: &str,
    flag: &str,
    extra: &[&'static str],
) -> (Login, TempDir, OAuthServer) {
    let dir = TempDir::new(name);
    let oauth = OAuthServer::start(python, &dir, &[flag]);
    let file = dir.write(
        "t.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &oauth.url,
            "    auth: {token_file: t.json}",
        ),
    );
    let extra = extra.to_vec();
    let done = tokio::task::spawn_blocking(move || {
        let mut args = vec![arg(&file)];
        args.extend(extra);
        login(&args, None)
    })
    .await
    .expect("login");
    assert_eq!(done.code, Some(1), "{}", done.stderr);
    (done, dir, oauth)
}

#[tokio::test(flavor = "multi_thread")]
async fn login_stores_tokens_owner_only_and_runs_use_and_refresh_them_without_showing_them() {
    let Some(s) = servers("oauth login and run") else {
        return;
    };
    let dir = TempDir::new("mcp-oauth");
    let oauth = OAuthServer::start(&s.python, &dir, &["--token-seconds", "1"]);
    let stub = StubServer::start().await.expect("stub");
    stub.push(StubReply::tool_calls(&[("c1", "whoami", "{}")]));
    stub.push(StubReply::text("done"));
    let file = dir.write(
        "t.yaml",
        tactic(&stub.base_url(), &oauth.url, "    auth: {}"),
    );
    let cache = dir.path("cache");

    let run_before = lllm(&["run", arg(&file), "--input", "go"])
        .env("LLLM_CACHE_DIR", arg(&cache))
        .run()
        .await;
    run_before.assert_clean(
        1,
        &[
            "has no tokens yet",
            "lllm mcp login TACTIC.yaml --server remote",
        ],
    );

    let done = tokio::task::spawn_blocking({
        let (file, cache) = (file.clone(), cache.clone());
        move || login(&[arg(&file), "--wait", "60"], Some(&cache))
    });
    let done = done.await.expect("login thread");
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(
        done.stderr.contains("open this URL in a browser"),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr.contains("MCP server `remote`: authorized"),
        "{}",
        done.stderr
    );
    assert!(
        done.page
            .as_deref()
            .is_some_and(|p| p.contains("authorization received")),
        "{:?}",
        done.page
    );
    let stored: Vec<PathBuf> = std::fs::read_dir(cache.join("mcp-auth"))
        .expect("mcp-auth/ under the cache directory")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(mode(&stored[0]), 0o600);
    assert_eq!(mode(&cache.join("mcp-auth")), 0o700);
    let first_file = std::fs::read_to_string(&stored[0]).expect("token file");

    // The access token lives one second: the run finds it expired and refreshes it first.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let journal = dir.path("run.journal");
    let trace = dir.path("run.trace");
    let run = lllm(&[
        "run",
        arg(&file),
        "--input",
        "go",
        "--journal",
        arg(&journal),
        "--trace",
        arg(&trace),
    ])
    .env("LLLM_CACHE_DIR", arg(&cache))
    // Even rmcp's and the HTTP client's debug logs must not show a token.
    .env("LLLM_LOG", "debug")
    .run()
    .await;
    run.assert_clean(0, &[]);
    assert_eq!(run.stdout_text().trim(), "done");
    let requests = stub.requests();
    let results = tool_messages(&requests[1]);
    let grants = oauth.grants();
    let client_id = grants[0]["client_id"].as_str().expect("registered client");
    assert_eq!(grants[0]["event"], "register");
    assert_eq!(
        results,
        [serde_json::json!({"result": format!("authorized as {client_id}")}).to_string()]
    );
    let kinds: Vec<&str> = grants.iter().filter_map(|g| g["grant"].as_str()).collect();
    assert_refreshed(&kinds);
    let second_file = std::fs::read_to_string(&stored[0]).expect("token file");
    assert_ne!(first_file, second_file, "the refreshed tokens are stored");
    assert_eq!(mode(&stored[0]), 0o600);

    // A dry run starts the servers too (it lists their tools for the printed requests).
    let dry = lllm(&["run", arg(&file), "--input", "go", "--dry-run"])
        .env("LLLM_CACHE_DIR", arg(&cache))
        .run()
        .await;
    dry.assert_clean(0, &[]);
    assert!(
        dry.stdout_text().contains("whoami"),
        "{}",
        dry.stdout_text()
    );
    let last_file = std::fs::read_to_string(&stored[0]).expect("token file");

    let tokens = oauth.tokens();
    assert!(tokens.len() >= 4, "{tokens:?}");
    // The file holds the last tokens issued: the checks below look for real tokens.
    let newest = tokens.last().expect("tokens");
    assert!(last_file.contains(newest.as_str()));
    assert_ne!(first_file, last_file);
    let journal_text = std::fs::read_to_string(&journal).expect("journal");
    let trace_text = std::fs::read_to_string(&trace).expect("trace");
    for token in &tokens {
        dry.assert_never_shows(token);
        for (what, text) in [
            ("login stderr", done.stderr.as_str()),
            ("journal", &journal_text),
            ("trace", &trace_text),
        ] {
            assert!(!text.contains(token.as_str()), "a token in the {what}");
        }
        run.assert_never_shows(token);
        run_before.assert_never_shows(token);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_registration_a_client_id_is_needed_and_enough() {
    let Some(s) = servers("oauth client id") else {
        return;
    };
    let dir = TempDir::new("mcp-oauth-client");
    let oauth = OAuthServer::start(&s.python, &dir, &["--no-registration"]);
    let bare = dir.write(
        "bare.yaml",
        tactic("http://127.0.0.1:9/v1", &oauth.url, "    auth: {}"),
    );
    let refused = tokio::task::spawn_blocking(move || login(&[arg(&bare)], None))
        .await
        .expect("login");
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("offers no dynamic client registration: add `client_id: ID`"),
        "{}",
        refused.stderr
    );
    assert!(refused.page.is_none());

    let auth =
        "    auth: {client_id: lllm-preregistered, scopes: [mcp], token_file: tokens/remote.json}";
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1", &oauth.url, auth));
    let done =
        tokio::task::spawn_blocking(move || login(&[arg(&file), "--server", "remote"], None))
            .await
            .expect("login");
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    let stored = dir.path("tokens/remote.json");
    assert_eq!(mode(&stored), 0o600);
    assert_eq!(mode(&dir.path("tokens")), 0o700);
    let grants = oauth.grants();
    assert_eq!(grants[0]["event"], "authorize");
    assert_eq!(grants[0]["client_id"], "lllm-preregistered");
    assert_eq!(grants[0]["scopes"], serde_json::json!(["mcp"]));
    let tools = lllm(&["tools", arg(&dir.path("t.yaml"))]).run().await;
    tools.assert_clean(0, &[]);
    assert!(
        tools.stdout_text().contains("whoami"),
        "{}",
        tools.stdout_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn metadata_sending_the_flow_to_another_host_is_refused() {
    let Some(s) = servers("oauth foreign endpoint") else {
        return;
    };
    let (done, dir, oauth) =
        refused_login(&s.python, "mcp-oauth-foreign", "--foreign-endpoint", &[]).await;
    assert!(
        done.stderr
            .contains("sends its authorization_endpoint to another host (http://127.0.0.2:"),
        "{}",
        done.stderr
    );
    assert!(done.page.is_none(), "no URL was offered");
    assert!(oauth.grants().is_empty(), "nothing was registered");
    assert!(!dir.path("t.json").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_naming_another_issuer_is_refused() {
    let Some(s) = servers("oauth wrong issuer") else {
        return;
    };
    let (done, dir, oauth) = refused_login(&s.python, "mcp-oauth-iss", "--wrong-iss", &[]).await;
    assert!(
        done.stderr
            .contains("refused: Authorization server issuer mismatch"),
        "{}",
        done.stderr
    );
    assert!(done.page.is_some(), "the redirect came back");
    let grants = oauth.grants();
    assert!(
        grants.iter().all(|g| g["event"] != "token"),
        "no code was exchanged: {grants:?}"
    );
    assert!(!dir.path("t.json").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_asking_for_authorization_without_auth_says_what_to_add() {
    let Some(s) = servers("oauth 401") else {
        return;
    };
    let dir = TempDir::new("mcp-oauth-401");
    let oauth = OAuthServer::start(&s.python, &dir, &[]);
    let file = dir.write("t.yaml", tactic("http://127.0.0.1:9/v1", &oauth.url, ""));
    let tools = lllm(&["tools", arg(&file)]).run().await;
    tools.assert_clean(
        1,
        &[
            "MCP server `remote` did not start",
            "401 Unauthorized: it needs OAuth authorization",
            "      auth: {}",
            "lllm mcp login TACTIC.yaml --server remote",
        ],
    );
    let login = tokio::task::spawn_blocking(move || login(&[arg(&file)], None))
        .await
        .expect("login");
    assert_eq!(login.code, Some(2), "{}", login.stderr);
    assert!(
        login
            .stderr
            .contains("no MCP server of this tactic has `auth:`"),
        "{}",
        login.stderr
    );
}

/// Logs in to `oauth` with `auth: {token_file: t.json}` in `dir`; the tactic file.
async fn logged_in(oauth: &OAuthServer, dir: &TempDir, api_base: &str) -> PathBuf {
    let auth = "    auth: {token_file: t.json}";
    let file = dir.write("t.yaml", tactic(api_base, &oauth.url, auth));
    let done = tokio::task::spawn_blocking({
        let file = file.clone();
        move || login(&[arg(&file)], None)
    })
    .await
    .expect("login");
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    file
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_refused_with_401_is_refreshed_once_and_the_call_goes_on() {
    let Some(s) = servers("oauth 401 refresh") else {
        return;
    };
    let dir = TempDir::new("mcp-oauth-401-refresh");
    // The client is told an hour; the server refuses the token after a second.
    let args = ["--token-seconds", "1", "--advertise-seconds", "3600"];
    let oauth = OAuthServer::start(&s.python, &dir, &args);
    let file = logged_in(&oauth, &dir, "http://127.0.0.1:9/v1").await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let tools = lllm(&["tools", arg(&file)]).run().await;
    tools.assert_clean(0, &[]);
    assert!(tools.stdout_text().contains("whoami"));
    let grants = oauth.grants();
    let kinds: Vec<&str> = grants.iter().filter_map(|g| g["grant"].as_str()).collect();
    assert_refreshed(&kinds);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_that_cannot_be_refreshed_fails_saying_to_log_in_again() {
    let Some(s) = servers("oauth refresh refused") else {
        return;
    };
    let dir = TempDir::new("mcp-oauth-refresh-refused");
    let args = [
        "--token-seconds",
        "1",
        "--advertise-seconds",
        "3600",
        "--refuse-refresh",
    ];
    let oauth = OAuthServer::start(&s.python, &dir, &args);
    let file = logged_in(&oauth, &dir, "http://127.0.0.1:9/v1").await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let tools = lllm(&["tools", arg(&file)]).run().await;
    tools.assert_clean(
        1,
        &[
            "refused the stored OAuth token and refreshing it did not help",
            "lllm mcp login TACTIC.yaml --server remote",
        ],
    );
    let refused = oauth
        .grants()
        .iter()
        .filter(|g| g["event"] == "refused_refresh")
        .count();
    assert_eq!(refused, 1, "one refresh was tried: {:?}", oauth.grants());
    for token in oauth.tokens() {
        tools.assert_never_shows(&token);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_with_another_state_is_refused() {
    let Some(s) = servers("oauth wrong state") else {
        return;
    };
    // The redirect of another state is refused and the login waits on for its own, until
    // --wait says it came too late.
    let (done, dir, oauth) = refused_login(
        &s.python,
        "mcp-oauth-state",
        "--wrong-state",
        &["--wait", "3"],
    )
    .await;
    assert!(
        done.stderr
            .contains("no redirect came back within 3 s (1 redirect(s) carrying another `state`"),
        "{}",
        done.stderr
    );
    assert!(oauth.grants().iter().all(|g| g["event"] != "token"));
    assert!(!dir.path("t.json").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn other_local_clients_at_the_loopback_listener_hold_up_nothing() {
    let Some(s) = servers("oauth loopback") else {
        return;
    };
    let dir = TempDir::new("mcp-oauth-loopback");
    let oauth = OAuthServer::start(&s.python, &dir, &[]);
    let file = dir.write(
        "t.yaml",
        tactic(
            "http://127.0.0.1:9/v1",
            &oauth.url,
            "    auth: {token_file: t.json}",
        ),
    );
    let done = tokio::task::spawn_blocking(move || login_past(&[arg(&file)], None, true))
        .await
        .expect("login");
    assert_eq!(done.code, Some(0), "{}", done.stderr);
    assert!(done
        .page
        .as_deref()
        .is_some_and(|p| p.contains("authorization received")));
    assert_eq!(mode(&dir.path("t.json")), 0o600);
}
