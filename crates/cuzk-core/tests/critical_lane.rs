//! The lane kept for CRITICAL jobs (WinningPoSt): workers that take only
//! CRITICAL partitions (`engine.critical_workers`) and the top of the memory
//! budget only they may use (`memory.critical_reserve`). A WinningPoSt
//! submitted while every shared worker is busy with a long partition, and
//! the rest of the budget is taken, completes without waiting for it; each
//! half of the lane alone is not enough.

mod support;

use std::time::Duration;

use cuzk_core::budget::MemoryBudget;
use cuzk_core::config::EngineConfig;
use cuzk_core::{AwaitOutcome, Engine, JobStatus, Priority};
use support::*;

/// Markers: the long PoRep and the WinningPoSt.
const POREP: u8 = 1;
const WINNING: u8 = 9;

/// An engine with one shared synthesis and prover worker, `critical`
/// workers kept for CRITICAL work, and a budget whose normal part holds the
/// SRS and one partition (plus a little), topped by a reserve of `reserve`.
fn engine_for(s: &Shared, critical: usize, reserve: u64) -> Engine {
    let (srs, part) = fake_sizes();
    let normal = srs + part + part / 10;
    engine_on(
        s,
        EngineConfig {
            partition_workers: 1.into(),
            gpu_workers_per_device: 1.into(),
            synthesized_queue: 1.into(),
            critical_workers: critical,
            ..Default::default()
        },
        MemoryBudget::with_critical_reserve(normal + reserve, reserve),
    )
}

/// Waits for job `id` and asserts it completed.
async fn completed(e: &Engine, id: &str) {
    match e
        .await_job(id, Some(Duration::from_secs(30)))
        .await
        .unwrap()
    {
        AwaitOutcome::Done(o) => assert_eq!(o.status, JobStatus::Completed, "{}", o.error),
        AwaitOutcome::Timeout => panic!("job {id} did not finish"),
    }
}

/// Starts a 3-partition PoRep whose partitions stay in the prover, waits
/// until its first is proving and its second waits for memory, then submits
/// a WinningPoSt; returns whether the WinningPoSt completed within `wait`
/// while the PoRep was still held, and then lets everything finish.
async fn winning_behind_a_held_porep(e: &Engine, s: &Shared, wait: Duration) -> bool {
    s.hold(POREP);
    let porep = e
        .enqueue(request_of(porep(), POREP, 3, Priority::Normal, None))
        .unwrap();
    s.wait_proving(POREP, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while e.status().waiting_for_memory < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the second PoRep partition never waited for memory"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let win = e
        .enqueue(request_of(winning(), WINNING, 1, Priority::Critical, None))
        .unwrap();
    let early = match e.await_job(&win.job_id, Some(wait)).await.unwrap() {
        AwaitOutcome::Done(o) => {
            assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
            assert!(!e.job(&porep.job_id).unwrap().is_done());
            true
        }
        AwaitOutcome::Timeout => false,
    };
    s.release(POREP);
    for id in [&porep.job_id, &win.job_id] {
        completed(e, id).await;
    }
    early
}

#[tokio::test]
async fn winning_post_completes_while_a_porep_holds_the_workers_and_the_budget() {
    let s = shared();
    let (srs, part) = fake_sizes();
    let e = engine_for(&s, 1, srs + part);
    assert!(
        winning_behind_a_held_porep(&e, &s, Duration::from_secs(10)).await,
        "the WinningPoSt waited for the held PoRep"
    );
    assert_eq!(
        s.urgent_markers(),
        vec![WINNING],
        "only the CRITICAL partition goes to the backend as urgent"
    );
    assert!(e.budget().peak() <= e.budget().limit());
    assert_eq!(
        e.status().prover_workers.len(),
        2,
        "one shared and one critical prover worker"
    );
}

#[tokio::test]
async fn without_critical_workers_the_winning_post_waits() {
    let s = shared();
    let (srs, part) = fake_sizes();
    let e = engine_for(&s, 0, srs + part);
    assert!(!winning_behind_a_held_porep(&e, &s, Duration::from_millis(500)).await);
}

#[tokio::test]
async fn without_a_critical_reserve_the_winning_post_waits() {
    let s = shared();
    let e = engine_for(&s, 1, 0);
    assert!(!winning_behind_a_held_porep(&e, &s, Duration::from_millis(500)).await);
}

#[tokio::test]
async fn workers_kept_for_critical_work_take_nothing_else() {
    // Two normal jobs and a held first one: the second waits for the shared
    // prover even though a critical worker is idle.
    let s = shared();
    let e = engine_on(
        &s,
        EngineConfig {
            critical_workers: 1,
            ..Default::default()
        },
        MemoryBudget::with_critical_reserve(1 << 30, 1 << 20),
    );
    s.hold(POREP);
    let first = e
        .enqueue(request_of(porep(), POREP, 1, Priority::Normal, None))
        .unwrap();
    s.wait_proving(POREP, 0);
    let second = e
        .enqueue(request_of(porep(), 2, 1, Priority::High, None))
        .unwrap();
    wait_ready(&e, 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.proved_markers(), vec![POREP], "only the held job proves");
    let busy = e.status().prover_workers.iter().flatten().count();
    assert_eq!(busy, 1, "the critical worker stayed idle");
    s.release(POREP);
    for id in [&first.job_id, &second.job_id] {
        completed(&e, id).await;
    }
}
