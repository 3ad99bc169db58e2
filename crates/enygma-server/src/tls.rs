//! TLS for the listener: the certificate and key from PEM files, optional client certificates
//! (mTLS) checked against a CA file, and a reload that swaps them without touching open
//! connections.
//!
//! rustls with the `ring` provider, TLS 1.2 and 1.3 (rustls' safe defaults), ALPN `h2` and
//! `http/1.1`. Every file is read when the service starts (a bad file stops the start, exit 2)
//! and again on each [`Tls::reload`] (SIGHUP): a reload that fails keeps the previous
//! configuration, so a half-written certificate never takes the service down. A connection
//! keeps the configuration it was accepted with; only new handshakes see the new one.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio_rustls::rustls::client::danger::HandshakeSignatureValid;
use tokio_rustls::rustls::crypto::ring::default_provider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::UnixTime;
use tokio_rustls::rustls::pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer,
};
use tokio_rustls::rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, Error, OtherError, RootCertStore,
    ServerConfig, SignatureScheme,
};
use tokio_rustls::TlsAcceptor;
use webpki::CertRevocationList;

use crate::admission::abuse::AddressAllowances;
use crate::caller::Caller;
use crate::client_names::{self, ClientNames};
use crate::transport::budget::ConnectionSlot;

/// The PEM files of the listener's TLS configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// Certificate chain, leaf first.
    pub cert: PathBuf,
    /// Private key of the leaf certificate.
    pub key: PathBuf,
    /// CAs whose client certificates are accepted; `None`: no client certificates asked for.
    pub client_ca: Option<PathBuf>,
    /// Callers named by their certificate ([`ClientNames`]); with it, a certificate that no
    /// rule names is refused at the handshake. Needs `client_ca`.
    pub client_names: Option<PathBuf>,
    /// Certificate revocation lists of the client CA (PEM, `--client-crl`): a revoked client
    /// certificate is refused at the handshake, and a reload closes the open connections of
    /// the certificates it revokes. Needs `client_ca`.
    pub client_crl: Option<PathBuf>,
}

/// The listener's TLS configuration, swappable at run time.
pub struct Tls {
    files: TlsFiles,
    current: RwLock<Arc<Current>>,
    /// Paces the log line of each accepted client certificate ([`Tls::log_client`]).
    accepted_log: EverySecond,
    /// Paces the WARN line of refused handshakes, once per address and minute
    /// ([`Tls::log_handshake_failure`]).
    refused_log: AddressAllowances,
    /// The open connections that a client certificate authenticated, so that a reload can
    /// close those of a certificate its revocation lists now revoke.
    clients: Mutex<HashMap<u64, TrackedClient>>,
    next_client: AtomicU64,
}

/// An open connection of a client certificate.
struct TrackedClient {
    slot: Weak<ConnectionSlot>,
    leaf: CertificateDer<'static>,
}

/// Removes its connection from [`Tls`]'s open clients when the connection ends.
pub struct ClientConnection {
    tls: Arc<Tls>,
    id: u64,
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        self.tls
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

/// One loaded configuration: the server's and the certificate-to-caller rules it checks.
struct Current {
    config: Arc<ServerConfig>,
    names: Option<Arc<ClientNames>>,
    /// `--client-crl`, parsed (empty without it).
    revoked: Vec<CertRevocationList<'static>>,
}

impl Tls {
    /// Reads and checks every file. The error names the file and what is wrong with it, never
    /// its content.
    pub fn load(files: TlsFiles) -> Result<Self, String> {
        let current = build(&files)?;
        Ok(Tls {
            files,
            current: RwLock::new(Arc::new(current)),
            accepted_log: EverySecond::default(),
            refused_log: AddressAllowances::warnings_only(),
            clients: Mutex::new(HashMap::new()),
            next_client: AtomicU64::new(0),
        })
    }

    /// Reads every file again and, if they make a valid configuration, uses it for new
    /// connections, and closes the open connections whose client certificate the new
    /// revocation lists revoke (after the requests in progress on them); returns how many. On
    /// error the previous configuration stays in use and nothing is closed.
    pub fn reload(&self) -> Result<usize, String> {
        let current = Arc::new(build(&self.files)?);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = current.clone();
        Ok(self.close_revoked(&current.revoked))
    }

    /// Closes every tracked connection whose certificate one of `revoked` lists.
    fn close_revoked(&self, revoked: &[CertRevocationList<'static>]) -> usize {
        if revoked.is_empty() {
            return 0;
        }
        let clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let mut closed = 0;
        for client in clients.values() {
            let Some(slot) = client.slot.upgrade() else {
                continue;
            };
            if is_revoked(&client.leaf, revoked) {
                let subject = client_names::subject(&client.leaf).unwrap_or_default();
                tracing::warn!(
                    common_name = ?subject.common_names,
                    dns = ?subject.dns,
                    "client certificate revoked by --client-crl: closing its connection"
                );
                slot.close_after_response();
                closed += 1;
            }
        }
        closed
    }

    /// Tracks a connection that `leaf` authenticated, until the returned guard is dropped.
    pub fn track_client(
        self: &Arc<Self>,
        slot: &Arc<ConnectionSlot>,
        leaf: &CertificateDer<'_>,
    ) -> ClientConnection {
        let id = self.next_client.fetch_add(1, Ordering::Relaxed);
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                id,
                TrackedClient {
                    slot: Arc::downgrade(slot),
                    leaf: leaf.clone().into_owned(),
                },
            );
        ClientConnection {
            tls: self.clone(),
            id,
        }
    }

    /// An acceptor with the configuration in use now.
    pub fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.current().config.clone())
    }

    fn current(&self) -> Arc<Current> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The caller a verified client certificate names (`--tls-client-names`); `None` without
    /// rules or without a certificate. A certificate no rule names never gets this far: the
    /// handshake refused it.
    pub fn caller_of(&self, peer: Option<&[CertificateDer<'_>]>) -> Option<Caller> {
        let leaf = peer?.first()?;
        self.current().names.as_ref()?.name_of(leaf)
    }

    /// Logs a failed handshake from `peer`: at WARN the first of its address in a minute (a
    /// client without a certificate, or with one the client CA did not sign, is a
    /// misconfigured gateway an operator wants to hear about), the rest at DEBUG.
    pub fn log_handshake_failure(&self, peer: SocketAddr, error: &std::io::Error) {
        let counted = self
            .refused_log
            .failure(&peer.ip(), std::time::Instant::now());
        if counted.warn {
            tracing::warn!(peer = %peer, error = %error, "TLS handshake refused (further ones from this address this minute at DEBUG)");
        } else {
            tracing::debug!(peer = %peer, error = %error, "TLS handshake refused");
        }
    }

    /// Logs the client certificate a handshake from `peer` verified: its subject and the
    /// caller it names (`anonymous` without `--tls-client-names`), so that the log tells who
    /// held which connection. At most one line a second, with how many the pause swallowed.
    pub fn log_client(
        &self,
        peer: SocketAddr,
        certificate: Option<&[CertificateDer<'_>]>,
        caller: Option<&Caller>,
    ) {
        let Some(leaf) = certificate.and_then(|c| c.first()) else {
            return;
        };
        let Some(suppressed) = self.accepted_log.admit() else {
            return;
        };
        let subject = client_names::subject(leaf).unwrap_or_default();
        tracing::info!(
            peer = %peer,
            common_name = ?subject.common_names,
            dns = ?subject.dns,
            uri = ?subject.uris,
            caller = caller.map_or(crate::caller::ANONYMOUS, Caller::name),
            suppressed_since_last = suppressed,
            "client certificate accepted at the TLS handshake"
        );
    }

    /// The callers the certificate rules name.
    pub fn callers(&self) -> Vec<Caller> {
        self.current()
            .names
            .as_ref()
            .map(|n| n.callers())
            .unwrap_or_default()
    }

    /// Whether clients must present a certificate.
    pub fn requires_client_cert(&self) -> bool {
        self.files.client_ca.is_some()
    }
}

fn build(files: &TlsFiles) -> Result<Current, String> {
    let certs = read_certs(&files.cert, "--tls-cert")?;
    let key = read_key(&files.key)?;
    let provider = Arc::new(default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: no usable protocol version: {e}"))?;
    let names = match (&files.client_names, &files.client_ca) {
        (Some(path), Some(_)) => Some(Arc::new(ClientNames::load(path)?)),
        (Some(_), None) => {
            return Err(
                "--tls-client-names needs --tls-client-ca: only verified client \
                        certificates can name a caller"
                    .into(),
            )
        }
        (None, _) => None,
    };
    let (crls, revoked) = match (&files.client_crl, &files.client_ca) {
        (Some(path), Some(_)) => read_crls(path)?,
        (Some(_), None) => {
            return Err("--client-crl needs --tls-client-ca: it revokes client certificates".into())
        }
        (None, _) => (Vec::new(), Vec::new()),
    };
    let builder = match &files.client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs(ca, "--tls-client-ca")? {
                roots.add(cert).map_err(|e| {
                    format!(
                        "--tls-client-ca {}: not a usable CA certificate: {e}",
                        ca.display()
                    )
                })?;
            }
            // A verifier that cannot be built stops the start: there is no fallback to
            // accepting clients without a certificate.
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .with_crls(crls)
                .only_check_end_entity_revocation()
                .build()
                .map_err(|e| format!("--tls-client-ca {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(Arc::new(NamedClients {
                inner: verifier,
                names: names.clone(),
                refusal_log: EverySecond::default(),
            }))
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        format!(
            "--tls-cert {} / --tls-key {}: {e}",
            files.cert.display(),
            files.key.display()
        )
    })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Current {
        config: Arc::new(config),
        names,
        revoked,
    })
}

/// The revocation lists of `--client-crl` (PEM, one or more `X509 CRL` blocks): as rustls'
/// verifier takes them, and parsed for the scan of open connections.
fn read_crls(
    path: &Path,
) -> Result<
    (
        Vec<CertificateRevocationListDer<'static>>,
        Vec<CertRevocationList<'static>>,
    ),
    String,
> {
    let pem = read_file(path, "--client-crl")?;
    let ders = CertificateRevocationListDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--client-crl {}: {e}", path.display()))?;
    if ders.is_empty() {
        return Err(format!(
            "--client-crl {}: no X509 CRL block",
            path.display()
        ));
    }
    let parsed = ders
        .iter()
        .map(|der| {
            webpki::OwnedCertRevocationList::from_der(der)
                .map(CertRevocationList::from)
                .map_err(|e| format!("--client-crl {}: not a usable CRL: {e:?}", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((ders, parsed))
}

/// Whether one of `crls`, from `leaf`'s issuer, lists `leaf`'s serial number.
fn is_revoked(leaf: &CertificateDer<'_>, crls: &[CertRevocationList<'_>]) -> bool {
    let Ok(cert) = webpki::EndEntityCert::try_from(leaf) else {
        return false;
    };
    crls.iter().any(|crl| {
        crl.issuer() == cert.issuer() && matches!(crl.find_serial(cert.serial()), Ok(Some(_)))
    })
}

/// The client CA's verifier, plus the certificate-to-caller rules: a certificate of the CA
/// that no rule names is refused like one of another CA. Every refusal is logged with its
/// reason (rate limited): without it a refused client leaves no trace in the server's log.
#[derive(Debug)]
struct NamedClients {
    inner: Arc<dyn ClientCertVerifier>,
    names: Option<Arc<ClientNames>>,
    refusal_log: EverySecond,
}

impl ClientCertVerifier for NamedClients {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        let verdict = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)
            .and_then(|ok| match &self.names {
                Some(names) if names.name_of(end_entity).is_none() => Err(Error::General(
                    "the certificate names no caller of --tls-client-names".into(),
                )),
                _ => Ok(ok),
            });
        match &verdict {
            Ok(_) => {
                let subject = client_names::subject(end_entity).unwrap_or_default();
                tracing::debug!(
                    common_name = ?subject.common_names,
                    dns = ?subject.dns,
                    uri = ?subject.uris,
                    "client certificate accepted"
                );
            }
            Err(e) => self.log_refusal(e, end_entity),
        }
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

impl NamedClients {
    /// Logs a refused client certificate at most once a second (a client retrying in a loop
    /// must not flood the log), with how many refusals the pause swallowed.
    fn log_refusal(&self, error: &Error, cert: &CertificateDer<'_>) {
        let Some(suppressed) = self.refusal_log.admit() else {
            return;
        };
        let subject = client_names::subject(cert).unwrap_or_default();
        tracing::warn!(
            reason = %refusal_reason(error),
            common_name = ?subject.common_names,
            dns = ?subject.dns,
            suppressed_since_last = suppressed,
            "client certificate refused at the TLS handshake"
        );
    }
}

/// Why a client certificate was refused, in words an operator can act on. rustls passes
/// webpki's parse errors on as opaque `Other` errors; the one clients hit in practice is an
/// X.509 v1 certificate (what `openssl x509 -req` makes without an extensions file), which
/// webpki does not accept.
fn refusal_reason(error: &Error) -> String {
    if let Error::InvalidCertificate(CertificateError::Other(OtherError(inner))) = error {
        if let Some(webpki::Error::UnsupportedCertVersion) = inner.downcast_ref::<webpki::Error>() {
            return "an X.509 v1 certificate: client certificates must be X.509 v3 (issue it \
                    with extensions: basicConstraints, keyUsage, extendedKeyUsage=clientAuth, \
                    subjectAltName; see docs/security.md)"
                .into();
        }
    }
    error.to_string()
}

/// Lets one log line through a second; counts the others.
#[derive(Debug, Default)]
struct EverySecond {
    last_second: AtomicU64,
    suppressed: AtomicU64,
}

impl EverySecond {
    /// `Some(lines suppressed since the last one)` if a line may be logged now.
    fn admit(&self) -> Option<u64> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let last = self.last_second.load(Ordering::Relaxed);
        if last == now
            || self
                .last_second
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

fn read_file(path: &Path, flag: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{flag} {}: cannot read: {e}", path.display()))
}

fn read_certs(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_file(path, flag)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!("{flag} {}: not a valid PEM file", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {}: no CERTIFICATE in the file",
            path.display()
        ));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let pem = read_file(path, "--tls-key")?;
    // The parser's error could quote a line of the file: only say that it failed.
    PrivateKeyDer::from_pem_slice(&pem).map_err(|_| {
        format!(
            "--tls-key {}: no PEM private key (PKCS#8, PKCS#1 or SEC1) in the file",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("enygma-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn bad_files_stop_the_start_with_a_message_naming_the_file() {
        let dir = temp_dir("bad");
        let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = write(&dir, "cert.pem", &ca.cert.pem());
        let key = write(&dir, "key.pem", &ca.key_pair.serialize_pem());
        let other_key = write(&dir, "other.pem", &other.key_pair.serialize_pem());
        let junk = write(
            &dir,
            "junk.pem",
            "-----BEGIN PRIVATE KEY-----\nsecret material\n",
        );
        let empty = write(&dir, "empty.pem", "");
        let files = |cert: &Path, key: &Path, client_ca: Option<&Path>| TlsFiles {
            cert: cert.to_owned(),
            key: key.to_owned(),
            client_ca: client_ca.map(Path::to_owned),
            client_names: None,
            client_crl: None,
        };

        let tls = Tls::load(files(&cert, &key, None)).unwrap();
        assert!(!tls.requires_client_cert());
        assert!(Tls::load(files(&cert, &key, Some(&cert)))
            .unwrap()
            .requires_client_cert());

        for (f, needle) in [
            (files(&dir.join("missing.pem"), &key, None), "missing.pem"),
            (files(&empty, &key, None), "no CERTIFICATE"),
            (files(&cert, &junk, None), "no PEM private key"),
            (files(&cert, &empty, None), "no PEM private key"),
            // A key that is not the certificate's.
            (files(&cert, &other_key, None), "--tls-key"),
            // An empty CA file cannot make a verifier: no silent fallback to no client auth.
            (files(&cert, &key, Some(&empty)), "--tls-client-ca"),
        ] {
            let err = Tls::load(f).err().expect("must fail");
            assert!(err.contains(needle), "{err:?} lacks {needle:?}");
            assert!(!err.contains("secret material"), "{err:?}");
        }

        // A failed reload keeps the configuration in use.
        std::fs::write(&key, "garbage").unwrap();
        assert!(tls.reload().is_err());
        let _still_usable = tls.acceptor();
        std::fs::write(&key, ca.key_pair.serialize_pem()).unwrap();
        tls.reload().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An X.509 v1 certificate (no version field, no extensions: what `openssl x509 -req`
    /// makes without an extensions file) for `cn`. Its signature is not a real one: the
    /// verifier refuses the certificate while parsing it, before any signature is checked.
    fn v1_certificate(cn: &str) -> CertificateDer<'static> {
        use yasna::models::ObjectIdentifier;
        let key = rcgen::KeyPair::generate().unwrap();
        let ecdsa_sha256 = ObjectIdentifier::from_slice(&[1, 2, 840, 10045, 4, 3, 2]);
        let name = |w: yasna::DERWriter, cn: &str| {
            w.write_sequence(|w| {
                w.next().write_set(|w| {
                    w.next().write_sequence(|w| {
                        w.next()
                            .write_oid(&ObjectIdentifier::from_slice(&[2, 5, 4, 3]));
                        w.next().write_utf8_string(cn);
                    })
                })
            })
        };
        let der = yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next().write_sequence(|w| {
                    w.next().write_u64(1);
                    w.next()
                        .write_sequence(|w| w.next().write_oid(&ecdsa_sha256));
                    name(w.next(), "client CA");
                    w.next().write_sequence(|w| {
                        w.next().write_der(b"\x17\x0d260101000000Z");
                        w.next().write_der(b"\x17\x0d360101000000Z");
                    });
                    name(w.next(), cn);
                    w.next().write_der(&key.public_key_der());
                });
                w.next()
                    .write_sequence(|w| w.next().write_oid(&ecdsa_sha256));
                w.next().write_bitvec_bytes(&[0u8; 64], 512);
            })
        });
        CertificateDer::from(der)
    }

    #[test]
    fn a_refused_v1_client_certificate_is_logged_with_its_reason_and_subject() {
        let (log, _guard) = crate::log_capture::CapturedLog::start();

        let ca = rcgen::generate_simple_self_signed(vec!["client-ca.example".into()]).unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(ca.cert.der().clone()).unwrap();
        let verifier = NamedClients {
            inner: WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                Arc::new(default_provider()),
            )
            .build()
            .unwrap(),
            names: None,
            refusal_log: EverySecond::default(),
        };
        let refused = verifier.verify_client_cert(&v1_certificate("gw-v1"), &[], UnixTime::now());
        assert!(refused.is_err());
        let text = log.text();
        assert!(
            text.contains("client certificate refused at the TLS handshake")
                && text.contains("an X.509 v1 certificate: client certificates must be X.509 v3")
                && text.contains("gw-v1"),
            "{text}"
        );
    }
}
