//! TLS fixtures for the tests: CAs and certificates made with rcgen in the test (no key is ever
//! committed), rustls client configurations, and HTTP/1.1 and HTTP/2 clients (hyper) over TLS
//! or plain TCP. Loopback only.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::crypto::ring::default_provider;
use tokio_rustls::rustls::pki_types::{
    CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName,
};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

pub use super::http::Resp;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Bound on every connect and request of these clients.
const T: Duration = Duration::from_secs(20);

/// A certificate authority.
pub struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

/// A certificate and its private key.
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
    /// Its serial number, for a revocation list.
    serial: rcgen::SerialNumber,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A certificate revocation list of this CA revoking `revoked` (PEM).
    pub fn crl(&self, revoked: &[&Issued]) -> String {
        let params = rcgen::CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2026, 1, 1),
            next_update: rcgen::date_time_ymd(2100, 1, 1),
            crl_number: rcgen::SerialNumber::from(rand::random::<u64>() >> 1),
            issuing_distribution_point: None,
            revoked_certs: revoked
                .iter()
                .map(|issued| rcgen::RevokedCertParams {
                    serial_number: issued.serial.clone(),
                    revocation_time: rcgen::date_time_ymd(2026, 1, 2),
                    reason_code: Some(rcgen::RevocationReason::KeyCompromise),
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        params
            .signed_by(&self.cert, &self.key)
            .unwrap()
            .pem()
            .unwrap()
    }

    /// The server certificate for `localhost` and 127.0.0.1.
    pub fn server(&self) -> Issued {
        self.issue(
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client certificate.
    pub fn client(&self, name: &str) -> Issued {
        self.issue(vec![name.into()], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, names: Vec<String>, usage: ExtendedKeyUsagePurpose) -> Issued {
        let mut params = CertificateParams::new(names).unwrap();
        params.is_ca = IsCa::NoCa;
        params.extended_key_usages = vec![usage];
        let serial = rcgen::SerialNumber::from(rand::random::<u64>() >> 1);
        params.serial_number = Some(serial.clone());
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        Issued {
            serial,
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().to_vec(),
            key_der: key.serialize_der(),
        }
    }
}

impl Issued {
    /// Writes `<prefix>.crt` and `<prefix>.key` into `dir`; returns their paths.
    pub fn write(&self, dir: &Path, prefix: &str) -> (PathBuf, PathBuf) {
        let cert = dir.join(format!("{prefix}.crt"));
        let key = dir.join(format!("{prefix}.key"));
        std::fs::write(&cert, &self.cert_pem).unwrap();
        std::fs::write(&key, &self.key_pem).unwrap();
        // Owner-only, as the server requires of a private key.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        (cert, key)
    }
}

/// A fresh directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("enygma-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A client that trusts `roots`, presents `cert` if given, and offers `alpn`.
pub fn client_config(roots: &[&Ca], cert: Option<&Issued>, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut store = RootCertStore::empty();
    for ca in roots {
        store
            .add(CertificateDer::from(ca.cert.der().to_vec()))
            .unwrap();
    }
    let builder = ClientConfig::builder_with_provider(Arc::new(default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store);
    let mut config = match cert {
        Some(c) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from(c.cert_der.clone())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(c.key_der.clone())),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A TLS connection to `addr` as `localhost`.
pub async fn connect(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> Result<TlsStream<TcpStream>, Error> {
    assert!(addr.ip().is_loopback(), "tests only talk to 127.0.0.1");
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost")?;
    let stream = tokio::time::timeout(T, TlsConnector::from(config).connect(name, tcp)).await??;
    Ok(stream)
}

fn request(
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> hyper::Request<Full<Bytes>> {
    let mut req = hyper::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if method == "POST" {
        req = req.header("content-type", "application/json");
    }
    req.body(Full::new(Bytes::copy_from_slice(body))).unwrap()
}

async fn collect(resp: hyper::Response<hyper::body::Incoming>) -> Result<Resp, Error> {
    let status = resp.status().as_u16();
    let version = resp.version();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok(Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        version,
    })
}

/// A keep-alive HTTP/1.1 connection.
pub struct H1 {
    sender: http1::SendRequest<Full<Bytes>>,
}

impl H1 {
    /// Over TLS.
    pub async fn tls(addr: SocketAddr, config: Arc<ClientConfig>) -> Result<H1, Error> {
        Self::over(connect(addr, config).await?).await
    }

    /// In plain text.
    pub async fn plain(addr: SocketAddr) -> Result<H1, Error> {
        assert!(addr.ip().is_loopback(), "tests only talk to 127.0.0.1");
        Self::over(TcpStream::connect(addr).await?).await
    }

    pub async fn over<S>(io: S) -> Result<H1, Error>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) = http1::handshake(TokioIo::new(io)).await?;
        tokio::spawn(conn);
        Ok(H1 { sender })
    }

    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Resp, Error> {
        let mut all = vec![("host", "localhost")];
        all.extend_from_slice(headers);
        let fut = async {
            self.sender.ready().await?;
            let resp = self
                .sender
                .send_request(request(method, path, &all, body))
                .await?;
            collect(resp).await
        };
        tokio::time::timeout(T, fut).await?
    }
}

/// An HTTP/2 connection; its clones send streams on the same connection.
#[derive(Clone)]
pub struct H2 {
    sender: http2::SendRequest<Full<Bytes>>,
    scheme: &'static str,
}

impl H2 {
    /// Over TLS (the config must offer ALPN `h2`).
    pub async fn tls(addr: SocketAddr, config: Arc<ClientConfig>) -> Result<H2, Error> {
        Self::over(connect(addr, config).await?, "https").await
    }

    /// In plain text with prior knowledge (h2c).
    pub async fn plain(addr: SocketAddr) -> Result<H2, Error> {
        assert!(addr.ip().is_loopback(), "tests only talk to 127.0.0.1");
        Self::over(TcpStream::connect(addr).await?, "http").await
    }

    /// In plain text with prior knowledge (h2c) over a connection already made.
    pub async fn plain_over(tcp: TcpStream) -> Result<H2, Error> {
        Self::over(tcp, "http").await
    }

    async fn over<S>(io: S, scheme: &'static str) -> Result<H2, Error>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await?;
        tokio::spawn(conn);
        Ok(H2 { sender, scheme })
    }

    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Resp, Error> {
        let uri = format!("{}://localhost{path}", self.scheme);
        let fut = async {
            self.sender.ready().await?;
            let resp = self
                .sender
                .send_request(request(method, &uri, headers, body))
                .await?;
            collect(resp).await
        };
        tokio::time::timeout(T, fut).await?
    }
}
