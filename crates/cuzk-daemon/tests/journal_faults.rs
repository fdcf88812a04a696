//! Faults of the journal with the real `cuzk-daemon` binary: one damaged
//! row fails its job alone and the others are proved; a journal the daemon
//! cannot write (every file write refused, as on a full disk) stops the
//! start or is recovered, and is intact afterwards; a payload the disk
//! refuses leaves no file behind and smaller jobs go on; a job recovered
//! past its deadline fails for the deadline; a submit is admitted while
//! another request's journal write is stalled; the daemon serves status
//! and new requests while a journaled job is still being restored.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use cuzk_core::ProofKind;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_server::convert::submit_request;
use support::*;

/// The journal's database and payload files with content (SQLite's
/// empty side files left out): names, lengths and a hash of the bytes.
fn snapshot(state: &Path) -> Vec<(String, usize, u64)> {
    use std::hash::{Hash, Hasher};
    let mut files = Vec::new();
    for dir in [state.to_path_buf(), state.join("payloads")] {
        for f in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(f.path()).unwrap_or_default();
            if (name.starts_with("journal.sqlite") || name.ends_with(".req")) && !bytes.is_empty() {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut h);
                files.push((name, bytes.len(), h.finish()));
            }
        }
    }
    files.sort();
    files
}

/// Files left in the payload directory.
fn payload_names(state: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(state.join("payloads"))
        .unwrap()
        .flatten()
        .map(|f| f.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_row_fails_its_job_alone_and_the_others_are_proved() {
    let s = Setup::new().await;
    let f = &s.fixtures;
    let now = unix_now();
    s.journal_queued(&[
        (
            "winpost-ok",
            f.request(ProofKind::WinningPost).unwrap(),
            now,
        ),
        ("wdpost-bad", f.deadline_request(0, 0).unwrap(), now),
        ("wdpost-ok", f.deadline_request(0, 1).unwrap(), now),
    ]);
    let db = rusqlite::Connection::open(s.state().join("journal.sqlite")).unwrap();
    db.execute(
        "UPDATE jobs SET digest = x'0102' WHERE job_id = 'wdpost-bad'",
        [],
    )
    .unwrap();
    drop(db);

    let (mut child, mut c) = s.start(1).await;
    let mut proofs = HashMap::new();
    completed(&mut c, ["winpost-ok", "wdpost-ok"], &mut proofs).await;
    assert!(f
        .verify(ProofKind::WinningPost, &proofs["winpost-ok"])
        .unwrap());
    let r = await_job(&mut c, "wdpost-bad").await;
    assert_eq!(r.status, Status::Failed as i32);
    assert!(
        r.error_message.contains("journal row 2") && r.error_message.contains("digest"),
        "{}",
        r.error_message
    );
    kill9(&mut child);
    assert!(
        !s.log_text(1).contains("set aside"),
        "one bad row does not set the journal aside"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_journal_the_disk_refuses_stops_the_start_and_stays_intact() {
    let s = Setup::new().await;
    let f = &s.fixtures;
    let now = unix_now();
    s.journal_queued(&[
        ("winpost-1", f.request(ProofKind::WinningPost).unwrap(), now),
        ("wdpost-1", f.deadline_request(0, 0).unwrap(), now),
    ]);
    let before = snapshot(&s.state());
    // No file write succeeds: not the journal's, not the log's.
    let opts = StartOptions {
        file_size_limit: Some(0),
        ..Default::default()
    };
    let mut child = s.spawn(1, &opts);
    if let Some(mut c) = s.connect(1, &mut child).await {
        // It started: then it recovered both jobs.
        let mut proofs = HashMap::new();
        completed(&mut c, ["winpost-1", "wdpost-1"], &mut proofs).await;
        kill9(&mut child);
    } else {
        let exit = child.wait().unwrap();
        let log = piped_log(&mut child);
        eprintln!("refused start:\n{log}");
        assert!(!exit.success(), "{log}");
        assert!(
            log.contains("journal") && log.contains("nothing was changed"),
            "the refusal names the journal:\n{log}"
        );
        assert_eq!(snapshot(&s.state()), before, "the journal was changed");
        let names: Vec<String> = std::fs::read_dir(s.state())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.contains("corrupt")),
            "set aside: {names:?}"
        );
        // With the disk back, the jobs are there.
        let (mut child, mut c) = s.start(2).await;
        let mut proofs = HashMap::new();
        completed(&mut c, ["winpost-1", "wdpost-1"], &mut proofs).await;
        assert!(f
            .verify(ProofKind::WinningPost, &proofs["winpost-1"])
            .unwrap());
        kill9(&mut child);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payload_the_disk_refuses_leaves_no_file_and_smaller_jobs_go_on() {
    let s = Setup::new().await;
    let f = &s.fixtures;
    // Files stop at 64 KiB: the PoRep's ~100 KB C1 output cannot be
    // journaled, a WindowPoSt partition's 6 KB can.
    let opts = StartOptions {
        file_size_limit: Some(64 << 10),
        ..Default::default()
    };
    let mut child = s.spawn(1, &opts);
    let mut c = s.connect(1, &mut child).await.expect("the daemon serves");
    let porep = with_id(f.request(ProofKind::PoRep).unwrap(), "porep-big");
    let e = c
        .submit_proof(submit_request(porep))
        .await
        .expect_err("a request that cannot be journaled is refused");
    assert_eq!(e.code(), tonic::Code::Unavailable, "{e}");
    assert!(e.message().contains("journal"), "{e}");
    assert!(
        payload_names(&s.state()).is_empty(),
        "partial payload left: {:?}",
        payload_names(&s.state())
    );
    let wd = with_id(f.deadline_request(0, 0).unwrap(), "wdpost-small");
    c.submit_proof(submit_request(wd))
        .await
        .expect("a small job goes on");
    let r = await_job(&mut c, "wdpost-small").await;
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    kill9(&mut child);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_recovered_past_its_deadline_fails_for_the_deadline() {
    let s = Setup::new().await;
    let f = &s.fixtures;
    let now = unix_now();
    s.journal_queued(&[
        ("wdpost-old", f.deadline_request(0, 0).unwrap(), now - 7200),
        ("wdpost-new", f.deadline_request(0, 1).unwrap(), now),
    ]);
    let opts = StartOptions {
        extra_config: "[engine]\njob_deadline = \"1h\"\n".into(),
        ..Default::default()
    };
    let mut child = s.spawn(1, &opts);
    let mut c = s.connect(1, &mut child).await.expect("the daemon serves");
    let r = await_job(&mut c, "wdpost-old").await;
    assert_eq!(r.status, Status::Failed as i32);
    assert!(r.error_message.contains("deadline"), "{}", r.error_message);
    let r = await_job(&mut c, "wdpost-new").await;
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    kill9(&mut child);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submit_is_admitted_while_another_requests_journal_write_is_stalled() {
    let s = Setup::new().await;
    let f = &s.fixtures;
    let (mut child, mut c) = s.start(1).await;
    // Served: the journal is open (and its stale files cleaned up).
    status(&mut c).await;
    // The first job of a new journal is sequence 0: its payload's
    // temporary file is a FIFO, so its write stalls until the test reads.
    let fifo = s.state().join("payloads").join("0.tmp");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let porep = with_id(f.request(ProofKind::PoRep).unwrap(), "porep-stalled");
    let mut c2 = c.clone();
    let stalled = tokio::spawn(async move { c2.submit_proof(submit_request(porep)).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    if stalled.is_finished() {
        panic!(
            "the PoRep's journal write did not stall: {:?}",
            stalled.await
        );
    }
    let t = Instant::now();
    let win = with_id(f.request(ProofKind::WinningPost).unwrap(), "winpost-fast");
    let submitted =
        tokio::time::timeout(Duration::from_secs(20), c.submit_proof(submit_request(win)))
            .await
            .expect("the WinningPoSt waited for another request's journal write")
            .expect("WinningPoSt submitted");
    let took = t.elapsed();
    assert_eq!(submitted.into_inner().job_id, "winpost-fast");
    // Unstall the PoRep: read its payload.
    let reader = std::thread::spawn(move || std::fs::read(&fifo).unwrap().len());
    // A FIFO cannot be fsynced: the PoRep may be refused; either way it
    // is answered once its write ends.
    let porep_answer = stalled.await.unwrap();
    assert!(reader.join().unwrap() > 50_000);
    if let Err(e) = porep_answer {
        assert_eq!(e.code(), tonic::Code::Unavailable, "{e}");
    }
    eprintln!("WinningPoSt admitted in {took:?} beside a stalled PoRep journal write");
    let r = await_job(&mut c, "winpost-fast").await;
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    kill9(&mut child);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_serves_while_journaled_jobs_are_restored() {
    let s = Setup::new().await;
    let f = &s.fixtures;
    let held = f.request(ProofKind::WindowPost).unwrap();
    s.journal_queued(&[("wdpost-held", held, unix_now())]);
    // Its payload becomes a FIFO: restoring the job waits until the test
    // writes the bytes into it.
    let payload = s.state().join("payloads").join("1.req");
    let bytes = std::fs::read(&payload).unwrap();
    std::fs::remove_file(&payload).unwrap();
    let path = std::ffi::CString::new(payload.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let (mut child, mut c) = s.start(1).await;
    let st = tokio::time::timeout(Duration::from_secs(20), status(&mut c))
        .await
        .expect("GetStatus answered while a job is being restored");
    assert!(st.restoring, "{st:?}");
    assert_eq!(st.restoring_jobs, 1);
    // A new request is admitted and proved meanwhile.
    let win = with_id(f.request(ProofKind::WinningPost).unwrap(), "winpost-new");
    c.submit_proof(submit_request(win))
        .await
        .expect("a new request is admitted during the restoration");
    let r = await_job(&mut c, "winpost-new").await;
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    // An await of the job still to restore waits for it (not NOT_FOUND).
    let mut c2 = c.clone();
    let waiting = tokio::spawn(async move { await_job(&mut c2, "wdpost-held").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "{:?}", waiting.await);
    let writer = std::thread::spawn(move || std::fs::write(&payload, &bytes).unwrap());
    let r = tokio::time::timeout(Duration::from_secs(120), waiting)
        .await
        .expect("the restored job was proved")
        .unwrap();
    writer.join().unwrap();
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert!(f.verify(ProofKind::WindowPost, &r.proof).unwrap());
    let st = status(&mut c).await;
    assert!(!st.restoring && st.restoring_jobs == 0, "{st:?}");
    kill9(&mut child);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_winning_post_is_admitted_beside_four_200_mb_porep_submits() {
    let s = Setup::new().await;
    let f = &s.fixtures;
    let (mut child, mut c) = s.start(1).await;
    status(&mut c).await;
    // The 2 KiB PoRep's C1 JSON with trailing whitespace to 200 MB: read,
    // digested, decoded and journaled like any request of that size.
    let mut porep = f.request(ProofKind::PoRep).unwrap();
    porep.vanilla_proof.resize(200_000_000, b' ');
    // Sent over the one connection, each from a thread of its own (as a
    // client with a thread per request in flight sends them): encoding
    // 200 MB does not hold up the WinningPoSt's task on this runtime.
    let senders = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(5)
        .enable_all()
        .build()
        .unwrap();
    let before = payload_names(&s.state());
    let mut bigs = Vec::new();
    for i in 0..4 {
        let mut c = c.clone();
        let r = with_id(porep.clone(), &format!("porep-big-{i}"));
        bigs.push(
            senders.spawn(async move { c.submit_proof(submit_request(r)).await.map(|_| ()) }),
        );
    }
    // Once the daemon journals one of them (received, digested, decoded).
    let t = Instant::now();
    while payload_names(&s.state()).iter().all(|n| before.contains(n)) {
        assert!(
            !bigs.iter().all(|b| b.is_finished()),
            "the large submits ended unjournaled"
        );
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no large submit was journaled"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let win = with_id(f.request(ProofKind::WinningPost).unwrap(), "winpost-beside");
    let t = Instant::now();
    c.submit_proof(submit_request(win))
        .await
        .expect("WinningPoSt submitted");
    let took = t.elapsed();
    let in_flight = bigs.iter().filter(|b| !b.is_finished()).count();
    for b in bigs {
        b.await.unwrap().expect("a 200 MB PoRep submit");
    }
    senders.shutdown_background();
    eprintln!(
        "WinningPoSt admitted in {took:?} beside 4 × 200 MB PoRep submits ({in_flight} in flight)"
    );
    assert!(in_flight > 0, "the large submits had ended already");
    // Loosely (a shared CI machine): the bench measures the 100 ms.
    assert!(took < Duration::from_secs(2), "{took:?}");
    kill9(&mut child);
}
