pub mod http;
pub mod tls;
