//! The TLS policy of an engine's HTTP client: verification on by default, extra CA
//! certificates, a client identity for mTLS, and an explicit insecure mode for development that
//! skips chain verification but still checks the host name and the handshake signatures.
//! A configuration that cannot be built is an error, never a silent fallback.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName, UnixTime,
};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::error::EngineError;

/// TLS settings of an engine's HTTP client. The default verifies servers against the webpki
/// roots and presents no client certificate.
#[derive(Clone, Default)]
pub struct TlsConfig {
    /// Extra trusted CA certificates (PEM, one or more), added to the webpki roots.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// A client certificate chain (PEM) and its private key (PKCS#8, PKCS#1 or SEC1, as PEM or
    /// DER) for mutual TLS. An encrypted PKCS#8 key is decrypted when it is read
    /// ([`TlsConfig::with_encrypted_client_identity_files`]).
    pub client_identity_pem: Option<(Vec<u8>, Vec<u8>)>,
    /// Certificate revocation lists (PEM) to check server certificates against (`crlPath`):
    /// a revoked end-entity certificate is rejected; certificates whose issuer published no
    /// list here are accepted. Cannot be combined with the insecure mode.
    pub crl_pem: Option<Vec<u8>>,
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
            .field("crl_pem", &self.crl_pem.as_ref().map(Vec::len))
            .field(
                "insecure_skip_chain_verification",
                &self.insecure_skip_chain_verification,
            )
            .finish()
    }
}

fn read(what: &str, path: &Path) -> Result<Vec<u8>, EngineError> {
    std::fs::read(path)
        .map_err(|e| EngineError::Tls(format!("cannot read the {what} {}: {e}", path.display())))
}

impl TlsConfig {
    /// Adds the CA certificates of a PEM file (`caCertsPath`) to the trusted roots. The
    /// file is read now; an unreadable file is an error naming it.
    pub fn with_ca_file(mut self, path: &Path) -> Result<TlsConfig, EngineError> {
        let mut pem = self.extra_ca_pem.take().unwrap_or_default();
        pem.extend(read("CA bundle", path)?);
        pem.push(b'\n');
        self.extra_ca_pem = Some(pem);
        Ok(self)
    }

    /// Presents the client certificate chain (PEM file) and key (PEM or DER file) for mutual
    /// TLS (`clientCertPath`, `clientKeyPath`).
    pub fn with_client_identity_files(
        mut self,
        cert: &Path,
        key: &Path,
    ) -> Result<TlsConfig, EngineError> {
        self.client_identity_pem =
            Some((read("client certificate", cert)?, read("client key", key)?));
        Ok(self)
    }

    /// Like [`TlsConfig::with_client_identity_files`] with an encrypted PKCS#8 key (PEM
    /// `ENCRYPTED PRIVATE KEY`, as written by `openssl pkcs8 -topk8 -v2 aes-256-cbc`) and its
    /// password. The key is decrypted now; a wrong password, another kind of key or an
    /// unsupported cipher is an error that says which, never the password itself.
    pub fn with_encrypted_client_identity_files(
        mut self,
        cert: &Path,
        key: &Path,
        password: &str,
    ) -> Result<TlsConfig, EngineError> {
        let key = decrypt_private_key(&read("client key", key)?, password)?;
        self.client_identity_pem = Some((read("client certificate", cert)?, key));
        Ok(self)
    }

    /// Checks server certificates against the revocation lists of a PEM file (`crlPath`).
    pub fn with_crl_file(mut self, path: &Path) -> Result<TlsConfig, EngineError> {
        let mut pem = self.crl_pem.take().unwrap_or_default();
        pem.extend(read("CRL file", path)?);
        pem.push(b'\n');
        self.crl_pem = Some(pem);
        Ok(self)
    }

    /// The development-only insecure mode: chains are not verified, host names and
    /// handshake signatures still are.
    pub fn insecure(mut self) -> TlsConfig {
        self.insecure_skip_chain_verification = true;
        self
    }
}

/// The PKCS#8 DER of an encrypted PEM private key.
fn decrypt_private_key(pem: &[u8], password: &str) -> Result<Vec<u8>, EngineError> {
    let bad = |what: String| EngineError::Tls(format!("client key: {what}"));
    let text = std::str::from_utf8(pem).map_err(|_| bad("not PEM text".into()))?;
    let (label, document) =
        pkcs8::Document::from_pem(text).map_err(|e| bad(format!("not PEM: {e}")))?;
    if label != "ENCRYPTED PRIVATE KEY" {
        return Err(bad(format!(
            "a {label} block where an ENCRYPTED PRIVATE KEY was expected"
        )));
    }
    let encrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
        .map_err(|e| bad(format!("not an encrypted PKCS#8 key: {e}")))?;
    let decrypted = encrypted.decrypt(password).map_err(|e| {
        bad(format!(
            "cannot decrypt it (wrong password or unsupported cipher): {e}"
        ))
    })?;
    Ok(decrypted.as_bytes().to_vec())
}

/// A private key as PEM, or else as DER (PKCS#8, PKCS#1 or SEC1).
fn private_key(bytes: &[u8]) -> Result<PrivateKeyDer<'static>, EngineError> {
    match PrivateKeyDer::from_pem_slice(bytes) {
        Ok(key) => Ok(key),
        Err(pem_error) if bytes.windows(10).any(|w| w == b"-----BEGIN") => {
            Err(EngineError::Tls(format!(
                "client key: {pem_error} (an encrypted key needs its password: \
                 TlsConfig::with_encrypted_client_identity_files)"
            )))
        }
        Err(_) => PrivateKeyDer::try_from(bytes.to_vec())
            .map_err(|e| EngineError::Tls(format!("client key is neither PEM nor DER: {e}"))),
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
    let crls = match &tls.crl_pem {
        None => Vec::new(),
        Some(pem) => {
            let crls = CertificateRevocationListDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| EngineError::Tls(format!("CRL: {e}")))?;
            if crls.is_empty() {
                return Err(EngineError::Tls("CRL file holds no PEM CRL".into()));
            }
            if tls.insecure_skip_chain_verification {
                return Err(EngineError::Tls(
                    "CRL checking needs chain verification: it cannot be combined with the insecure mode"
                        .into(),
                ));
            }
            crls
        }
    };
    let builder = if tls.insecure_skip_chain_verification {
        tracing::warn!(
            "INSECURE_TLS: certificate chains are not verified for this HTTP client (host names and handshake signatures still are); use only for development"
        );
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NameOnlyVerifier {
                algorithms: provider.signature_verification_algorithms,
            }))
    } else if crls.is_empty() {
        builder.with_root_certificates(roots)
    } else {
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .with_crls(crls)
                .only_check_end_entity_revocation()
                .allow_unknown_revocation_status()
                .build()
                .map_err(|e| EngineError::Tls(format!("CRL: {e}")))?;
        builder.with_webpki_verifier(verifier)
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
            let key = private_key(key)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| EngineError::Tls(format!("client identity: {e}")))?
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Accepts any chain but checks the host name and the handshake signatures.
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
