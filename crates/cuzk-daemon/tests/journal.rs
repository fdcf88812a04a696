//! The job journal with the real `cuzk-daemon` binary: jobs accepted before
//! a `kill -9` are all answered after a restart, with proofs that verify,
//! and completed ones are never proved twice; a graceful stop answers the
//! waiters of jobs it leaves in the journal `UNAVAILABLE` (they resume),
//! never `FAILED`; a corrupt journal is set aside, the requests its
//! payloads hold are proved, and the daemon starts and serves.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use cuzk_core::ProofKind;
use cuzk_proto::v1::{await_proof_response::Status, AwaitProofRequest, ProveRequest};
use cuzk_server::convert::submit_request;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_loses_no_job_and_proves_no_completed_job_twice() {
    let s = Setup::new().await;
    let (mut child, mut c) = s.start(1).await;
    let all = jobs(&s.fixtures);
    let submit = async |c: &mut Client, id: &str| {
        let r = &all.iter().find(|(i, _)| *i == id).unwrap().1;
        let job = c
            .submit_proof(submit_request(r.clone()))
            .await
            .unwrap_or_else(|e| panic!("submit {id}: {e}"))
            .into_inner()
            .job_id;
        assert_eq!(job, id);
    };
    // WinningPoSt and the WindowPoSt partitions are proved first; then
    // the PoRep and the SnapDeals are submitted, and the daemon is killed
    // while the PoRep is being proved.
    let mut before = HashMap::new();
    let posts = ["winpost-1000", "wdpost-1000-p0", "wdpost-1000-p1"];
    for id in posts {
        submit(&mut c, id).await;
    }
    completed(&mut c, posts, &mut before).await;
    for id in ["porep-1000-1", "snap-1000-2"] {
        submit(&mut c, id).await;
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let st = status(&mut c).await;
        let running = st
            .queues
            .iter()
            .any(|q| q.proof_kind == "porep" && q.in_progress > 0);
        if running {
            break;
        }
        assert!(Instant::now() < deadline, "the PoRep never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        status(&mut c).await.total_proofs_completed == 3,
        "PoRep and SnapDeals still unfinished at the kill"
    );
    kill9(&mut child);

    let (mut child, mut c) = s.start(2).await;
    let mut proofs = HashMap::new();
    completed(&mut c, all.iter().map(|(id, _)| *id), &mut proofs).await;
    for (id, _) in &all {
        assert!(verify(&s.fixtures, id, &proofs), "{id}'s proof verifies");
    }
    for (id, p) in &before {
        assert_eq!(
            &proofs[id], p,
            "{id}: the proof from before the kill, not a new one"
        );
    }
    // Only the two unfinished jobs were proved by the new process.
    assert_eq!(status(&mut c).await.total_proofs_completed, 2);
    let m = metrics(&mut c).await;
    assert_eq!(
        counter(
            &m,
            "cuzk_jobs_recovered_total{as=\"requeued\",kind=\"porep\"}"
        ),
        1,
        "{m}"
    );
    assert_eq!(
        counter(
            &m,
            "cuzk_jobs_recovered_total{as=\"finished\",kind=\"winning-post\"}"
        ),
        1,
        "{m}"
    );
    // A resubmit of a finished id (as Curio does, through Prove) returns
    // the same bytes without proving again.
    let winning = &all.iter().find(|(id, _)| *id == "winpost-1000").unwrap().1;
    let r = c
        .prove(ProveRequest {
            submit: Some(submit_request(winning.clone())),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.status, Status::Completed as i32);
    assert_eq!(r.proof, before["winpost-1000"]);
    assert_eq!(status(&mut c).await.total_proofs_completed, 2);
    kill9(&mut child);
    assert!(
        s.log_text(2).contains("jobs recovered from the journal"),
        "{}",
        s.log_text(2)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_answers_unavailable_for_journaled_jobs_and_the_restart_proves_them_once() {
    let s = Setup::new().await;
    let (mut child, mut c) = s.start(1).await;
    let all = jobs(&s.fixtures);
    for (id, r) in &all {
        c.submit_proof(submit_request(r.clone()))
            .await
            .unwrap_or_else(|e| panic!("submit {id}: {e}"));
    }
    // Every job awaited while the daemon stops, the queued ones too.
    let waits: Vec<_> = all
        .iter()
        .map(|(id, _)| {
            let (mut c, id) = (c.clone(), id.to_string());
            tokio::spawn(async move {
                let r = c
                    .await_proof(AwaitProofRequest {
                        job_id: id.clone(),
                        timeout_ms: 0,
                    })
                    .await;
                (id, r)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    sigterm(&mut child);
    let mut proofs = HashMap::new();
    let mut resumed = Vec::new();
    for w in waits {
        let (id, r) = w.await.unwrap();
        match r {
            Ok(r) => {
                let r = r.into_inner();
                assert_eq!(
                    r.status,
                    Status::Completed as i32,
                    "{id}: a job the stop leaves journaled is not failed: {}",
                    r.error_message
                );
                proofs.insert(id, r.proof);
            }
            Err(e) => {
                assert_eq!(e.code(), tonic::Code::Unavailable, "{id}: {e}");
                assert!(
                    e.message().contains("runs again after the restart"),
                    "{id}: {e}"
                );
                resumed.push(id);
            }
        }
    }
    let exit = child.wait().expect("reaped");
    assert!(exit.success(), "graceful stop: {exit}");
    assert!(
        !resumed.is_empty(),
        "some job was still unfinished at the stop"
    );

    let (mut child, mut c) = s.start(2).await;
    completed(&mut c, resumed.iter().map(String::as_str), &mut proofs).await;
    for (id, _) in &all {
        assert!(verify(&s.fixtures, id, &proofs), "{id}'s proof verifies");
    }
    // The restart proved the resumed jobs, each once, and nothing else.
    assert_eq!(
        status(&mut c).await.total_proofs_completed,
        resumed.len() as u64,
        "resumed: {resumed:?}"
    );
    kill9(&mut child);
}

fn corrupt(path: &Path) {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    std::fs::write(path, vec![0xa5u8; len.max(8192) as usize]).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_journal_is_set_aside_and_the_daemon_serves() {
    let s = Setup::new().await;
    let (mut child, mut c) = s.start(1).await;
    let r = with_id(
        s.fixtures.request(ProofKind::WindowPost).unwrap(),
        "wdpost-a",
    );
    c.submit_proof(submit_request(r.clone())).await.unwrap();
    assert_eq!(
        await_job(&mut c, "wdpost-a").await.status,
        Status::Completed as i32
    );
    kill9(&mut child);
    // A job accepted and not started: its row is lost with the file, its
    // request is salvaged from its payload.
    let winning = s.fixtures.request(ProofKind::WinningPost).unwrap();
    s.journal_queued(&[("winpost-salvaged", winning, unix_now())]);
    let db = s.state().join("journal.sqlite");
    assert!(db.exists(), "the journal is where daemon.state_dir says");
    corrupt(&db);
    let wal = s.state().join("journal.sqlite-wal");
    if wal.exists() {
        corrupt(&wal);
    }

    let (mut child, mut c) = s.start(2).await;
    status(&mut c).await;
    let log = s.log_text(2);
    assert!(
        log.contains("set aside"),
        "the corruption is reported:\n{log}"
    );
    let aside: Vec<_> = std::fs::read_dir(s.state())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("journal.sqlite.corrupt-"))
        .collect();
    assert!(!aside.is_empty(), "the old journal is kept aside");
    let r = await_job(&mut c, "winpost-salvaged").await;
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert!(s.fixtures.verify(ProofKind::WinningPost, &r.proof).unwrap());
    // It serves: a new job is proved and journaled in the new journal.
    let job = with_id(
        s.fixtures.request(ProofKind::WindowPost).unwrap(),
        "wdpost-b",
    );
    c.submit_proof(submit_request(job)).await.unwrap();
    let r = await_job(&mut c, "wdpost-b").await;
    assert_eq!(r.status, Status::Completed as i32, "{}", r.error_message);
    assert!(s.fixtures.verify(ProofKind::WindowPost, &r.proof).unwrap());
    kill9(&mut child);
    // And the replacement journal is a good one: the next start finds the job.
    let (mut child, mut c) = s.start(3).await;
    assert_eq!(
        await_job(&mut c, "wdpost-b").await.proof,
        r.proof,
        "journaled in the new journal"
    );
    assert!(!s.log_text(3).contains("set aside"));
    kill9(&mut child);
}
