//! TLS for the HTTP status listener (`daemon.status_listen`); the gRPC
//! listener uses tonic's own TLS with the same certificate and key.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tracing::debug;

/// Why the TLS certificate or key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("daemon.tls_cert: {0}")]
    Cert(String),
    #[error("daemon.tls_key: {0}")]
    Key(String),
    #[error("daemon.tls_cert / daemon.tls_key: {0}")]
    Pair(String),
}

/// A rustls server config from a PEM certificate chain and key.
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>, TlsConfigError> {
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsConfigError::Cert(e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsConfigError::Cert("no certificate in the file".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsConfigError::Key(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsConfigError::Pair(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsConfigError::Pair(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// TLS handshakes in flight at once; a connection beyond them is closed.
const MAX_HANDSHAKES: usize = 64;

/// A TCP listener whose connections are TLS, for `axum::serve`. Each
/// handshake runs in its own task with a timeout (`daemon.handshake_timeout`), so idle or
/// slow clients never hold up the others (at most [`MAX_HANDSHAKES`] at
/// once); finished handshakes are handed to `accept`.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: io::Result<SocketAddr>,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting on `tcp` (inside a tokio runtime).
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>, handshake: Duration) -> TlsListener {
        let local = tcp.local_addr();
        let (done, ready) = mpsc::channel(16);
        let acceptor = TlsAcceptor::from(config);
        let accepting = tokio::spawn(accept_loop(tcp, acceptor, handshake, done));
        TlsListener {
            ready,
            local,
            accepting,
        }
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

async fn accept_loop(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshake: Duration,
    done: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let slots = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let (conn, addr) = match tcp.accept().await {
            Ok(x) => x,
            Err(e) => {
                debug!("status listener accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            debug!(%addr, "status listener: {MAX_HANDSHAKES} TLS handshakes in flight; closed");
            continue;
        };
        let (acceptor, done) = (acceptor.clone(), done.clone());
        tokio::spawn(async move {
            let _slot = slot;
            match tokio::time::timeout(handshake, acceptor.accept(conn)).await {
                Ok(Ok(tls)) => {
                    let _ = done.send((tls, addr)).await;
                }
                Ok(Err(e)) => debug!(%addr, "status listener TLS handshake: {e}"),
                Err(_) => debug!(%addr, "status listener TLS handshake timed out"),
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(x) => x,
            // The accept loop ended (the runtime is stopping): no more.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        match &self.local {
            Ok(a) => Ok(*a),
            Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
        }
    }
}
