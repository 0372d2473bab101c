//! The HTTP clients' TLS: reqwest's own configuration (the system's root certificates through
//! rustls-platform-verifier, the default crypto provider, every TLS version, HTTP/1.1 by ALPN), except
//! that the roots are read at the first TLS handshake instead of when the client is built.
//!
//! Reading and parsing the system's roots (about 150 PEM files) was 90% of the instructions of a
//! one-turn `lllm run` and a few hundred KiB of its memory, though a run against a local server over
//! plain HTTP never uses them. A machine without any CA certificate (a minimal container) could not
//! build a client at all, not even for plain HTTP; now only a TLS handshake fails there, with
//! rustls-platform-verifier's own error.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A reqwest client builder with lllm's TLS set up: no redirect is ever followed (one would carry the
/// credentials and the prompt to another host).
pub(crate) fn http_client() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    match client_config() {
        Ok(config) => builder.tls_backend_preconfigured(config),
        // A provider installed by the program that refuses a TLS version: reqwest's own set-up
        // reports it when the client is built, as before.
        Err(_) => builder,
    }
}

/// What reqwest builds for its rustls backend when told nothing (`ClientBuilder::build`, reqwest
/// 0.13), with the verifier made lazy.
fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    // reqwest's choice: a provider the program installed, else aws-lc-rs.
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(SystemRoots::new(provider)))
        .with_no_client_auth();
    // reqwest is built without HTTP/2: it offers HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The system's root certificates (rustls-platform-verifier: `SSL_CERT_FILE`, `SSL_CERT_DIR` or the
/// system's store), read when a server's certificate is first verified and kept for the process.
#[derive(Debug)]
pub(crate) struct SystemRoots {
    provider: Arc<CryptoProvider>,
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl SystemRoots {
    fn new(provider: Arc<CryptoProvider>) -> SystemRoots {
        SystemRoots {
            provider,
            verifier: OnceLock::new(),
        }
    }

    /// The verifier, its roots read on the first call; the error of reading them (no certificate
    /// found, say) on every call.
    fn verifier(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether the roots have been read.
    #[cfg(test)]
    fn loaded(&self) -> bool {
        self.verifier.get().is_some()
    }
}

impl ServerCertVerifier for SystemRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    /// The provider's schemes, as the platform verifier's own (it asks the same provider), without
    /// reading the roots: rustls asks for them before any certificate arrives.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    #[test]
    fn building_a_client_reads_no_root_certificate() {
        let roots = SystemRoots::new(provider());
        let schemes = roots.supported_verify_schemes();
        assert!(!schemes.is_empty());
        assert!(!roots.loaded(), "the schemes are the provider's");
        assert!(http_client().build().is_ok());
    }

    #[test]
    fn the_schemes_are_the_platform_verifiers() {
        use rustls::client::danger::ServerCertVerifier as _;
        let roots = SystemRoots::new(provider());
        let Ok(platform) = rustls_platform_verifier::Verifier::new(provider()) else {
            return; // a machine without CA certificates: nothing to compare
        };
        assert_eq!(
            roots.supported_verify_schemes(),
            platform.supported_verify_schemes()
        );
    }

    #[test]
    fn the_roots_are_read_at_the_first_verification() {
        let roots = SystemRoots::new(provider());
        let garbage = CertificateDer::from(vec![0u8; 8]);
        let name = ServerName::try_from("example.com").expect("a DNS name");
        let outcome = roots.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now());
        assert!(outcome.is_err(), "garbage is no certificate");
        assert!(roots.loaded());
    }
}
