//! Callers named by their client certificate (`--tls-client-names`).
//!
//! The file maps what a certificate says about its subject to a caller name, one rule a line:
//! `NAME cn:COMMON-NAME`, `NAME dns:DNS-NAME` (a DNS name of the subject alternative names) or
//! `NAME uri:URI` (a URI of them, e.g. a SPIFFE id). A certificate is named by the first rule
//! it matches, compared exactly. When the file is set, a certificate of the client CA that
//! matches no rule is refused at the handshake ([`crate::tls`]); the file is read with the
//! other TLS files, at start and on SIGHUP.
//!
//! The names come from rustls-webpki (already the TLS stack's parser: subject alternative
//! names) and yasna (the subject's common name, a few lines of DER that webpki does not expose).

use std::path::Path;

use tokio_rustls::rustls::pki_types::CertificateDer;

use crate::caller::{check_name, Caller};

/// Which part of the certificate a rule compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    CommonName,
    Dns,
    Uri,
}

#[derive(Clone, Debug)]
struct Rule {
    field: Field,
    value: String,
    caller: Caller,
}

/// The rules of a `--tls-client-names` file.
#[derive(Clone, Debug)]
pub struct ClientNames {
    rules: Vec<Rule>,
}

/// What a certificate says about its subject.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub common_names: Vec<String>,
    pub dns: Vec<String>,
    pub uris: Vec<String>,
}

impl ClientNames {
    /// Reads the file; the error names the file and the line.
    pub fn load(path: &Path) -> Result<Self, String> {
        const FLAG: &str = "--tls-client-names";
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{FLAG} {}: cannot read: {e}", path.display()))?;
        let mut rules = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |what: String| format!("{FLAG} {} line {}: {what}", path.display(), i + 1);
            let Some((name, rule)) = line.split_once(char::is_whitespace) else {
                return Err(at("expected NAME cn:|dns:|uri:VALUE".into()));
            };
            let caller = check_name(name).map_err(at)?;
            let rule = rule.trim();
            let (field, value) = if let Some(v) = rule.strip_prefix("cn:") {
                (Field::CommonName, v)
            } else if let Some(v) = rule.strip_prefix("dns:") {
                (Field::Dns, v)
            } else if let Some(v) = rule.strip_prefix("uri:") {
                (Field::Uri, v)
            } else {
                return Err(at("the rule must start with cn:, dns: or uri:".into()));
            };
            if value.is_empty() {
                return Err(at("empty value".into()));
            }
            rules.push(Rule {
                field,
                value: value.to_owned(),
                caller,
            });
        }
        if rules.is_empty() {
            return Err(format!("{FLAG} {}: no rule in the file", path.display()));
        }
        Ok(ClientNames { rules })
    }

    /// The caller a certificate names, if a rule matches it.
    pub fn name_of(&self, cert: &CertificateDer<'_>) -> Option<Caller> {
        let subject = subject(cert)?;
        self.rules.iter().find_map(|rule| {
            let values = match rule.field {
                Field::CommonName => &subject.common_names,
                Field::Dns => &subject.dns,
                Field::Uri => &subject.uris,
            };
            values.contains(&rule.value).then(|| rule.caller.clone())
        })
    }

    /// Every caller the rules name.
    pub fn callers(&self) -> Vec<Caller> {
        let mut names: Vec<Caller> = self.rules.iter().map(|r| r.caller.clone()).collect();
        names.sort_by(|a, b| a.name().cmp(b.name()));
        names.dedup();
        names
    }
}

/// The subject's common names and alternative names. For a certificate webpki cannot parse
/// (the handshake's verifier refuses it), such as an X.509 v1 certificate, the common names
/// only, read from the certificate's structure, so that a refusal can say whose it was; `None`
/// if even that fails.
pub fn subject(cert: &CertificateDer<'_>) -> Option<Subject> {
    let Ok(parsed) = webpki::EndEntityCert::try_from(cert) else {
        return Some(Subject {
            common_names: common_names_der(&subject_of_any_version(cert)?),
            ..Subject::default()
        });
    };
    Some(Subject {
        common_names: common_names(parsed.subject()),
        dns: parsed.valid_dns_names().map(str::to_owned).collect(),
        uris: parsed.valid_uri_names().map(str::to_owned).collect(),
    })
}

/// The subject `Name` (DER) of an X.509 certificate of any version, without checking anything
/// else: `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL,
/// serialNumber, signature, issuer, validity, subject, ... }, ... }`.
fn subject_of_any_version(cert: &[u8]) -> Option<Vec<u8>> {
    let skip_rest = |r: &mut yasna::BERReaderSeq| -> yasna::ASN1Result<()> {
        while r.read_optional(|r| r.read_der())?.is_some() {}
        Ok(())
    };
    yasna::parse_der(cert, |r| {
        r.read_sequence(|r| {
            let subject = r.next().read_sequence(|r| {
                // [0] version (absent in v1) or serialNumber; then up to validity.
                let first = r.next();
                let versioned = first.lookahead_tag()? == yasna::Tag::context(0);
                first.read_der()?;
                for _ in 0..if versioned { 4 } else { 3 } {
                    r.next().read_der()?;
                }
                let subject = r.next().read_der()?;
                skip_rest(r)?;
                Ok(subject)
            })?;
            skip_rest(r)?;
            Ok(subject)
        })
    })
    .ok()
}

/// The `CN` values of an X.501 name, given as webpki hands it (the `RDNSequence`'s content,
/// without its outer tag): `SEQUENCE OF SET OF SEQUENCE { type OID, value ANY }`.
fn common_names(name: &[u8]) -> Vec<String> {
    let mut der = Vec::with_capacity(name.len() + 4);
    der.push(0x30);
    match name.len() {
        n @ 0..=0x7f => der.push(n as u8),
        n @ 0x80..=0xff => der.extend([0x81, n as u8]),
        n @ 0x100..=0xffff => der.extend([0x82, (n >> 8) as u8, n as u8]),
        _ => return Vec::new(),
    }
    der.extend_from_slice(name);
    common_names_der(&der)
}

/// The `CN` values of an X.501 name in DER.
fn common_names_der(der: &[u8]) -> Vec<String> {
    const CN: &[u64] = &[2, 5, 4, 3];
    let mut names = Vec::new();
    let parsed = yasna::parse_der(der, |r| {
        r.read_sequence_of(|r| {
            r.read_set_of(|r| {
                r.read_sequence(|r| {
                    let oid = r.next().read_oid()?;
                    let value = r.next().read_tagged_der()?;
                    if oid.components().as_slice() == CN {
                        if let Ok(text) = std::str::from_utf8(value.value()) {
                            names.push(text.to_owned());
                        }
                    }
                    Ok(())
                })
            })
        })
    });
    if parsed.is_err() {
        return Vec::new();
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair, SanType};

    fn cert(cn: &str, dns: &[&str], uri: Option<&str>) -> CertificateDer<'static> {
        let mut params =
            CertificateParams::new(dns.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "Bank A");
        params.distinguished_name.push(DnType::CommonName, cn);
        if let Some(uri) = uri {
            params
                .subject_alt_names
                .push(SanType::URI(uri.try_into().unwrap()));
        }
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    /// A names file in the temporary directory, deleted when dropped.
    struct NamesFile(std::path::PathBuf);

    impl std::ops::Deref for NamesFile {
        type Target = std::path::Path;

        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for NamesFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn file(name: &str, content: &str) -> NamesFile {
        let path =
            std::env::temp_dir().join(format!("enygma-client-names-{name}-{}", std::process::id()));
        std::fs::write(&path, content).unwrap();
        NamesFile(path)
    }

    #[test]
    fn a_certificate_is_named_by_its_common_name_or_alternative_names() {
        let der = cert(
            "gateway.bank-a",
            &["gw.bank-a.example"],
            Some("spiffe://bank-b/gw"),
        );
        let s = subject(&der).unwrap();
        assert_eq!(s.common_names, ["gateway.bank-a"]);
        assert_eq!(s.dns, ["gw.bank-a.example"]);
        assert_eq!(s.uris, ["spiffe://bank-b/gw"]);

        let path = file(
            "ok",
            "# gateways\nbank-a cn:gateway.bank-a\nbank-c dns:gw.bank-c.example\n",
        );
        let names = ClientNames::load(&path).unwrap();
        assert_eq!(names.name_of(&der).unwrap().name(), "bank-a");
        let other = cert("gateway.bank-z", &["gw.bank-z.example"], None);
        assert_eq!(names.name_of(&other), None);
        assert_eq!(
            names
                .name_of(&cert("x", &["gw.bank-c.example"], None))
                .unwrap()
                .name(),
            "bank-c"
        );
        let by_uri = ClientNames::load(&file("uri", "bank-b uri:spiffe://bank-b/gw\n")).unwrap();
        assert_eq!(by_uri.name_of(&der).unwrap().name(), "bank-b");
        assert_eq!(
            names.callers().iter().map(Caller::name).collect::<Vec<_>>(),
            ["bank-a", "bank-c"]
        );
    }

    #[test]
    fn bad_files_name_the_line() {
        for (content, needle) in [
            ("", "no rule"),
            ("bank-a\n", "line 1: expected NAME"),
            ("bank-a subject:x\n", "line 1: the rule must start"),
            ("# c\nanonymous cn:x\n", "line 2: `anonymous`"),
            ("bank-a cn:\n", "empty value"),
        ] {
            let err = ClientNames::load(&file("bad", content)).unwrap_err();
            assert!(err.contains(needle), "{content:?}: {err}");
        }
    }
}
