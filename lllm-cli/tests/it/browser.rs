//! Headless Chromium driven over WebDriver (ChromeDriver), for the console's tests: a page is loaded,
//! read with scripts, clicked with real input events and photographed.
//!
//! The browser is Debian's `chromium` with `chromium-driver` (`/usr/bin/chromium`,
//! `/usr/bin/chromedriver`, or `LLLM_CHROMIUM` and `LLLM_CHROMEDRIVER`). `scripts/test.sh` installs
//! them and sets `LLLM_REQUIRE_BROWSER=1`; without them a test says so and passes without checking,
//! unless that variable is set, which makes it fail.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::TempDir;

/// WebDriver's key for an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium session; the browser and its driver stop when dropped.
pub(crate) struct Browser {
    driver: Child,
    base: String,
    http: reqwest::Client,
    profile: TempDir,
}

fn installed(variable: &str, default: &str) -> Option<PathBuf> {
    match std::env::var(variable) {
        Ok(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => Some(PathBuf::from(default)).filter(|p| p.exists()),
    }
}

impl Browser {
    /// Starts one, or `None` (said on stderr) when Chromium or ChromeDriver is not installed.
    #[allow(clippy::print_stderr)]
    pub(crate) async fn start(test: &str) -> Option<Browser> {
        let chromium = installed("LLLM_CHROMIUM", "/usr/bin/chromium");
        let driver = installed("LLLM_CHROMEDRIVER", "/usr/bin/chromedriver");
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            if std::env::var("LLLM_REQUIRE_BROWSER").as_deref() == Ok("1") {
                panic!("{test}: Chromium and ChromeDriver must be installed: apt-get install chromium chromium-driver (scripts/test.sh does)");
            }
            eprintln!("{test}: skipped: Chromium is not installed (apt-get install chromium chromium-driver; scripts/test.sh runs this test)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{test}: {} does not start: {e}", driver.display()));
        let profile = TempDir::new("chromium-profile");
        let mut browser = Browser {
            driver: child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
            profile,
        };
        browser.wait_ready().await;
        browser.base = browser.new_session(&chromium).await;
        Some(browser)
    }

    async fn wait_ready(&self) {
        let started = Instant::now();
        loop {
            let ready = self.http.get(format!("{}/status", self.base)).send().await;
            if let Ok(response) = ready {
                let status: Value =
                    serde_json::from_str(&response.text().await.unwrap_or_default())
                        .unwrap_or_default();
                if status["value"]["ready"] == true {
                    return;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "ChromeDriver never became ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Opens a session and returns its base URL.
    async fn new_session(&self, chromium: &Path) -> String {
        let arguments = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
            &format!("--user-data-dir={}", self.profile.0.display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": arguments},
        }}});
        let session = self.call("POST", "/session", Some(capabilities)).await;
        let id = session["sessionId"].as_str().expect("a session id");
        format!("{}/session/{id}", self.base)
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        match self.try_call(method, path, body).await {
            Ok(value) => value,
            Err((error, message)) => panic!("WebDriver {method} {path}: {error}: {message}"),
        }
    }

    /// The call's value, or WebDriver's error and message.
    async fn try_call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, (String, Value)> {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self
                .http
                .post(url)
                .header("content-type", "application/json")
                .body(body.unwrap_or_else(|| json!({})).to_string()),
        };
        let response = request.send().await.expect("ChromeDriver answers");
        let text = response.text().await.expect("a body");
        let reply: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        match reply["value"]["error"].as_str() {
            Some(error) => Err((error.to_owned(), reply["value"]["message"].clone())),
            None => Ok(reply["value"].clone()),
        }
    }

    /// Loads `url`.
    pub(crate) async fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url}))).await;
    }

    /// The value `script` (a function body) returns in the page.
    pub(crate) async fn run(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// The text of the first element matching `css`, or `None`.
    pub(crate) async fn text(&self, css: &str) -> Option<String> {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.textContent : null;",
            json!(css)
        );
        self.run(&script).await.as_str().map(str::to_owned)
    }

    /// Waits (up to 15 s) until `script` returns true; panics with `what` otherwise.
    pub(crate) async fn wait_until(&self, what: &str, script: &str) {
        let started = Instant::now();
        while self.run(script).await != Value::Bool(true) {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "the page never showed {what}: {}",
                self.text("#main").await.unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the first element matching `css` as a person would (a real pointer event).
    pub(crate) async fn click(&self, css: &str) {
        // The page may draw the element again between finding and clicking it: find it again.
        for _ in 0..10 {
            let found = self
                .call(
                    "POST",
                    "/element",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            let element = found[ELEMENT].as_str().expect("an element");
            let clicked = self
                .try_call("POST", &format!("/element/{element}/click"), None)
                .await;
            match clicked {
                Ok(_) => return,
                Err((error, _)) if error == "stale element reference" => continue,
                Err((error, message)) => panic!("click {css}: {error}: {message}"),
            }
        }
        panic!("click {css}: the element was drawn again ten times in a row");
    }

    /// Saves what the page looks like now as a PNG file.
    pub(crate) async fn screenshot(&self, file: &Path) {
        use base64::Engine as _;
        let png = self.call("GET", "/screenshot", None).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64"))
            .expect("a PNG");
        if let Some(folder) = file.parent() {
            std::fs::create_dir_all(folder).ok();
        }
        std::fs::write(file, bytes).expect("screenshot written");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Closing the session stops Chromium; then the driver goes.
        let url = self.base.clone();
        std::thread::spawn(move || {
            reqwest::blocking::Client::new()
                .delete(url)
                .timeout(Duration::from_secs(5))
                .send()
                .ok();
        })
        .join()
        .ok();
        self.driver.kill().ok();
        self.driver.wait().ok();
    }
}
