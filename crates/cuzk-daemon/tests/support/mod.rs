//! The real `cuzk-daemon` binary on fixtures made locally, for tests of its
//! journal: start it (optionally with extra config, or with its file
//! writes capped to simulate a full disk), stop it, await its jobs, check
//! their proofs with filecoin-proofs' verifiers, and write journals
//! directly.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cuzk_core::journal::{Entry, EntryState, Journal};
use cuzk_core::{ProofKind, RawRequest};
use cuzk_fixtures::Fixtures;
use cuzk_proto::v1::{
    await_proof_response::Status, AwaitProofRequest, AwaitProofResponse, GetMetricsRequest,
    GetStatusRequest, GetStatusResponse,
};
pub use cuzk_server::Client;

/// How a daemon is started.
#[derive(Default)]
pub struct StartOptions {
    /// TOML appended to the config (its own sections).
    pub extra_config: String,
    /// Caps the size of every file the daemon writes (RLIMIT_FSIZE, with
    /// SIGXFSZ ignored: writes past it fail with EFBIG), as a full disk
    /// would. Its log then goes to a pipe ([`Started::log`]).
    pub file_size_limit: Option<u64>,
}

/// A started daemon, killed when dropped (a failing test leaves no
/// daemon behind).
pub struct Daemon(Child);

impl std::ops::Deref for Daemon {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Daemon {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct Setup {
    pub fixtures: Fixtures,
    pub dir: tempfile::TempDir,
}

impl Setup {
    pub async fn new() -> Setup {
        let d = cuzk_fixtures::default_dir();
        let fixtures = tokio::task::spawn_blocking(move || cuzk_fixtures::ensure(&d, &mut |_| {}))
            .await
            .unwrap()
            .expect("fixtures");
        Setup {
            fixtures,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn sock(&self) -> PathBuf {
        self.dir.path().join("cuzk.sock")
    }

    /// Starts the daemon on this setup's socket and state dir; its log
    /// goes to `log-<n>.txt`.
    pub async fn start(&self, n: u32) -> (Daemon, Client) {
        let mut child = self.spawn(n, &StartOptions::default());
        let c = self
            .connect(n, &mut child)
            .await
            .expect("the daemon serves");
        (child, c)
    }

    /// Starts the daemon with `opts`, without waiting for it to serve.
    pub fn spawn(&self, n: u32, opts: &StartOptions) -> Daemon {
        let config = self.dir.path().join(format!("cuzk-{n}.toml"));
        std::fs::write(
            &config,
            format!(
                "[daemon]\nlisten = \"unix://{}\"\nstate_dir = \"{}\"\nshutdown_grace = \"5s\"\n\
                 [params]\ncache_dir = \"{}\"\n{}",
                self.sock().display(),
                self.state().display(),
                self.fixtures.params_dir().display(),
                opts.extra_config
            ),
        )
        .unwrap();
        let _ = std::fs::remove_file(self.sock());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"));
        cmd.arg("--config").arg(&config).stdin(Stdio::null());
        if let Some(limit) = opts.file_size_limit {
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
            cap_file_size(&mut cmd, limit);
        } else {
            let log = std::fs::File::create(self.log(n)).unwrap();
            cmd.stdout(log.try_clone().unwrap()).stderr(log);
        }
        Daemon(cmd.spawn().expect("start cuzk-daemon"))
    }

    /// Waits until the daemon listens and connects; `None` if it exited
    /// first.
    pub async fn connect(&self, n: u32, child: &mut Child) -> Option<Client> {
        let start = Instant::now();
        let addr = format!("unix://{}", self.sock().display());
        loop {
            if self.sock().exists() {
                if let Ok(c) = cuzk_server::connect(&addr).await {
                    return Some(c);
                }
            }
            if child.try_wait().expect("try_wait").is_some() {
                return None;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "daemon did not serve; log:\n{}",
                self.log_text(n)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn log(&self, n: u32) -> PathBuf {
        self.dir.path().join(format!("log-{n}.txt"))
    }

    pub fn log_text(&self, n: u32) -> String {
        std::fs::read_to_string(self.log(n)).unwrap_or_default()
    }

    /// Journals `jobs` (request id, request, Unix time of submission) as
    /// queued, as a daemon that accepted them and then died would have,
    /// with sequence numbers from 1.
    pub fn journal_queued(&self, jobs: &[(&str, RawRequest, u64)]) {
        let o = Journal::open(&self.state(), Duration::from_secs(3600)).expect("journal");
        for (seq, (id, raw, submitted_unix)) in jobs.iter().enumerate() {
            let raw = with_id(raw.clone(), id);
            let checked = raw
                .validate_without_params(u64::MAX)
                .expect("a valid request");
            let entry = Entry {
                seq: seq as u64 + 1,
                job_id: id.to_string(),
                kind: raw.kind().unwrap(),
                registered_proof: raw.registered_proof,
                priority: checked.priority,
                digest: checked.digest,
                state: EntryState::Queued,
                proof: Vec::new(),
                error: String::new(),
                submitted_unix: *submitted_unix,
                finished_unix: None,
            };
            o.journal.submitted(&entry, &raw).expect("journaled");
        }
    }
}

/// In the child before `exec`: SIGXFSZ ignored (inherited across exec)
/// and every file write capped at `limit` bytes.
fn cap_file_size(cmd: &mut Command, limit: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: limit as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The stderr a started daemon wrote to its pipe, once it has exited.
pub fn piped_log(child: &mut Child) -> String {
    use std::io::Read;
    let mut text = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut text);
    }
    text
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    cuzk_core::journal::unix_now()
}

/// Sends `kill -TERM` and waits for the daemon to exit.
pub fn sigterm(child: &mut Child) {
    let ok = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -TERM failed");
}

pub fn kill9(child: &mut Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

pub async fn status(c: &mut Client) -> GetStatusResponse {
    c.get_status(GetStatusRequest {})
        .await
        .expect("GetStatus")
        .into_inner()
}

pub async fn await_job(c: &mut Client, id: &str) -> AwaitProofResponse {
    c.await_proof(AwaitProofRequest {
        job_id: id.to_string(),
        timeout_ms: 0,
    })
    .await
    .unwrap_or_else(|e| panic!("AwaitProof {id}: {e}"))
    .into_inner()
}

/// Awaits each of `ids`, asserts it completed and keeps its proof.
pub async fn completed<'a>(
    c: &mut Client,
    ids: impl IntoIterator<Item = &'a str>,
    proofs: &mut HashMap<String, Vec<u8>>,
) {
    for id in ids {
        let r = await_job(c, id).await;
        assert_eq!(
            r.status,
            Status::Completed as i32,
            "{id}: {}",
            r.error_message
        );
        proofs.insert(id.to_string(), r.proof);
    }
}

pub async fn metrics(c: &mut Client) -> String {
    c.get_metrics(GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text
}

pub fn with_id(mut r: RawRequest, id: &str) -> RawRequest {
    r.request_id = id.to_string();
    r
}

/// The five jobs of the test: (id, request).
pub fn jobs(f: &Fixtures) -> Vec<(&'static str, RawRequest)> {
    vec![
        ("porep-1000-1", f.request(ProofKind::PoRep).unwrap()),
        ("snap-1000-2", f.request(ProofKind::SnapDeals).unwrap()),
        ("wdpost-1000-p0", f.deadline_request(0, 0).unwrap()),
        ("wdpost-1000-p1", f.deadline_request(0, 1).unwrap()),
        ("winpost-1000", f.request(ProofKind::WinningPost).unwrap()),
    ]
    .into_iter()
    .map(|(id, r)| (id, with_id(r, id)))
    .collect()
}

/// Checks a job's proof with filecoin-proofs' verifiers, independently of
/// the daemon.
pub fn verify(f: &Fixtures, id: &str, proofs: &HashMap<String, Vec<u8>>) -> bool {
    let p = &proofs[id];
    match id {
        "porep-1000-1" => f.verify(ProofKind::PoRep, p).unwrap(),
        "snap-1000-2" => f.verify(ProofKind::SnapDeals, p).unwrap(),
        "winpost-1000" => f.verify(ProofKind::WinningPost, p).unwrap(),
        _ => f
            .verify_deadline(
                0,
                &[
                    proofs["wdpost-1000-p0"].clone(),
                    proofs["wdpost-1000-p1"].clone(),
                ],
            )
            .unwrap(),
    }
}

pub fn counter(text: &str, prefix: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map_or(0, |v| v.trim().parse().unwrap())
}
