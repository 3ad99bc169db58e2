//! A tiny HTTP/1.1 client for the tests (one request per connection, `Connection: close`), so
//! that tests control the socket exactly (e.g. to disconnect while queued). Loopback only.
#![allow(dead_code)]

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response: status, headers, body, and the HTTP version (this client's is always 1.1; the
/// TLS and HTTP/2 clients of `tls` answer with the same type).
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub version: hyper::Version,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The `{"error": ...}` message.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error field: {}", self.body))
            .to_owned()
    }
}

fn assert_loopback(addr: SocketAddr) {
    assert!(
        addr.ip().is_loopback(),
        "tests only talk to 127.0.0.1, not {addr}"
    );
}

/// Connects and sends a whole request; returns the open stream (drop it to disconnect).
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<TcpStream> {
    assert_loopback(addr);
    let mut stream = TcpStream::connect(addr).await?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await?;
    Ok(stream)
}

/// Reads the whole response from a stream returned by [`send`].
pub async fn receive(mut stream: TcpStream) -> io::Result<Resp> {
    let mut buf = Vec::new();
    stream.read_to_end(&mut buf).await?;
    parse(&buf)
}

/// One request, with a time bound.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Resp> {
    let fut = async { receive(send(addr, method, path, headers, body).await?).await };
    tokio::time::timeout(timeout, fut).await.map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{method} {path}: no answer in {timeout:?}"),
        )
    })?
}

pub async fn get(addr: SocketAddr, path: &str) -> io::Result<Resp> {
    request(addr, "GET", path, &[], b"", Duration::from_secs(10)).await
}

pub async fn post(
    addr: SocketAddr,
    path: &str,
    body: &[u8],
    timeout: Duration,
) -> io::Result<Resp> {
    request(addr, "POST", path, &[], body, timeout).await
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_owned())
}

pub fn parse(buf: &[u8]) -> io::Result<Resp> {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no header end"))?;
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| bad("non-UTF-8 head"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or_else(|| bad("empty response"))?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let raw = &buf[end + 4..];
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked { dechunk(raw)? } else { raw.to_vec() };
    Ok(Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        version: hyper::Version::HTTP_11,
    })
}

fn dechunk(mut raw: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| bad("bad chunk"))?;
        let size_str = std::str::from_utf8(&raw[..eol]).map_err(|_| bad("bad chunk size"))?;
        let size = usize::from_str_radix(size_str.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| bad("bad chunk size"))?;
        raw = &raw[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if raw.len() < size + 2 {
            return Err(bad("short chunk"));
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}
