//! The help headings that group the flags by concern (`--help`).

pub(super) const H_LISTEN: &str = "Listening and TLS";
pub(super) const H_CALLERS: &str = "Callers";
pub(super) const H_ADMISSION: &str = "Admission";
pub(super) const H_IDEMPOTENCY: &str = "Idempotent proving (the Idempotency-Key header)";
pub(super) const H_TABLES: &str = "Tables and threads";
pub(super) const H_KEYS: &str = "Keys";
pub(super) const H_LOG: &str = "Logging";
pub(super) const H_ADV: &str = "Advanced (rarely needed tuning)";
