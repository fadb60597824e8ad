//! The TLS policy of an engine's HTTP client (TL-1..TL-6): verification on by default, extra CA
//! certificates, a client identity for mTLS, and an explicit insecure mode for development that
//! skips chain verification but still checks the host name and the handshake signatures.
//! A configuration that cannot be built is an error, never a silent fallback.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::engine::EngineError;

/// TLS settings of an engine's HTTP client. The default verifies servers against the webpki
/// roots and presents no client certificate.
#[derive(Clone, Default)]
pub struct TlsConfig {
    /// Extra trusted CA certificates (PEM, one or more), added to the webpki roots.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// A client certificate chain and its private key (both PEM) for mutual TLS.
    pub client_identity_pem: Option<(Vec<u8>, Vec<u8>)>,
    /// Development only: accept any certificate chain, still checking that the certificate is
    /// valid for the host name and that the handshake is signed by it. Every client built with
    /// it logs a warning.
    pub insecure_skip_chain_verification: bool,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("extra_ca_pem", &self.extra_ca_pem.as_ref().map(Vec::len))
            .field("client_identity", &self.client_identity_pem.is_some())
            .field(
                "insecure_skip_chain_verification",
                &self.insecure_skip_chain_verification,
            )
            .finish()
    }
}

/// The rustls client configuration for `tls` (ring provider, HTTP/1.1 ALPN).
pub(crate) fn client_config(tls: &TlsConfig) -> Result<rustls::ClientConfig, EngineError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(pem) = &tls.extra_ca_pem {
        let mut added = 0usize;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| EngineError::Tls(format!("extra CA bundle: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| EngineError::Tls(format!("extra CA certificate: {e}")))?;
            added += 1;
        }
        if added == 0 {
            return Err(EngineError::Tls(
                "extra CA bundle holds no PEM certificate".into(),
            ));
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| EngineError::Tls(e.to_string()))?;
    let builder = if tls.insecure_skip_chain_verification {
        tracing::warn!(
            "INSECURE_TLS: certificate chains are not verified for this HTTP client (host names and handshake signatures still are); use only for development"
        );
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NameOnlyVerifier {
                algorithms: provider.signature_verification_algorithms,
            }))
    } else {
        builder.with_root_certificates(roots)
    };
    let mut config = match &tls.client_identity_pem {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => {
            let chain = CertificateDer::pem_slice_iter(chain)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| EngineError::Tls(format!("client certificate: {e}")))?;
            if chain.is_empty() {
                return Err(EngineError::Tls(
                    "client certificate file holds no PEM certificate".into(),
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(key)
                .map_err(|e| EngineError::Tls(format!("client key: {e}")))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| EngineError::Tls(format!("client identity: {e}")))?
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Accepts any chain but checks the host name and the handshake signatures (TL-3).
#[derive(Debug)]
struct NameOnlyVerifier {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for NameOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = webpki::EndEntityCert::try_from(end_entity).map_err(|_| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
        })?;
        cert.verify_is_valid_for_subject_name(server_name)
            .map_err(|_| {
                rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
            })?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
