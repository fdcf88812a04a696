//! The daemon binary: config errors, and a graceful stop on SIGTERM / SIGINT
//! that finishes the running job and exits 0.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cuzk_core::ProofKind;
use cuzk_proto::v1::{await_proof_response::Status, AwaitProofRequest, GetStatusRequest};
use cuzk_server::convert::submit_request;

fn daemon(config: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--config")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start cuzk-daemon")
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -{sig} failed");
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            panic!("daemon did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_socket(sock: &Path) {
    let start = Instant::now();
    while !sock.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "daemon did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn write_config(dir: &Path, params: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let sock = dir.join("cuzk.sock");
    let config = dir.join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"unix://{}\"\nshutdown_grace = \"120s\"\n\
             state_dir = \"{}\"\n[params]\ncache_dir = \"{}\"\n",
            sock.display(),
            dir.join("state").display(),
            params.display()
        ),
    )
    .unwrap();
    (config, sock)
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_finishes_the_running_job_and_exits_zero() {
    let dir = cuzk_fixtures::default_dir();
    let fixtures = tokio::task::spawn_blocking(move || cuzk_fixtures::ensure(&dir, &mut |_| {}))
        .await
        .unwrap()
        .expect("fixtures");
    let tmp = tempfile::tempdir().unwrap();
    let (config, sock) = write_config(tmp.path(), &fixtures.params_dir());
    let mut child = daemon(&config);
    wait_socket(&sock);
    let addr = format!("unix://{}", sock.display());
    let mut c = cuzk_server::connect(&addr).await.expect("connect");
    c.get_status(GetStatusRequest {}).await.expect("status");

    let job = c
        .submit_proof(submit_request(
            fixtures.request(ProofKind::WindowPost).unwrap(),
        ))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    // Wait until it runs, then ask the daemon to stop.
    loop {
        let s = c
            .get_status(GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        if s.queues.iter().any(|q| q.in_progress > 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    signal(&child, "TERM");
    let r = c
        .await_proof(AwaitProofRequest {
            job_id: job,
            timeout_ms: 0,
        })
        .await
        .expect("the in-flight await is answered")
        .into_inner();
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert!(fixtures.verify(ProofKind::WindowPost, &r.proof).unwrap());
    let status =
        tokio::task::spawn_blocking(move || wait_exit(&mut child, Duration::from_secs(60)))
            .await
            .unwrap();
    assert!(status.success(), "exit status {status}");
    assert!(!sock.exists(), "socket removed on exit");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_daemon_on_the_same_socket_exits_and_leaves_the_first_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let (config, sock) = write_config(tmp.path(), &tmp.path().join("params"));
    let mut first = daemon(&config);
    wait_socket(&sock);
    let addr = format!("unix://{}", sock.display());
    let mut c = cuzk_server::connect(&addr).await.expect("connect");
    c.get_status(GetStatusRequest {}).await.expect("status");
    // The same config again: it must not take (or remove) the socket.
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg("--config")
            .arg(&config)
            .output()
            .expect("start the second cuzk-daemon")
    })
    .await
    .unwrap();
    assert!(
        !out.status.success(),
        "the second daemon exited {}",
        out.status
    );
    let err = String::from_utf8_lossy(&out.stderr);
    // It stops at the state dir's lock, before binding anything.
    assert!(err.contains("another cuzk-daemon"), "{err}");
    let mut c = cuzk_server::connect(&addr).await.expect("connect again");
    c.get_status(GetStatusRequest {})
        .await
        .expect("the first daemon still answers on its socket");
    // Its own socket and state dir, but a status address that is taken:
    // it binds its socket, fails, exits, and leaves no socket behind.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_sock = tmp.path().join("other.sock");
    let other = tmp.path().join("other.toml");
    let text = std::fs::read_to_string(tmp.path().join("cuzk.toml")).unwrap();
    let text = text
        .replace(
            &sock.display().to_string(),
            &other_sock.display().to_string(),
        )
        .replace(
            &tmp.path().join("state").display().to_string(),
            &tmp.path().join("other-state").display().to_string(),
        )
        .replace(
            "[daemon]\n",
            &format!(
                "[daemon]\nstatus_listen = \"{}\"\n",
                taken.local_addr().unwrap()
            ),
        );
    assert!(
        text.contains("other.sock") && text.contains("status_listen"),
        "{text}"
    );
    std::fs::write(&other, text).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg("--config")
            .arg(&other)
            .output()
            .expect("start the third cuzk-daemon")
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("status"), "{err}");
    assert!(!other_sock.exists(), "a failed start leaves no socket");
    drop(taken);
    signal(&first, "TERM");
    let status =
        tokio::task::spawn_blocking(move || wait_exit(&mut first, Duration::from_secs(60)))
            .await
            .unwrap();
    assert!(status.success(), "exit status {status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_sigterm_during_the_graceful_stop_exits_at_once() {
    let dir = cuzk_fixtures::default_dir();
    let fixtures = tokio::task::spawn_blocking(move || cuzk_fixtures::ensure(&dir, &mut |_| {}))
        .await
        .unwrap()
        .expect("fixtures");
    let tmp = tempfile::tempdir().unwrap();
    let (config, sock) = write_config(tmp.path(), &fixtures.params_dir());
    let mut child = daemon(&config);
    wait_socket(&sock);
    let addr = format!("unix://{}", sock.display());
    let mut c = cuzk_server::connect(&addr).await.expect("connect");
    // A PoRep: tens of seconds of proving on the CPU, far inside the
    // 120 s shutdown_grace the first SIGTERM would wait for.
    c.submit_proof(submit_request(fixtures.request(ProofKind::PoRep).unwrap()))
        .await
        .unwrap();
    loop {
        let s = c
            .get_status(GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        if s.queues.iter().any(|q| q.in_progress > 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    signal(&child, "TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first SIGTERM waits for the job"
    );
    signal(&child, "TERM");
    let status =
        tokio::task::spawn_blocking(move || wait_exit(&mut child, Duration::from_secs(10)))
            .await
            .unwrap();
    assert_eq!(status.code(), Some(1), "exit status {status}");
}

#[test]
fn sigint_on_an_idle_daemon_exits_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let (config, sock) = write_config(tmp.path(), tmp.path());
    let mut child = daemon(&config);
    wait_socket(&sock);
    signal(&child, "INT");
    let status = wait_exit(&mut child, Duration::from_secs(30));
    assert!(status.success(), "exit status {status}");
}

#[test]
fn bad_config_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("bad.toml");
    std::fs::write(&config, "[engine]\nworkers = \"many\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("workers") && err.contains("bad.toml"), "{err}");

    let out = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--config")
        .arg(tmp.path().join("missing.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.toml"));
}

#[test]
fn print_config_shows_the_defaults() {
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--print-config")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("listen = \"127.0.0.1:9820\""), "{text}");
    // The GPU backend's table and its knobs are part of the one file.
    for line in [
        "[gpus]",
        "srs_on_device = \"auto\"",
        "[gpus.tuning]",
        "msm_window_bits = 0",
        "host_copy = \"auto\"",
        "trace_msm = false",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    // The worker counts default to "auto", and what they come to here (the
    // CPU backend: one of each) is said with the reason.
    for line in [
        "partition_workers = \"auto\"",
        "gpu_workers_per_device = \"auto\"",
        "synthesized_queue = \"auto\"",
        "#   engine.partition_workers = 1 (auto)",
        "#   engine.gpu_workers_per_device = 1 (auto)",
        "#   engine.synthesized_queue = 1 (auto)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    assert!(text.contains("CPU backend only"), "{text}");
}

#[test]
fn print_config_says_a_set_count_is_set() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("cuzk.toml");
    std::fs::write(&path, "[engine]\npartition_workers = 3\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--config")
        .arg(&path)
        .arg("--print-config")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == "partition_workers = 3"), "{text}");
    assert!(
        text.lines()
            .any(|l| l == "#   engine.partition_workers = 3 (set)"),
        "{text}"
    );
}
