//! Where the daemon listens: a TCP address or a unix socket, bound and
//! turned into a stream of connections for tonic.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::net::{TcpListener, UnixListener};

/// A listen address from the config: `host:port` or `unix:///path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    Tcp(String),
    Unix(PathBuf),
}

/// A listen address that is neither `host:port` nor `unix:///path`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadListenAddr(pub String);

impl ListenAddr {
    pub fn parse(s: &str) -> Result<ListenAddr, BadListenAddr> {
        let s = s.trim();
        let bad = |m: String| Err(BadListenAddr(m));
        if let Some(path) = s.strip_prefix("unix://") {
            if path.is_empty() {
                return bad(format!("{s:?}: unix socket path is empty"));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        if s.contains("://") {
            return bad(format!("{s:?}: use host:port or unix:///path"));
        }
        if !s.contains(':') {
            return bad(format!("{s:?}: missing :port"));
        }
        Ok(ListenAddr::Tcp(s.to_string()))
    }
}

/// A bound listener.
pub enum Bound {
    Tcp(TcpListener, SocketAddr),
    Unix(UnixListener, PathBuf),
}

impl Bound {
    /// Binds `addr`. A stale unix socket file is replaced; a unix socket is
    /// made mode 0660.
    pub async fn bind(addr: &ListenAddr) -> std::io::Result<Bound> {
        match addr {
            ListenAddr::Tcp(a) => {
                let l = TcpListener::bind(a).await?;
                let local = l.local_addr()?;
                Ok(Bound::Tcp(l, local))
            }
            ListenAddr::Unix(p) => {
                if p.exists() {
                    std::fs::remove_file(p)?;
                }
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let l = UnixListener::bind(p)?;
                // Owner and group only (connecting needs write permission).
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o660))?;
                Ok(Bound::Unix(l, p.clone()))
            }
        }
    }

    /// The TCP address bound (`None` for a unix socket).
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        match self {
            Bound::Tcp(_, a) => Some(*a),
            Bound::Unix(..) => None,
        }
    }

    /// The address clients connect to: `http://ip:port` or `unix:///path`.
    pub fn client_address(&self) -> String {
        match self {
            Bound::Tcp(_, a) => format!("http://{a}"),
            Bound::Unix(_, p) => format!("unix://{}", p.display()),
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.client_address())
    }
}
