//! TLS of the real binary: the system's root certificates are read at the first TLS handshake, not
//! when lllm starts, and servers are verified against them all the same.
//!
//! The servers: the stub server behind a TLS front that forwards each connection's bytes to it, with
//! the certificate in `tests/tls/` (`server.pem`, for 127.0.0.1 and localhost, issued by `ca.pem`;
//! `server.key` is a key for these tests only). The roots are chosen with `SSL_CERT_FILE` and
//! `SSL_CERT_DIR`, which the system verifier honours instead of the system's store.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use lllm_runtime::testing::StubServer;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;

use super::support::TempDir;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/tls")
        .join(name)
}

/// A TLS front for `server`: `https://127.0.0.1:<port>/v1`. Each connection is handed to the stub
/// server once its handshake is done; a failed handshake ends the connection.
async fn tls_front(server: &StubServer) -> String {
    let backend = server
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let certs = CertificateDer::pem_file_iter(fixture("server.pem"))
        .expect("server.pem")
        .collect::<Result<Vec<_>, _>>()
        .expect("certificates");
    let key = PrivateKeyDer::from_pem_file(fixture("server.key")).expect("server.key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .expect("server certificate");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, backend) = (acceptor.clone(), backend.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                if let Ok(mut plain) = TcpStream::connect(&backend).await {
                    tokio::io::copy_bidirectional(&mut tls, &mut plain)
                        .await
                        .ok();
                }
            });
        }
    });
    format!("https://{addr}/v1")
}

/// `lllm run` of a one-step tactic against `api_base`, with `SSL_CERT_FILE` set to `roots` (a PEM
/// file, or a path where there is none) and `SSL_CERT_DIR` to an empty folder; `None` keeps the
/// system's store.
async fn run(dir: &TempDir, api_base: &str, roots: Option<&Path>) -> Output {
    let tactic = dir.write(
        "t.yaml",
        format!(
            "agent_configs:\n  - {{name: a, model_name: m, system_prompt: s, max_call_retries: 0, \
             model_args: {{api_base: \"{api_base}\", timeout: 20}}}}\n\
             steps:\n  - {{agent: a, receive: hello}}\n"
        ),
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_lllm"));
    command
        .args(["run", tactic.to_str().expect("utf-8 path")])
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("LLLM_LOG")
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(roots) = roots {
        let empty = dir.path("no-certificates");
        std::fs::create_dir_all(&empty).expect("folder");
        command
            .env("SSL_CERT_FILE", roots)
            .env("SSL_CERT_DIR", &empty);
    }
    command.output().await.expect("lllm runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn a_run_over_plain_http_needs_no_ca_certificate() {
    let server = StubServer::start().await.expect("stub");
    let dir = TempDir::new("tls-none");
    let nowhere = dir.path("no-such-bundle.pem");
    let output = run(&dir, &server.base_url(), Some(&nowhere)).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        text(&output.stderr)
    );
    assert_eq!(text(&output.stdout).trim(), "stub answer to: hello");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_https_server_is_verified_against_the_roots() {
    let server = StubServer::start().await.expect("stub");
    let api_base = tls_front(&server).await;
    let dir = TempDir::new("tls-verify");

    let trusted = run(&dir, &api_base, Some(&fixture("ca.pem"))).await;
    assert_eq!(
        trusted.status.code(),
        Some(0),
        "stderr: {}",
        text(&trusted.stderr)
    );
    assert_eq!(text(&trusted.stdout).trim(), "stub answer to: hello");
    assert_eq!(server.requests().len(), 1);

    // The system's store does not hold the test CA; an empty one holds nothing.
    let nowhere = dir.path("no-such-bundle.pem");
    for roots in [None, Some(nowhere.as_path())] {
        let refused = run(&dir, &api_base, roots).await;
        let stderr = text(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{roots:?}: {stderr}");
        assert!(stderr.contains("certificate"), "{roots:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{roots:?}: {stderr}");
    }
    assert_eq!(
        server.requests().len(),
        1,
        "no refused run reached the server"
    );
}
