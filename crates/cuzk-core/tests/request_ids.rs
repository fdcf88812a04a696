//! The request id rule on the scripted engine: same id and same digest is
//! one job; same id and another digest, the newest request wins (a finished
//! job is replaced, an unfinished one cancelled with a message naming the
//! superseding request), counted in the metrics.

mod support;

use std::time::Duration;

use cuzk_core::{Engine, JobStatus, Priority};
use support::*;

fn superseded_count(e: &Engine, old_job: &str) -> u64 {
    let text = e.metrics_text();
    let key =
        format!("cuzk_requests_superseded_total{{kind=\"window-post\",old_job=\"{old_job}\"}}");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0, |v| v.trim().parse().unwrap())
}

#[tokio::test]
async fn a_new_payload_replaces_a_finished_job() {
    let s = shared();
    let e = engine(&s, 1);
    let a = e
        .enqueue(request(7, Priority::Normal, Some("sector-7")))
        .unwrap();
    assert_eq!(done(&e, &a.job_id).await.status, JobStatus::Completed);
    let b = e
        .enqueue(request(8, Priority::Normal, Some("sector-7")))
        .unwrap();
    assert_eq!(b.job_id, "sector-7");
    assert!(!b.existing, "another payload is a new job");
    assert_eq!(done(&e, &b.job_id).await.status, JobStatus::Completed);
    assert_eq!(s.proved_markers(), vec![7, 8]);
    assert_eq!(*s.verified.lock().unwrap(), vec![7, 8]);
    assert_eq!(superseded_count(&e, "finished"), 1);
    // The same (new) payload again: still that one job.
    let c = e
        .enqueue(request(8, Priority::Normal, Some("sector-7")))
        .unwrap();
    assert!(c.existing);
    assert_eq!(s.proved_markers(), vec![7, 8]);
}

#[tokio::test]
async fn a_new_payload_cancels_an_unfinished_job_and_its_waiters_learn_why() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    e.enqueue(request(7, Priority::Normal, Some("sector-7")))
        .unwrap();
    s.wait_proving(7, 0);
    let waiter = {
        let e = e.clone();
        tokio::spawn(async move { done(&e, "sector-7").await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let b = e
        .enqueue(request(8, Priority::Normal, Some("sector-7")))
        .unwrap();
    assert!(!b.existing);
    let old = waiter.await.unwrap();
    assert_eq!(old.status, JobStatus::Cancelled);
    assert!(
        old.error.contains("superseded") && old.error.contains("\"sector-7\""),
        "{}",
        old.error
    );
    s.prove_gate.open();
    let new = done(&e, "sector-7").await;
    assert_eq!(new.status, JobStatus::Completed, "{}", new.error);
    // Job 7's partition was in the prover when it was cancelled: it is
    // discarded, never verified or returned.
    assert_eq!(*s.verified.lock().unwrap(), vec![8]);
    assert_eq!(superseded_count(&e, "unfinished"), 1);
    assert_eq!(e.status().cancelled, 1);
}

#[tokio::test]
async fn the_same_payload_at_another_priority_is_the_same_job() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    let a = e
        .enqueue(request(7, Priority::Normal, Some("sector-7")))
        .unwrap();
    let b = e
        .enqueue(request(7, Priority::High, Some("sector-7")))
        .unwrap();
    assert!(b.existing);
    assert_eq!(a.job_id, b.job_id);
    s.prove_gate.open();
    done(&e, &a.job_id).await;
    assert_eq!(s.proved_markers(), vec![7]);
    assert_eq!(superseded_count(&e, "unfinished"), 0);
}
