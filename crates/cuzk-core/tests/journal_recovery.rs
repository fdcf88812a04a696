//! A journaled engine's edges: the payloads of set-aside journals are
//! queued again past `engine.max_queued_jobs` and leave their directory
//! only once journaled again (or undecodable), and a submit whose journal
//! write outlives the last device in service is refused, staying journaled
//! for the restart.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use cuzk_core::config::EngineConfig;
use cuzk_core::journal::{EntryState, Journal, JournalError, Opened};
use cuzk_core::{AwaitOutcome, JobStatus, Priority, ProofKind, RawRequest, SubmitError};
use support::*;

fn fixtures() -> cuzk_fixtures::Fixtures {
    let dir = cuzk_fixtures::default_dir();
    let f = cuzk_fixtures::ensure(&dir, &mut |_| {}).expect("fixtures");
    cuzk_core::params::init_parameter_cache(&f.params_dir()).expect("parameter cache");
    f
}

fn with_id(mut r: RawRequest, id: &str) -> RawRequest {
    r.request_id = id.into();
    r
}

/// Opens the journal in `dir`, once an engine's threads have let it go.
fn open(dir: &Path) -> Opened {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match Journal::open(dir, Duration::from_secs(3600)) {
            Ok(o) => return o,
            Err(JournalError::Locked(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("the journal: {e}"),
        }
    }
}

/// Polls until `cond` holds (at most 20 s).
fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn salvaged_payloads_pass_the_job_limit_and_leave_once_journaled_or_refused_for_good() {
    let f = fixtures();
    let dir = tempfile::tempdir().unwrap();
    let aside = dir.path().join("payloads.corrupt-1");
    std::fs::create_dir_all(&aside).unwrap();
    let payload = |seq: u64| aside.join(format!("{seq}.req"));
    for (seq, id) in [(1, "wdpost-a"), (2, "wdpost-b")] {
        let raw = with_id(f.request(ProofKind::WindowPost).unwrap(), id);
        std::fs::write(payload(seq), bincode::serialize(&raw).unwrap()).unwrap();
    }
    std::fs::write(payload(3), b"not a request").unwrap();
    // A journal set aside later holds a newer request under wdpost-a: it
    // supersedes the older one salvaged before it.
    let later = dir.path().join("payloads.corrupt-2");
    std::fs::create_dir_all(&later).unwrap();
    let newer = with_id(f.deadline_request(0, 1).unwrap(), "wdpost-a");
    assert_ne!(
        cuzk_core::request::request_digest(&newer),
        cuzk_core::request::request_digest(&with_id(
            f.request(ProofKind::WindowPost).unwrap(),
            "wdpost-a"
        )),
        "another request"
    );
    std::fs::write(later.join("1.req"), bincode::serialize(&newer).unwrap()).unwrap();
    // Decodes, and fails its checks for good: removed.
    let refused = RawRequest {
        request_id: "bad-kind".into(),
        proof_kind: 99,
        ..Default::default()
    };
    std::fs::write(payload(4), bincode::serialize(&refused).unwrap()).unwrap();
    let s = shared();
    // Nothing proves: both salvaged jobs stay unfinished.
    s.synth_gate.close();
    let config = EngineConfig {
        max_queued_jobs: 1.into(),
        critical_workers: 0,
        ..Default::default()
    };
    let opened = open(dir.path());
    assert_eq!(opened.salvage.len(), 5, "{:?}", opened.salvage);
    let e = journaled_engine(&s, config, opened);
    for id in ["wdpost-a", "wdpost-b"] {
        assert!(e.job(id).is_some(), "{id} was not salvaged");
    }
    let job = e.job("wdpost-a").unwrap();
    assert_eq!(
        job.digest,
        cuzk_core::request::request_digest(&newer),
        "the newer request"
    );
    for seq in [1, 2, 3, 4] {
        assert!(!payload(seq).exists(), "payload {seq} is still set aside");
    }
    assert!(!later.exists(), "the later directory, emptied, is removed");
    e.shutdown(Duration::ZERO).await;
    s.synth_gate.open();
    drop(e);
    let o = open(dir.path());
    assert!(o.salvage.is_empty(), "{:?}", o.salvage);
    for id in ["wdpost-a", "wdpost-b"] {
        // The latest row of the id (the superseded one is cancelled).
        let entry = o.entries.iter().rev().find(|x| x.job_id == id);
        assert!(
            entry.is_some_and(|x| x.state == EntryState::Queued),
            "{id} is not journaled again: {entry:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submit_whose_journal_write_outlives_the_last_device_is_refused() {
    let f = fixtures();
    let dir = tempfile::tempdir().unwrap();
    let s = shared();
    let device = FakeDevice::new(&s, "scripted:0");
    let config = EngineConfig {
        critical_workers: 0,
        ..Default::default()
    };
    let e = journaled_engine_on(&s, config, open(dir.path()), vec![device.clone() as _]);
    // SQLite's write lock, held here: the submit's row waits for it (the
    // journal's busy timeout) once its payload is written.
    let blocker = rusqlite::Connection::open(dir.path().join("journal.sqlite")).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let raw = with_id(f.request(ProofKind::WinningPost).unwrap(), "winpost-late");
    let submitter = e.clone();
    let submit = std::thread::spawn(move || submitter.submit(&raw));
    let payloads = dir.path().join("payloads");
    until("the submit's payload is written", || {
        std::fs::read_dir(&payloads)
            .unwrap()
            .flatten()
            .any(|p| p.path().extension().is_some_and(|x| x == "req"))
    });
    // Meanwhile the last device fails under another job.
    device.fail();
    let lost = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    match e
        .await_job(&lost.job_id, Some(Duration::from_secs(20)))
        .await
    {
        Ok(AwaitOutcome::Done(o)) => {
            assert_eq!(o.status, JobStatus::Failed);
            assert!(o.error.contains("no prover device"), "{}", o.error);
        }
        other => panic!("the job on the failing device: {other:?}"),
    }
    blocker.execute_batch("COMMIT").unwrap();
    match submit.join().unwrap() {
        Err(SubmitError::NoDevice(why)) => assert!(why.contains("journaled"), "{why}"),
        other => panic!("queued with no device in service: {other:?}"),
    }
    assert!(e.job("winpost-late").is_none());
    e.shutdown(Duration::ZERO).await;
    drop(e);
    // Unfinished in the journal: the restart with a device proves it.
    let o = open(dir.path());
    let entry = o.entries.iter().find(|x| x.job_id == "winpost-late");
    let entry = entry.expect("journaled");
    assert_eq!(entry.state, EntryState::Queued);
    assert!(o.journal.load_request(entry.seq).is_ok());
}
