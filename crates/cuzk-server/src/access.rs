//! Who may talk to the daemon.
//!
//! A listener bound to a loopback address or a unix socket serves as
//! before (Curio's client works unchanged there). A listener bound to any
//! other address (`daemon.listen`, and `daemon.status_listen` alike) refuses
//! to start unless it has TLS (`daemon.tls_cert`, `daemon.tls_key`) and a
//! bearer token (`daemon.auth_token_file`), or `daemon.insecure_remote =
//! true` is set on purpose (a warning at start). TLS and the token apply to
//! every listener once configured, loopback included. Clients send
//! `authorization: Bearer <token>`; a wrong or missing one is
//! `UNAUTHENTICATED`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use cuzk_core::config::DaemonConfig;
use tonic::service::Interceptor;
use tonic::{Request, Status};
use tracing::warn;

/// The TLS identity and token of a daemon, loaded from the config.
#[derive(Clone, Default)]
pub struct Access {
    /// PEM certificate chain and private key.
    pub tls: Option<(Vec<u8>, Vec<u8>)>,
    pub token: Option<Arc<str>>,
}

/// Why access could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(
        "{key} = {addr} is not a loopback address: serving it needs {missing} \
         (TLS and a bearer token), or daemon.insecure_remote = true to serve it \
         in clear text to anyone who can reach it"
    )]
    Exposed {
        key: &'static str,
        addr: String,
        missing: String,
    },
    #[error("{key} {path}: {message}")]
    File {
        key: &'static str,
        path: String,
        message: String,
    },
    #[error("daemon.tls_cert and daemon.tls_key go together; only {0} is set")]
    HalfTls(&'static str),
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, AccessError> {
    std::fs::read(path).map_err(|e| AccessError::File {
        key,
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

impl Access {
    /// Loads the files the config names.
    pub fn load(c: &DaemonConfig) -> Result<Access, AccessError> {
        let tls = match (&c.tls_cert, &c.tls_key) {
            (Some(cert), Some(key)) => {
                Some((read("daemon.tls_cert", cert)?, read("daemon.tls_key", key)?))
            }
            (Some(_), None) => return Err(AccessError::HalfTls("daemon.tls_cert")),
            (None, Some(_)) => return Err(AccessError::HalfTls("daemon.tls_key")),
            (None, None) => None,
        };
        let token = match &c.auth_token_file {
            Some(p) => {
                let text = String::from_utf8(read("daemon.auth_token_file", p)?).map_err(|_| {
                    AccessError::File {
                        key: "daemon.auth_token_file",
                        path: p.display().to_string(),
                        message: "is not UTF-8 text".into(),
                    }
                })?;
                let t = text.trim();
                if t.is_empty() || t.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
                    return Err(AccessError::File {
                        key: "daemon.auth_token_file",
                        path: p.display().to_string(),
                        message: "must hold one token (no spaces), and not be empty".into(),
                    });
                }
                Some(Arc::from(t))
            }
            None => None,
        };
        Ok(Access { tls, token })
    }

    /// Whether a listener bound to `addr` (`None`: a unix socket) may
    /// serve under this config; `key` names its config key.
    pub fn check_exposure(
        &self,
        key: &'static str,
        addr: Option<SocketAddr>,
        c: &DaemonConfig,
    ) -> Result<(), AccessError> {
        let Some(addr) = addr else {
            return Ok(());
        };
        if addr.ip().to_canonical().is_loopback() {
            return Ok(());
        }
        if c.insecure_remote {
            warn!(
                listener = key,
                %addr,
                tls = self.tls.is_some(),
                token = self.token.is_some(),
                "daemon.insecure_remote = true: serving a non-loopback address without \
                 TLS and a token where they are not configured"
            );
            return Ok(());
        }
        let mut missing = Vec::new();
        if c.tls_cert.is_none() {
            missing.push("daemon.tls_cert");
        }
        if c.tls_key.is_none() {
            missing.push("daemon.tls_key");
        }
        if c.auth_token_file.is_none() {
            missing.push("daemon.auth_token_file");
        }
        if missing.is_empty() {
            return Ok(());
        }
        Err(AccessError::Exposed {
            key,
            addr: addr.to_string(),
            missing: missing.join(", "),
        })
    }

    /// The gRPC interceptor that checks the token.
    pub fn interceptor(&self) -> TokenCheck {
        TokenCheck(self.token.clone())
    }
}

/// Compares without an early exit on the first differing byte.
pub fn same_token(got: &[u8], want: &[u8]) -> bool {
    if got.len() != want.len() {
        return false;
    }
    got.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Checks an `authorization` header value against the token; `Err` is the
/// message for the client.
pub fn check_bearer(header: Option<&str>, token: &str) -> Result<(), &'static str> {
    match header.and_then(|h| h.strip_prefix("Bearer ")) {
        Some(t) if same_token(t.trim().as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err("authorization: the bearer token is not this daemon's"),
        None => Err(
            "authorization: missing; send `authorization: Bearer <token>` \
             (the daemon's daemon.auth_token_file)",
        ),
    }
}

/// The gRPC side of the token check (pass-through without a token).
#[derive(Clone)]
pub struct TokenCheck(Option<Arc<str>>);

impl Interceptor for TokenCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.0 else {
            return Ok(req);
        };
        let header = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        check_bearer(header, token).map_err(Status::unauthenticated)?;
        Ok(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(f: impl FnOnce(&mut DaemonConfig)) -> DaemonConfig {
        let mut c = DaemonConfig::default();
        f(&mut c);
        c
    }

    #[test]
    fn loopback_and_unix_need_nothing_other_addresses_need_tls_and_a_token() {
        let a = Access::default();
        let c = config(|_| {});
        for addr in ["127.0.0.1:1", "[::1]:1", "[::ffff:127.0.0.1]:1"] {
            a.check_exposure("daemon.listen", Some(addr.parse().unwrap()), &c)
                .unwrap();
        }
        a.check_exposure("daemon.listen", None, &c).unwrap();
        let e = a
            .check_exposure("daemon.listen", Some("0.0.0.0:9820".parse().unwrap()), &c)
            .unwrap_err()
            .to_string();
        for key in [
            "daemon.tls_cert",
            "daemon.tls_key",
            "daemon.auth_token_file",
        ] {
            assert!(e.contains(key), "{e}");
        }
        let c = config(|c| c.auth_token_file = Some("/t".into()));
        let e = a
            .check_exposure(
                "daemon.status_listen",
                Some("10.0.0.1:1".parse().unwrap()),
                &c,
            )
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("daemon.status_listen = 10.0.0.1:1"), "{e}");
        assert!(!e.contains("auth_token_file"), "{e}");
        let c = config(|c| c.insecure_remote = true);
        a.check_exposure("daemon.listen", Some("0.0.0.0:1".parse().unwrap()), &c)
            .unwrap();
    }

    #[test]
    fn bearer_tokens() {
        assert!(check_bearer(Some("Bearer s3cret"), "s3cret").is_ok());
        assert!(check_bearer(Some("Bearer s3creT"), "s3cret").is_err());
        assert!(check_bearer(Some("Bearer "), "s3cret").is_err());
        assert!(check_bearer(Some("s3cret"), "s3cret").is_err());
        assert!(check_bearer(None, "s3cret")
            .unwrap_err()
            .contains("missing"));
    }
}
