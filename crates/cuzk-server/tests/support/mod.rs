//! Shared pieces of the gRPC tests: fixtures (made once, cached outside the
//! clone), an in-process daemon on an ephemeral port or a unix socket, and
//! request builders.

#![allow(dead_code)]

use std::sync::OnceLock;
use std::time::Duration;

use cuzk_core::ProofKind;
use cuzk_fixtures::Fixtures;
use cuzk_proto::v1::{
    await_proof_response::Status, AwaitProofRequest, AwaitProofResponse, GetStatusRequest,
    GetStatusResponse, SubmitProofRequest,
};
use cuzk_server::convert::submit_request;
use cuzk_server::Config;
use cuzk_server::Daemon;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The fixture set, generated on first use (about half an hour on 2 cores
/// the very first time; reused afterwards).
pub fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let dir = cuzk_fixtures::default_dir();
        eprintln!("test fixtures in {}", dir.display());
        cuzk_fixtures::ensure(&dir, &mut |p| eprintln!("fixtures: {p:?}"))
            .expect("fixtures could not be made")
    })
}

/// The synthetic 2 KiB set (another sector's inputs under the same sector
/// numbers; it shares the sealed set's parameters).
pub fn synthetic() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        fixtures();
        let spec = cuzk_fixtures::SyntheticSpec::new(cuzk_fixtures::SectorSize::S2KiB);
        cuzk_fixtures::ensure_synthetic(&spec, &mut |p| eprintln!("fixtures: {p:?}"))
            .expect("synthetic fixtures could not be made")
    })
}

/// A daemon running inside the test process.
pub struct TestDaemon {
    pub addr: String,
    /// The daemon's state directory (its job journal), removed on drop.
    pub state: tempfile::TempDir,
    /// `http://ip:port` of GET /status and /metrics, when configured.
    pub status_addr: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), cuzk_server::DaemonError>>>,
}

/// Starts a daemon with one worker on 127.0.0.1:0, after `tweak` edits the config.
pub async fn start(tweak: impl FnOnce(&mut Config)) -> TestDaemon {
    start_on(tweak, None).await
}

/// As [`start`], proving on `backends` when given (else as `[gpus]` says).
pub async fn start_on(
    tweak: impl FnOnce(&mut Config),
    backends: Option<Vec<std::sync::Arc<dyn cuzk_prover::ProverBackend>>>,
) -> TestDaemon {
    let f = fixtures();
    let mut config = Config::default();
    config.daemon.listen = "127.0.0.1:0".into();
    config.daemon.shutdown_grace = Duration::from_secs(120);
    config.params.cache_dir = Some(f.params_dir());
    let state = tempfile::tempdir().expect("state dir");
    config.daemon.state_dir = Some(state.path().to_path_buf());
    tweak(&mut config);
    let daemon = match backends {
        None => Daemon::start(config).await,
        Some(b) => {
            let parts = Daemon::parts(&config, b).expect("engine parts");
            Daemon::start_with(config, parts).await
        }
    }
    .expect("daemon starts");
    let addr = daemon.client_address();
    let status_addr = daemon.status_address();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(daemon.serve(async {
        let _ = rx.await;
    }));
    TestDaemon {
        addr,
        state,
        status_addr,
        stop: Some(tx),
        task: Some(task),
    }
}

impl TestDaemon {
    pub async fn client(&self) -> cuzk_server::Client {
        cuzk_server::connect(&self.addr).await.expect("connect")
    }

    /// Graceful stop; asserts the server ended cleanly.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.expect("server task").expect("server ended cleanly");
        }
    }
}

/// A valid request of `kind` from the fixtures.
pub fn request(kind: ProofKind) -> SubmitProofRequest {
    submit_request(fixtures().request(kind).expect("fixture request"))
}

/// Waits (without a limit) for a job.
pub async fn await_job(c: &mut cuzk_server::Client, job_id: &str) -> AwaitProofResponse {
    c.await_proof(AwaitProofRequest {
        job_id: job_id.to_string(),
        timeout_ms: 0,
    })
    .await
    .expect("AwaitProof")
    .into_inner()
}

pub fn status_of(r: &AwaitProofResponse) -> Status {
    Status::try_from(r.status).expect("known status")
}

pub async fn get_status(c: &mut cuzk_server::Client) -> GetStatusResponse {
    c.get_status(GetStatusRequest {})
        .await
        .expect("GetStatus answers")
        .into_inner()
}

/// A plain HTTP/1.1 GET; returns (status code, body).
pub async fn http_get(base: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(host)
        .await
        .expect("connect to the status endpoint");
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP head and body");
    let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    (
        code,
        if chunked {
            dechunk(body)
        } else {
            body.to_string()
        },
    )
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").expect("chunk size line");
        let n = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
        if n == 0 {
            return out;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
}

/// Polls until `kind` has a job in progress.
pub async fn wait_running(c: &mut cuzk_server::Client, kind: ProofKind) {
    // Generous: a loaded 2-core machine may take a while to start it.
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while std::time::Instant::now() < deadline {
        let s = get_status(c).await;
        if s.queues
            .iter()
            .any(|q| q.proof_kind == kind.as_str() && q.in_progress > 0)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no {kind} job started");
}
