//! Access over TLS on 127.0.0.1 with a bearer token (a self-signed
//! certificate made here): a client without the token, or with another
//! one, gets `UNAUTHENTICATED`; one with it proves. The status listener
//! follows the same rule (401 without the token). Listeners off loopback
//! without TLS and a token refuse to start; a unix socket is mode 0660.

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cuzk_core::ProofKind;
use cuzk_proto::v1::{await_proof_response::Status, AwaitProofRequest, GetStatusRequest};
use cuzk_server::{ClientOptions, DaemonError};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;
use tonic::Code;

struct Pki {
    dir: tempfile::TempDir,
    ca_pem: Vec<u8>,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap();
        let pem = cert.cert.pem();
        std::fs::write(dir.path().join("tls.crt"), &pem).unwrap();
        std::fs::write(dir.path().join("tls.key"), cert.signing_key.serialize_pem()).unwrap();
        std::fs::write(dir.path().join("token"), "s3cret-token\n").unwrap();
        Pki {
            ca_pem: pem.into_bytes(),
            dir,
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_and_token_on_loopback() {
    let pki = Pki::new();
    let d = start(|c| {
        c.daemon.tls_cert = Some(pki.path("tls.crt"));
        c.daemon.tls_key = Some(pki.path("tls.key"));
        c.daemon.auth_token_file = Some(pki.path("token"));
        c.daemon.status_listen = "127.0.0.1:0".into();
    })
    .await;
    assert!(d.addr.starts_with("https://127.0.0.1:"), "{}", d.addr);
    let opts = |token: Option<&str>| ClientOptions {
        token: token.map(str::to_string),
        tls_ca: Some(pki.ca_pem.clone()),
    };
    // Without the token, and with another one: UNAUTHENTICATED.
    for token in [None, Some("wrong")] {
        let mut c = cuzk_server::connect_with(&d.addr, &opts(token))
            .await
            .expect("TLS connects");
        let e = c.get_status(GetStatusRequest {}).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{}", e.message());
        assert!(e.message().starts_with("authorization"), "{}", e.message());
        let e = c
            .submit_proof(request(ProofKind::WindowPost))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);
    }
    // Plain text to the TLS port does not get through.
    let plain = d.addr.replacen("https://", "http://", 1);
    let plain_client = cuzk_server::connect_with(
        &plain,
        &ClientOptions {
            token: Some("s3cret-token".into()),
            tls_ca: None,
        },
    )
    .await;
    if let Ok(mut c) = plain_client {
        assert!(c.get_status(GetStatusRequest {}).await.is_err());
    }
    // With the token: it proves, and the proof verifies.
    let mut c = cuzk_server::connect_with(&d.addr, &opts(Some("s3cret-token")))
        .await
        .unwrap();
    let job = c
        .submit_proof(request(ProofKind::WindowPost))
        .await
        .expect("accepted with the token")
        .into_inner()
        .job_id;
    let r = c
        .await_proof(AwaitProofRequest {
            job_id: job,
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status_of(&r), Status::Completed, "{}", r.error_message);
    assert!(fixtures().verify(ProofKind::WindowPost, &r.proof).unwrap());

    // The status listener: HTTPS, 401 without the token, 200 with it.
    let status = d.status_addr.clone().expect("status listener");
    assert!(status.starts_with("https://"), "{status}");
    let host = status.trim_start_matches("https://").to_string();
    let (code, _) = https_get(&host, &pki.ca_pem, None).await;
    assert_eq!(code, 401);
    let (code, body) = https_get(&host, &pki.ca_pem, Some("s3cret-token")).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"uptime_seconds\""), "{body}");
    // Three idle TCP connections (no handshake) do not hold it up.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(tokio::net::TcpStream::connect(&host).await.unwrap());
    }
    let t = std::time::Instant::now();
    let (code, _) = https_get(&host, &pki.ca_pem, Some("s3cret-token")).await;
    assert_eq!(code, 200);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "GET /status beside 3 idle connections took {:?}",
        t.elapsed()
    );
    drop(idle);
    d.stop().await;
}

/// GET /status over TLS; returns (status code, raw response).
async fn https_get(host: &str, ca: &[u8], token: Option<&str>) -> (u16, String) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(host).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector.connect(name, tcp).await.expect("TLS handshake");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(
        format!("GET /status HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    let _ = tls.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

/// Starts a daemon with `tweak`, expecting it to refuse.
async fn refused(tweak: impl FnOnce(&mut cuzk_server::Config)) -> String {
    let f = fixtures();
    let state = tempfile::tempdir().unwrap();
    let mut config = cuzk_server::Config::default();
    config.params.cache_dir = Some(f.params_dir());
    config.daemon.state_dir = Some(state.path().to_path_buf());
    tweak(&mut config);
    match cuzk_server::Daemon::start(config).await {
        Ok(_) => panic!("the daemon must refuse to start"),
        Err(e @ DaemonError::Access(_)) => e.to_string(),
        Err(e) => panic!("refused for another reason: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn non_loopback_listeners_need_tls_and_a_token() {
    let e = refused(|c| c.daemon.listen = "0.0.0.0:0".into()).await;
    for key in [
        "daemon.tls_cert",
        "daemon.tls_key",
        "daemon.auth_token_file",
    ] {
        assert!(e.contains(key), "{e}");
    }
    let e = refused(|c| {
        c.daemon.listen = "127.0.0.1:0".into();
        c.daemon.status_listen = "0.0.0.0:0".into();
    })
    .await;
    assert!(e.starts_with("daemon.status_listen"), "{e}");
    // insecure_remote on purpose: it starts.
    let d = start(|c| {
        c.daemon.listen = "0.0.0.0:0".into();
        c.daemon.insecure_remote = true;
    })
    .await;
    let port = d.addr.rsplit(':').next().unwrap().to_string();
    let mut c = cuzk_server::connect(&format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    get_status(&mut c).await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_unix_socket_is_owner_and_group_only() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("cuzk.sock");
    let d = start(|c| c.daemon.listen = format!("unix://{}", sock.display())).await;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "{mode:o}");
    let mut c = d.client().await;
    get_status(&mut c).await;
    d.stop().await;
}

/// Reads until the peer closes (or resets) the connection; `None` if it
/// is still open after `within`.
async fn closed_within(conn: &mut tokio::net::TcpStream, within: Duration) -> Option<Duration> {
    let t = std::time::Instant::now();
    let mut buf = [0u8; 64];
    loop {
        match tokio::time::timeout(within.saturating_sub(t.elapsed()), conn.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(t.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stalled_handshakes_are_dropped_and_connections_are_capped() {
    let pki = Pki::new();
    let d = start(|c| {
        c.daemon.tls_cert = Some(pki.path("tls.crt"));
        c.daemon.tls_key = Some(pki.path("tls.key"));
        c.daemon.auth_token_file = Some(pki.path("token"));
        c.daemon.handshake_timeout = Duration::from_secs(2);
        c.daemon.max_connections = 3;
    })
    .await;
    let host = d.addr.trim_start_matches("https://").to_string();
    // A gRPC client that never finishes (here: never starts) its TLS
    // handshake is dropped once the timeout has passed.
    let mut silent = tokio::net::TcpStream::connect(&host).await.unwrap();
    let dropped = closed_within(&mut silent, Duration::from_secs(20))
        .await
        .expect("a stalled handshake is dropped");
    assert!(
        dropped >= Duration::from_millis(1500),
        "dropped after {dropped:?}, before the timeout"
    );
    drop(silent);
    // Three connections open: a fourth is closed at once.
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(tokio::net::TcpStream::connect(&host).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fourth = tokio::net::TcpStream::connect(&host).await.unwrap();
    let closed = closed_within(&mut fourth, Duration::from_millis(1500)).await;
    assert!(
        closed.is_some(),
        "a connection beyond max_connections stays open"
    );
    // The three are dropped at their handshake timeout; then clients
    // connect again.
    drop(open);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let opts = ClientOptions {
        token: Some("s3cret-token".into()),
        tls_ca: Some(pki.ca_pem.clone()),
    };
    let mut c = cuzk_server::connect_with(&d.addr, &opts)
        .await
        .expect("TLS connects");
    c.get_status(GetStatusRequest {}).await.expect("GetStatus");
    d.stop().await;
}
