//! The flags of transport and access control: TLS, bearer tokens, connection-level limits.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use enygma_formats::duration::parse_duration;

use super::headings::*;

/// TLS, mTLS, bearer tokens and the connection-level limits.
#[derive(Clone, Debug, clap::Args)]
pub struct AccessArgs {
    /// Serve HTTPS with this certificate chain (PEM, leaf first). Reloaded with the key on
    /// SIGHUP without dropping connections.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_CERT",
        requires = "tls_key",
        value_name = "FILE"
    )]
    pub tls_cert: Option<PathBuf>,

    /// Private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_KEY",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub tls_key: Option<PathBuf>,

    /// Require a client certificate signed by one of these CAs (PEM); other clients are refused
    /// during the TLS handshake (mTLS). Needs --tls-cert. Reloaded on SIGHUP.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_CLIENT_CA",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub tls_client_ca: Option<PathBuf>,

    /// Name the callers by their client certificate: one rule a line, `NAME cn:COMMON-NAME`,
    /// `NAME dns:DNS-NAME` or `NAME uri:URI` (subject alternative names); a certificate of the
    /// client CA that no rule names is refused at the handshake. Needs --tls-client-ca.
    /// Reloaded on SIGHUP.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_TLS_CLIENT_NAMES",
        requires = "tls_client_ca",
        value_name = "FILE"
    )]
    pub tls_client_names: Option<PathBuf>,

    /// Refuse client certificates that these certificate revocation lists (PEM, from the
    /// client CA) revoke, at the handshake; on SIGHUP the lists are read again and the open
    /// connections of the certificates they now revoke are closed. Needs --tls-client-ca.
    #[arg(
        help_heading = H_LISTEN,
        long,
        env = "ENYGMA_CLIENT_CRL",
        requires = "tls_client_ca",
        value_name = "FILE"
    )]
    pub client_crl: Option<PathBuf>,

    /// Require `Authorization: Bearer <token>` with one of these tokens on every route but
    /// /healthcheck, /livez, /readyz and /metrics. One caller a line: `NAME TOKEN`, `NAME
    /// sha256:HEX` (the token's SHA-256 digest) or a bare `TOKEN` (an anonymous caller); blank
    /// lines and lines starting with # are skipped; a token has at least 16 characters of
    /// [A-Za-z0-9-._~+/=], a name 1 to 64 of [A-Za-z0-9._-]. Reloaded on SIGHUP (the whole
    /// file is checked before it replaces the previous tokens).
    #[arg(help_heading = H_CALLERS, long, env = "ENYGMA_AUTH_TOKEN_FILE", value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,

    /// Require a bearer token from this file (same format) on /metrics [default: /metrics open].
    #[arg(help_heading = H_CALLERS, long, env = "ENYGMA_METRICS_TOKEN_FILE", value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,

    /// A connection must complete its TLS handshake and send a complete request head within
    /// this time of opening or of its previous response, else it is closed (HTTP/2: when no
    /// stream is open for this long).
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,

    /// A request body must arrive completely within this time of its head, else 408 and the
    /// connection is closed (before the request takes a queue place).
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_BODY_READ_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub body_read_timeout: Duration,

    /// Most client connections open at once; further clients wait in the kernel's accept
    /// backlog until one closes.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_CONNECTIONS", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Largest request head (request line and headers; HTTP/2: the header list) in bytes, at
    /// least 8192 (hyper's smallest read buffer); larger heads get 431 (HTTP/1.1) or a stream
    /// reset (HTTP/2).
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_HEADER_BYTES", default_value_t = 16 * 1024,
          value_parser = clap::value_parser!(u32).range(8192..=1024 * 1024))]
    pub max_header_bytes: u32,

    /// Most concurrent HTTP/2 streams (requests) per connection.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_HTTP2_MAX_STREAMS", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub http2_max_streams: u32,

    // Connection hardening: who may hold a connection, and for how long (`crate::transport`).
    /// Most connections from one client address at once; more are closed right after accept.
    /// The default leaves room for the reference's stress test (100 concurrent requests from one
    /// client) while one address alone holds at most an eighth of the default --max-connections.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_CONNECTIONS_PER_IP", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_ip: u32,

    /// Most connections on which no request has passed authentication yet (a valid bearer
    /// token; with mTLS, the client certificate at the handshake; without tokens, any request
    /// but a probe), at most --max-connections - 1; past it a newcomer takes the place of the
    /// oldest such connection without a request in progress (closed at once), so that they
    /// never hold the slots of those that authenticated nor keep a newcomer out [default: half
    /// of --max-connections].
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_UNAUTHENTICATED_CONNECTIONS",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_unauthenticated_connections: Option<u32>,

    /// A TLS handshake must finish within this time of connecting (at most
    /// --header-read-timeout), else the connection is closed.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_TLS_HANDSHAKE_TIMEOUT", default_value = "5s",
          value_parser = parse_nonzero_duration)]
    pub tls_handshake_timeout: Duration,

    /// A connection older than this is closed gracefully: the response in progress gets
    /// `Connection: close` (HTTP/2: GOAWAY, the streams in progress finish). Clients reconnect
    /// and are checked again, so a revoked client certificate or token stops within this time.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_MAX_CONNECTION_AGE", default_value = "10m",
          value_parser = parse_nonzero_duration)]
    pub max_connection_age: Duration,

    /// A connection on which no request has authenticated within this time of its accept (a
    /// valid bearer token; with mTLS, the client certificate at the handshake; without tokens,
    /// any request but a probe) is closed, whatever it does meanwhile.
    #[arg(help_heading = H_ADV, long, env = "ENYGMA_UNAUTHENTICATED_TIMEOUT", default_value = "10s",
          value_parser = parse_nonzero_duration)]
    pub unauthenticated_timeout: Duration,

    /// Proxies (addresses or networks, comma-separated: `10.0.0.0/8,192.168.1.10`) whose
    /// connections start with a PROXY protocol header (v1 or v2, e.g. HAProxy's `send-proxy-v2`):
    /// the client address it names counts for --max-connections-per-ip, the failed
    /// authentications and the logs. A connection from them without a valid header is closed;
    /// other clients' connections are read as they are [default: none].
    #[arg(help_heading = H_LISTEN, long, env = "ENYGMA_PROXY_PROTOCOL_FROM", value_name = "CIDR",
          value_delimiter = ',', value_parser = parse_network)]
    pub proxy_protocol_from: Vec<ipnet::IpNet>,

    /// Start even when the TLS private key or a token file is readable by group or others, or
    /// a proving key is writable by them (a warning instead of a refusal): for the setups whose
    /// files cannot be owner-only, e.g. a Kubernetes Secret volume mounted with `fsGroup`.
    #[arg(help_heading = H_KEYS, long, env = "ENYGMA_ALLOW_SHARED_SECRET_FILES")]
    pub allow_shared_secret_files: bool,
}

/// `--proxy-protocol-from`: a network (`10.0.0.0/8`) or one address.
fn parse_network(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("expected an address or a network (10.0.0.0/8, ::1): {s:?}"))
}

/// A duration flag that must be more than zero.
fn parse_nonzero_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("duration {s:?} must be more than zero")),
        d => Ok(d),
    }
}

impl AccessArgs {
    /// The connection-level limits.
    pub fn limits(&self) -> crate::transport::Limits {
        crate::transport::Limits {
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            max_connections: self.max_connections as usize,
            max_header_bytes: self.max_header_bytes as usize,
            http2_max_streams: self.http2_max_streams,
            // At most all but one of the connections: a newcomer needs a free slot to be
            // accepted into before it can take an unauthenticated connection's place.
            max_unauthenticated: self
                .max_unauthenticated_connections
                .map_or(self.max_connections.div_ceil(2), |n| {
                    n.min(self.max_connections.saturating_sub(1)).max(1)
                }) as usize,
            max_connections_per_ip: self.max_connections_per_ip as usize,
            tls_handshake_timeout: self.tls_handshake_timeout,
            max_connection_age: self.max_connection_age,
            unauthenticated_timeout: self.unauthenticated_timeout,
            trusted_proxies: self.proxy_protocol_from.clone(),
            early_answer_drain_bytes: crate::transport::Limits::default().early_answer_drain_bytes,
        }
    }

    /// The TLS files, if TLS is on.
    pub fn tls_files(&self) -> Option<crate::tls::TlsFiles> {
        Some(crate::tls::TlsFiles {
            cert: self.tls_cert.clone()?,
            key: self.tls_key.clone()?,
            client_ca: self.tls_client_ca.clone(),
            client_names: self.tls_client_names.clone(),
            client_crl: self.client_crl.clone(),
        })
    }

    /// The secret files configured, with the flag that names each (checked by
    /// [`crate::file_modes`] before the server starts).
    pub fn secret_files(&self) -> Vec<(&'static str, PathBuf, crate::file_modes::FileKind)> {
        use crate::file_modes::FileKind::Secret;
        [
            ("--tls-key", &self.tls_key),
            ("--auth-token-file", &self.auth_token_file),
            ("--metrics-token-file", &self.metrics_token_file),
        ]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path.clone()?, Secret)))
        .collect()
    }

    /// What an operator must hear at start (once, at WARN, one line per missing protection):
    /// the API served beyond loopback without TLS, or without bearer tokens or client
    /// certificates, and what anyone on the network can then do. The default stays open for
    /// drop-in compatibility with the reference, so these are warnings, not refusals.
    pub fn exposure_warnings(&self, bind: IpAddr) -> Vec<&'static str> {
        let mut warnings = Vec::new();
        if bind.is_loopback() {
            return warnings;
        }
        if self.tls_cert.is_none() {
            warnings.push(
                "INSECURE: the API is served on a non-loopback address without TLS: anyone on \
                 the network path can read the secret keys, balances and blinding values of \
                 every proving request, and read or alter the answers (set --tls-cert and \
                 --tls-key)",
            );
        }
        if self.auth_token_file.is_none() && self.tls_client_ca.is_none() {
            warnings.push(
                "INSECURE: the API is served on a non-loopback address without bearer tokens \
                 or client certificates: anyone who can reach the port can make the service \
                 prove, fill its queue so that the real callers get 503, and read /metrics \
                 (set --auth-token-file or --tls-client-ca)",
            );
        }
        warnings
    }
}
