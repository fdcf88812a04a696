//! Engine behaviour with a scripted proof system and backend: queue order at
//! every stage, idempotency, cancellation, timeouts, failures, the memory
//! budget and shutdown. Nothing is really proved; gates force every
//! interleaving, so these run in milliseconds.

mod support;

use std::time::Duration;

use cuzk_core::config::EngineConfig;
use cuzk_core::engine::SubmitError;
use cuzk_core::{AwaitOutcome, JobError, JobStatus, Priority};
use support::*;

#[tokio::test]
async fn critical_job_overtakes_queued_normal_jobs() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    let first = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    s.wait_proving(1, 0);
    let n2 = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    // Job 2 is synthesized and waits in the (one-place) ready queue.
    wait_ready(&e, 1).await;
    let n3 = e.enqueue(request(3, Priority::Normal, None)).unwrap();
    let low = e.enqueue(request(4, Priority::Low, None)).unwrap();
    let high = e.enqueue(request(5, Priority::High, None)).unwrap();
    let crit = e.enqueue(request(6, Priority::Critical, None)).unwrap();
    assert_eq!(
        crit.queue_position, 0,
        "CRITICAL goes to the head of the queue"
    );
    // CRITICAL work passes the full ready queue: job 6 is synthesized too.
    wait_ready(&e, 2).await;
    s.prove_gate.open();
    for j in [&first, &n2, &n3, &low, &high, &crit] {
        assert_eq!(done(&e, &j.job_id).await.status, JobStatus::Completed);
    }
    // Job 6 before job 2, synthesized before the others arrived; after it,
    // strictly by priority.
    assert_eq!(s.proved_markers(), vec![1, 6, 2, 5, 3, 4]);
}

#[tokio::test]
async fn winning_post_behind_six_poreps_completes_before_the_third() {
    let s = shared();
    *s.prove_time.lock().unwrap() = Duration::from_millis(20);
    s.prove_gate.close();
    let e = engine(&s, 1);
    let poreps: Vec<_> = (1..=6)
        .map(|m| {
            e.enqueue(request_of(porep(), m, 1, Priority::Normal, None))
                .unwrap()
        })
        .collect();
    s.wait_proving(1, 0);
    let win = e
        .enqueue(request_of(winning(), 9, 1, winning_priority(), None))
        .unwrap();
    s.prove_gate.open();
    assert_eq!(done(&e, &win.job_id).await.status, JobStatus::Completed);
    let third = e.job(&poreps[2].job_id).unwrap();
    assert!(
        !third.is_done(),
        "the third PoRep finished before the WinningPoSt"
    );
    for p in &poreps {
        done(&e, &p.job_id).await;
    }
    let order = s.proved_markers();
    let pos = |m| order.iter().position(|x| *x == m).unwrap();
    assert!(pos(9) < pos(3), "proved order {order:?}");
}

fn winning_priority() -> Priority {
    cuzk_core::ProofKind::WinningPost.default_priority()
}

#[tokio::test]
async fn two_post_jobs_submitted_at_once_both_complete() {
    let s = shared();
    let e = engine(&s, 1);
    let (e1, e2) = (e.clone(), e.clone());
    let a = std::thread::spawn(move || {
        e1.enqueue(request_of(winning(), 1, 1, Priority::Critical, None))
    });
    let b = std::thread::spawn(move || {
        e2.enqueue(request_of(window(), 2, 1, Priority::Critical, None))
    });
    let (a, b) = (a.join().unwrap().unwrap(), b.join().unwrap().unwrap());
    assert_ne!(a.job_id, b.job_id);
    assert_eq!(done(&e, &a.job_id).await.status, JobStatus::Completed);
    assert_eq!(done(&e, &b.job_id).await.status, JobStatus::Completed);
    let mut proved = s.proved_markers();
    proved.sort();
    assert_eq!(proved, vec![1, 2]);
}

#[tokio::test]
async fn partitions_are_assembled_in_order() {
    let s = shared();
    let e = engine_with(
        &s,
        EngineConfig {
            partition_workers: 2.into(),
            gpu_workers_per_device: 2.into(),
            synthesized_queue: 3.into(),
            ..Default::default()
        },
        1 << 30,
    );
    s.verify_gate.close();
    let job = e
        .enqueue(request_of(porep(), 7, 5, Priority::Normal, None))
        .unwrap();
    assert!(e.job(&job.job_id).unwrap().holds_request());
    s.verify_gate.open();
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    assert_eq!(o.proof.len(), 5 * 192);
    // Ended, it keeps its outcome, not its request.
    let ended = e.job(&job.job_id).unwrap();
    assert!(
        !ended.holds_request(),
        "a finished job keeps its decoded request"
    );
    assert_eq!(ended.outcome().unwrap().proof, o.proof);
    let mut parts: Vec<usize> = s.proved().into_iter().map(|(_, k)| k).collect();
    parts.sort();
    assert_eq!(parts, vec![0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn budget_is_never_exceeded_and_two_partitions_fit() {
    let s = shared();
    *s.prove_time.lock().unwrap() = Duration::from_millis(5);
    let points = 100;
    let srs_bytes = FakeLoader {
        points,
        loads: Default::default(),
    }
    .srs()
    .bytes();
    let (abc, rest) = fake_partition_bytes(points);
    let part = abc + rest;
    // Room for the SRS and two partitions, not three.
    let limit = srs_bytes + 2 * part + part / 2;
    let e = engine_with(
        &s,
        EngineConfig {
            partition_workers: 3.into(),
            gpu_workers_per_device: 3.into(),
            synthesized_queue: 4.into(),
            ..Default::default()
        },
        limit,
    );
    let jobs: Vec<_> = (1..=3)
        .map(|m| {
            e.enqueue(request_of(porep(), m, 4, Priority::Normal, None))
                .unwrap()
        })
        .collect();
    for j in &jobs {
        assert_eq!(done(&e, &j.job_id).await.status, JobStatus::Completed);
    }
    let b = e.budget();
    assert!(
        b.peak() <= limit,
        "peak {} over the limit {limit}",
        b.peak()
    );
    assert!(
        b.peak() >= srs_bytes + 2 * part - abc,
        "two partitions were never held at once (peak {})",
        b.peak()
    );
    assert_eq!(b.used(), srs_bytes, "only the resident SRS stays charged");
    assert_eq!(s.proved().len(), 12);
}

#[tokio::test]
async fn partitions_never_crowd_out_the_srs_they_need() {
    // Three partitions fit, but not three and the SRS: were partitions
    // reserved before their SRS, three synthesized partitions would wait
    // forever for a prover that cannot load it.
    let s = shared();
    s.synth_gate.close();
    let (srs, part) = fake_sizes();
    let limit = 3 * part + srs / 2;
    assert!(srs / 2 < part && srs + 2 * part <= limit);
    let e = engine_with(
        &s,
        EngineConfig {
            partition_workers: 3.into(),
            synthesized_queue: 4.into(),
            ..Default::default()
        },
        limit,
    );
    let job = e
        .enqueue(request_of(porep(), 4, 6, Priority::Normal, None))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.synthesized.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        s.synthesized.lock().unwrap().len(),
        2,
        "the SRS and two partitions fill the budget; a third must wait"
    );
    s.synth_gate.open();
    let o = tokio::time::timeout(Duration::from_secs(20), done(&e, &job.job_id))
        .await
        .expect("the job completes: no partition waits for an SRS that cannot load");
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    assert!(e.budget().peak() <= limit);
}

#[tokio::test]
async fn two_circuits_share_a_budget_that_holds_one_partition() {
    // Both SRS and one partition fit; two synthesis workers each wanting a
    // different circuit must not each hold an SRS while waiting for room.
    let s = shared();
    let (srs, part) = fake_sizes();
    let limit = 2 * srs + part + part / 2;
    let e = engine_with(
        &s,
        EngineConfig {
            partition_workers: 2.into(),
            gpu_workers_per_device: 2.into(),
            ..Default::default()
        },
        limit,
    );
    let a = e
        .enqueue(request_of(porep(), 1, 3, Priority::Normal, None))
        .unwrap();
    let b = e
        .enqueue(request_of(window(), 2, 3, Priority::Normal, None))
        .unwrap();
    for j in [a, b] {
        let o = tokio::time::timeout(Duration::from_secs(20), done(&e, &j.job_id))
            .await
            .expect("both jobs complete");
        assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    }
    assert!(e.budget().peak() <= limit);
    assert_eq!(s.proved().len(), 6);
}

#[tokio::test]
async fn memory_goes_to_the_most_urgent_partition_first() {
    // Room for the SRS and one partition. Two synthesis workers wait for
    // memory with NORMAL partitions when a CRITICAL job arrives: it must get
    // the memory freed next, not them.
    let s = shared();
    s.prove_gate.close();
    let (srs, part) = fake_sizes();
    let e = engine_with(
        &s,
        EngineConfig {
            partition_workers: 2.into(),
            ..Default::default()
        },
        // Less than the partition even once the running one's a/b/c are back.
        srs + part + part / 10,
    );
    let normal = e
        .enqueue(request_of(porep(), 1, 4, Priority::Normal, None))
        .unwrap();
    // Two workers synthesise partitions 0 and 1; whichever reserves its
    // memory first proves first (usually 0).
    let first = s.wait_first_proving(1);
    // Both workers have claimed a partition of job 1 and wait for memory.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while e.status().synthesis_workers.iter().flatten().count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "workers never claimed partitions"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let critical = e
        .enqueue(request_of(porep(), 9, 1, Priority::Critical, None))
        .unwrap();
    // A worker gives way and takes the critical job.
    while !e
        .status()
        .synthesis_workers
        .iter()
        .flatten()
        .any(|t| t.job_id == critical.job_id)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no worker took the critical job"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    while e.status().waiting_for_memory < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the critical job never waited for memory"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    s.prove_gate.open();
    for j in [&critical, &normal] {
        let o = done(&e, &j.job_id).await;
        assert_eq!(o.status, JobStatus::Completed, "{}: {}", j.job_id, o.error);
    }
    let order = s.proved();
    assert_eq!(order[0], (1, first));
    assert_eq!(
        order[1],
        (9, 0),
        "the critical partition is proved right after the one running: {order:?}"
    );
    let mut rest: Vec<usize> = order[2..].iter().map(|(_, k)| *k).collect();
    rest.push(first);
    rest.sort();
    assert_eq!(
        rest,
        vec![0, 1, 2, 3],
        "every partition of job 1 proved once"
    );
}

#[tokio::test]
async fn a_failed_partition_does_not_stall_the_next_job() {
    let s = shared();
    s.script(5, Script::FailProve);
    let e = engine_with(
        &s,
        EngineConfig {
            synthesized_queue: 1.into(),
            ..Default::default()
        },
        1 << 30,
    );
    let failing = e
        .enqueue(request_of(porep(), 5, 4, Priority::Normal, None))
        .unwrap();
    let next = e
        .enqueue(request_of(porep(), 6, 2, Priority::Normal, None))
        .unwrap();
    let o = done(&e, &failing.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("scripted failure"), "{}", o.error);
    let o = tokio::time::timeout(Duration::from_secs(20), done(&e, &next.job_id))
        .await
        .expect("the next job is not stalled");
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
}

#[tokio::test]
async fn cancel_of_a_running_multi_partition_job_frees_its_reservations() {
    let s = shared();
    s.prove_gate.close();
    let e = engine_with(
        &s,
        EngineConfig {
            synthesized_queue: 2.into(),
            ..Default::default()
        },
        1 << 30,
    );
    let job = e
        .enqueue(request_of(porep(), 3, 6, Priority::Normal, None))
        .unwrap();
    s.wait_proving(3, 0);
    // Partition 0 is proving and more are synthesized and waiting.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while e.status().ready_partitions < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(e.status().ready_partitions, 2);
    let srs = e.srs().hot_bytes();
    assert!(e.budget().used() > srs);
    assert_eq!(e.cancel(&job.job_id), Ok(true));
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Cancelled);
    assert!(o.proof.is_empty());
    assert_eq!(
        e.status().ready_partitions,
        0,
        "queued witnesses are dropped at once"
    );
    s.prove_gate.open();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while e.budget().used() > srs && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        e.budget().used(),
        srs,
        "every partition reservation is back"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        s.proved(),
        vec![(3, 0)],
        "no partition proved after the cancel"
    );
}

#[tokio::test]
async fn same_request_id_is_one_job_and_one_proof() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    let a = e
        .enqueue(request(7, Priority::Normal, Some("sector-7")))
        .unwrap();
    let b = e
        .enqueue(request(7, Priority::Normal, Some("sector-7")))
        .unwrap();
    assert_eq!(a.job_id, "sector-7");
    assert_eq!(b.job_id, a.job_id);
    assert!(!a.existing && b.existing);
    s.prove_gate.open();
    let oa = done(&e, &a.job_id).await;
    let c = e
        .enqueue(request(7, Priority::Normal, Some("sector-7")))
        .unwrap();
    assert!(c.existing);
    assert_eq!(done(&e, &c.job_id).await.proof, oa.proof);
    assert_eq!(s.proved_markers(), vec![7], "proved exactly once");
    assert_eq!(e.status().completed, 1);
}

#[tokio::test]
async fn failed_request_id_is_proved_again_on_resubmit() {
    let s = shared();
    s.script(8, Script::FailProve);
    let e = engine(&s, 1);
    let a = e
        .enqueue(request(8, Priority::Normal, Some("retry-me")))
        .unwrap();
    let oa = done(&e, &a.job_id).await;
    assert_eq!(oa.status, JobStatus::Failed);
    assert!(oa.error.contains("scripted failure of 8"), "{}", oa.error);
    s.script(8, Script::Prove);
    let b = e
        .enqueue(request(8, Priority::Normal, Some("retry-me")))
        .unwrap();
    assert!(!b.existing);
    assert_eq!(done(&e, &b.job_id).await.status, JobStatus::Completed);
    assert_eq!(s.proved_markers(), vec![8, 8]);
}

#[tokio::test]
async fn request_id_of_another_kind_is_a_conflict() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    e.enqueue(request(9, Priority::Normal, Some("shared-id")))
        .unwrap();
    let err = e
        .enqueue(request_of(
            winning(),
            9,
            1,
            Priority::Normal,
            Some("shared-id"),
        ))
        .unwrap_err();
    assert!(
        matches!(err, SubmitError::RequestIdConflict { .. }),
        "{err}"
    );
    s.prove_gate.open();
}

#[tokio::test]
async fn cancel_of_a_queued_job_never_proves_it() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    let first = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    s.wait_proving(1, 0);
    let _ready = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    wait_ready(&e, 1).await;
    let queued = e.enqueue(request(3, Priority::Normal, None)).unwrap();
    assert_eq!(e.cancel(&queued.job_id), Ok(false));
    let o = done(&e, &queued.job_id).await;
    assert_eq!(o.status, JobStatus::Cancelled);
    assert!(o.proof.is_empty());
    assert!(matches!(
        e.cancel(&queued.job_id),
        Err(JobError::AlreadyEnded { .. })
    ));
    s.prove_gate.open();
    assert_eq!(done(&e, &first.job_id).await.status, JobStatus::Completed);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!s.proved_markers().contains(&3));
    assert!(matches!(
        e.cancel("no-such-job"),
        Err(JobError::NotFound(_))
    ));
}

#[tokio::test]
async fn await_times_out_and_the_job_goes_on() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    let job = e.enqueue(request(4, Priority::Normal, None)).unwrap();
    let r = e
        .await_job(&job.job_id, Some(Duration::from_millis(20)))
        .await
        .unwrap();
    assert!(matches!(r, AwaitOutcome::Timeout));
    s.prove_gate.open();
    assert_eq!(done(&e, &job.job_id).await.status, JobStatus::Completed);
    assert!(matches!(
        e.await_job("nope", None).await,
        Err(JobError::NotFound(_))
    ));
}

#[tokio::test]
async fn failures_are_reported_and_do_not_stop_workers() {
    let s = shared();
    s.script(5, Script::BadProof);
    s.script(6, Script::Panic);
    s.script(7, Script::FailSynthesis);
    let e = engine(&s, 1);
    let bad = e.enqueue(request(5, Priority::Normal, None)).unwrap();
    let boom = e.enqueue(request(6, Priority::Normal, None)).unwrap();
    let synth = e.enqueue(request(7, Priority::Normal, None)).unwrap();
    let fine = e.enqueue(request(8, Priority::Normal, None)).unwrap();
    let o = done(&e, &bad.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("failed verification"), "{}", o.error);
    assert!(o.proof.is_empty(), "an unverified proof is never returned");
    let o = done(&e, &boom.job_id).await;
    assert!(o.error.contains("scripted panic of 6"), "{}", o.error);
    let o = done(&e, &synth.job_id).await;
    assert!(
        o.error.contains("scripted synthesis failure of 7"),
        "{}",
        o.error
    );
    assert_eq!(done(&e, &fine.job_id).await.status, JobStatus::Completed);
    let st = e.status();
    assert_eq!((st.completed, st.failed), (1, 3));
}

#[tokio::test]
async fn deadline_fails_a_job_that_waits_too_long() {
    let s = shared();
    s.prove_gate.close();
    let e = engine_with(
        &s,
        EngineConfig {
            job_deadline: Duration::from_millis(100),
            ..Default::default()
        },
        1 << 30,
    );
    let first = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    s.wait_proving(1, 0);
    let late = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    s.prove_gate.open();
    let o = done(&e, &late.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("deadline"), "{}", o.error);
    done(&e, &first.job_id).await;
}

#[tokio::test]
async fn timings_are_consistent() {
    let s = shared();
    let e = engine(&s, 1);
    let job = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    let t = done(&e, &job.job_id).await.timings;
    assert!(t.total >= t.queue_wait + t.prove + t.verify);
    assert!(t.prove >= t.compute);
}

#[tokio::test]
async fn several_prover_workers_prove_at_once() {
    let s = shared();
    s.prove_gate.close();
    let e = engine_with(
        &s,
        EngineConfig {
            partition_workers: 2.into(),
            gpu_workers_per_device: 2.into(),
            synthesized_queue: 2.into(),
            ..Default::default()
        },
        1 << 30,
    );
    let a = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    let b = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    s.wait_proving(1, 0);
    s.wait_proving(2, 0);
    assert_eq!(e.status().prover_workers.iter().flatten().count(), 2);
    s.prove_gate.open();
    done(&e, &a.job_id).await;
    done(&e, &b.job_id).await;
}

#[tokio::test]
async fn shutdown_fails_unstarted_jobs_and_refuses_new_ones() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    let running = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    s.wait_proving(1, 0);
    let _ready = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    wait_ready(&e, 1).await;
    let queued = e.enqueue(request(3, Priority::Normal, None)).unwrap();
    let e2 = e.clone();
    let stop = tokio::spawn(async move { e2.shutdown(Duration::from_secs(20)).await });
    let o = done(&e, &queued.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("never started"), "{}", o.error);
    assert!(!o.resumes, "no journal keeps it: failed for good");
    assert_eq!(
        e.enqueue(request(4, Priority::Normal, None)),
        Err(SubmitError::ShuttingDown)
    );
    s.prove_gate.open();
    stop.await.unwrap();
    assert_eq!(done(&e, &running.job_id).await.status, JobStatus::Completed);
}

#[tokio::test]
async fn shutdown_grace_fails_a_job_that_runs_too_long() {
    let s = shared();
    s.prove_gate.close();
    let e = engine(&s, 1);
    let running = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    s.wait_proving(1, 0);
    e.shutdown(Duration::from_millis(50)).await;
    let o = done(&e, &running.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("had not finished"), "{}", o.error);
    assert!(!o.resumes, "no journal keeps it: failed for good");
    s.prove_gate.open();
}

#[tokio::test]
async fn metrics_count_jobs_and_budget() {
    let s = shared();
    let e = engine(&s, 1);
    let job = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    done(&e, &job.job_id).await;
    let text = e.metrics_text();
    for needle in [
        "cuzk_jobs_finished_total{kind=\"window-post\",outcome=\"completed\"} 1",
        "cuzk_queue_depth{kind=\"window-post\"} 0",
        "cuzk_memory_budget_bytes{state=\"limit\"} 1073741824",
        "cuzk_partition_stage_seconds_count{kind=\"window-post\",stage=\"prove\"} 1",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[tokio::test]
async fn jobs_past_max_queued_jobs_are_refused_but_critical_ones_and_resubmits_pass() {
    let s = shared();
    s.prove_gate.close();
    let e = engine_with(
        &s,
        EngineConfig {
            max_queued_jobs: 2.into(),
            critical_workers: 0,
            ..Default::default()
        },
        1 << 30,
    );
    let a = e.enqueue(request(1, Priority::Normal, Some("a"))).unwrap();
    let b = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    match e.enqueue(request(3, Priority::High, None)) {
        Err(SubmitError::QueueFull { limit: 2 }) => {}
        other => panic!("expected QueueFull, got {other:?}"),
    }
    // The same request again is the job already there, not a new one.
    let again = e.enqueue(request(1, Priority::Normal, Some("a"))).unwrap();
    assert_eq!(again.job_id, a.job_id);
    assert!(again.existing);
    let crit = e.enqueue(request(4, Priority::Critical, None)).unwrap();
    s.prove_gate.open();
    for j in [&a, &b, &crit] {
        assert_eq!(done(&e, &j.job_id).await.status, JobStatus::Completed);
    }
    // Room again once they ended.
    let c = e.enqueue(request(5, Priority::Normal, None)).unwrap();
    assert_eq!(done(&e, &c.job_id).await.status, JobStatus::Completed);
}
