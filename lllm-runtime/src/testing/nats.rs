//! A NATS server with JetStream of a test's own: the `nats-server` binary named by
//! `LLLM_NATS_SERVER` (`scripts/servers/nats.sh install` prints it), on a free loopback port, its
//! store in a folder the test gives; stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `nats-server -js` on 127.0.0.1.
#[derive(Debug)]
pub struct NatsServer {
    child: Child,
    port: u16,
    store: PathBuf,
    binary: PathBuf,
}

impl NatsServer {
    /// Starts one with its store in `store`. `None` (said on stderr) when `LLLM_NATS_SERVER` is not
    /// set; a panic when it is not set but `LLLM_REQUIRE_NATS=1` (the test command sets both).
    #[allow(clippy::print_stderr)]
    pub fn start(test: &str, store: &Path) -> Option<NatsServer> {
        let binary = match std::env::var("LLLM_NATS_SERVER") {
            Ok(path) => PathBuf::from(path),
            Err(_) if std::env::var("LLLM_REQUIRE_NATS").as_deref() == Ok("1") => panic!(
                "{test}: LLLM_NATS_SERVER must be set: run `eval \"$(scripts/servers/nats.sh install)\"` (scripts/test.sh does)"
            ),
            Err(_) => {
                eprintln!("{test}: skipped: nats-server is not installed (scripts/servers/nats.sh install; scripts/test.sh runs this suite)");
                return None;
            }
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .ok()?;
        let child = spawn(&binary, port, store)?;
        Some(NatsServer {
            child,
            port,
            store: store.to_owned(),
            binary,
        })
    }

    /// `nats://127.0.0.1:PORT/NAME`: a queue on this server.
    pub fn queue(&self, name: &str) -> String {
        format!("nats://127.0.0.1:{}/{name}", self.port)
    }

    /// Stops the server (its store stays) and starts it again on the same port after `pause`.
    pub fn restart_after(&mut self, pause: Duration) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::thread::sleep(pause);
        if let Some(child) = spawn(&self.binary, self.port, &self.store) {
            self.child = child;
        }
    }
}

/// Starts the server and waits (up to 5 s) until it listens.
fn spawn(binary: &Path, port: u16, store: &Path) -> Option<Child> {
    let child = Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(child)
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}
