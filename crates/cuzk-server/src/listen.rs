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
    /// Binds `addr`. A unix socket path is taken over only from a stale
    /// socket (nothing answers on it): a live one (another daemon's) is
    /// `AddrInUse` and anything that is not a socket is refused, both left
    /// alone. The socket appears at its path already mode 0660.
    pub async fn bind(addr: &ListenAddr) -> std::io::Result<Bound> {
        match addr {
            ListenAddr::Tcp(a) => {
                let l = TcpListener::bind(a).await?;
                let local = l.local_addr()?;
                Ok(Bound::Tcp(l, local))
            }
            ListenAddr::Unix(p) => {
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                clear_stale_socket(p)?;
                // Bound beside its path, made owner and group only
                // (connecting needs write permission), then renamed into
                // place: no moment at the umask's mode.
                let mut side = p.clone().into_os_string();
                side.push(format!(".{}.new", std::process::id()));
                let side = PathBuf::from(side);
                let _ = std::fs::remove_file(&side);
                let l = UnixListener::bind(&side)?;
                use std::os::unix::fs::PermissionsExt as _;
                let placed =
                    std::fs::set_permissions(&side, std::fs::Permissions::from_mode(0o660))
                        .and_then(|()| {
                            clear_stale_socket(p)?;
                            std::fs::rename(&side, p)
                        });
                if let Err(e) = placed {
                    let _ = std::fs::remove_file(&side);
                    return Err(e);
                }
                Ok(Bound::Unix(l, p.clone()))
            }
        }
    }

    /// Removes a unix socket's path (a start that failed after binding
    /// leaves none behind). The path is still this listener's: while it
    /// is bound, connecting succeeds, so no other daemon takes it over.
    pub fn remove_socket(&self) {
        if let Bound::Unix(_, p) = self {
            if let Err(e) = std::fs::remove_file(p) {
                tracing::warn!(socket = %p.display(), "cannot remove the socket: {e}");
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

/// Removes a unix socket at `p` that nothing answers on; a socket that
/// answers is `AddrInUse`, a path that is not a socket `AlreadyExists`.
fn clear_stale_socket(p: &std::path::Path) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::FileTypeExt as _;
    let meta = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(Error::new(
            ErrorKind::AlreadyExists,
            format!(
                "{} exists and is not a socket; it is left alone",
                p.display()
            ),
        ));
    }
    if std::os::unix::net::UnixStream::connect(p).is_ok() {
        return Err(Error::new(
            ErrorKind::AddrInUse,
            format!(
                "{} is served by another process (a running cuzk-daemon?); it is left alone",
                p.display()
            ),
        ));
    }
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.client_address())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_live_socket_and_other_files_are_left_alone_a_stale_one_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cuzk.sock");
        let addr = ListenAddr::Unix(path.clone());
        let first = Bound::bind(&addr).await.expect("first bind");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        // A second daemon: refused, and the first still answers.
        let err = Bound::bind(&addr).await.err().expect("second bind refused");
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse, "{err}");
        std::os::unix::net::UnixStream::connect(&path).expect("the first still answers");
        // The first gone without removing its socket: taken over.
        drop(first);
        let again = Bound::bind(&addr)
            .await
            .expect("a stale socket is replaced");
        drop(again);
        // A regular file at the path is refused and kept.
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "keep me").unwrap();
        let err = Bound::bind(&ListenAddr::Unix(file.clone()))
            .await
            .err()
            .expect("refused");
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        // Nothing left beside the path.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
