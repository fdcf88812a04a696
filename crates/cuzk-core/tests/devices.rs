//! Several devices in one engine: the partitions of one job go to whichever
//! device has a free prover worker, a CRITICAL job takes a free worker on
//! any device, and a device that fails is taken out of service (the status
//! says why) while its partitions are proved on the others. With no device
//! left, jobs end failed saying why and new ones are refused.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_core::budget::MemoryBudget;
use cuzk_core::config::EngineConfig;
use cuzk_core::{Engine, JobStatus, Priority, SubmitError};
use support::*;

/// An engine on two scripted devices with `workers` prover workers each.
fn two_devices(s: &Shared, workers: usize) -> (Engine, [Arc<FakeDevice>; 2]) {
    let devices = [
        FakeDevice::new(s, "scripted:0"),
        FakeDevice::new(s, "scripted:1"),
    ];
    let e = engine_on_devices(
        s,
        EngineConfig {
            partition_workers: 2.into(),
            gpu_workers_per_device: workers.into(),
            critical_workers: 0,
            ..Default::default()
        },
        MemoryBudget::new(1 << 40),
        devices.iter().map(|d| d.clone() as _).collect(),
    );
    (e, devices)
}

/// Polls until `cond` holds (at most 10 s).
async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn the_partitions_of_one_job_spread_over_both_devices() {
    let s = shared();
    let (e, [d0, d1]) = two_devices(&s, 1);
    s.prove_gate.close();
    let job = e
        .enqueue(request_of(porep(), 1, 4, Priority::Normal, None))
        .unwrap();
    until("a partition on each device", || {
        !d0.calls().is_empty() && !d1.calls().is_empty()
    })
    .await;
    s.prove_gate.open();
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    assert_eq!(d0.calls().len() + d1.calls().len(), 4);
    assert_eq!(e.status().out_of_service, vec![None, None]);
}

#[tokio::test]
async fn a_critical_job_takes_the_free_worker_of_the_other_device() {
    let s = shared();
    let (e, devices) = two_devices(&s, 1);
    s.hold(1);
    let porep = e
        .enqueue(request_of(porep(), 1, 1, Priority::Normal, None))
        .unwrap();
    s.wait_proving(1, 0);
    let busy = devices.iter().position(|d| !d.calls().is_empty()).unwrap();
    let win = e
        .enqueue(request_of(winning(), 9, 1, Priority::Critical, None))
        .unwrap();
    let o = done(&e, &win.job_id).await;
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    assert!(!e.job(&porep.job_id).unwrap().is_done());
    assert_eq!(devices[1 - busy].calls(), vec![(9, 0)]);
    s.release(1);
    assert_eq!(done(&e, &porep.job_id).await.status, JobStatus::Completed);
}

#[tokio::test]
async fn a_device_that_fails_mid_run_goes_out_of_service_and_the_other_proves_its_partitions() {
    let s = shared();
    let (e, [d0, d1]) = two_devices(&s, 2);
    s.prove_gate.close();
    let jobs: Vec<_> = (1..=4)
        .map(|m| {
            e.enqueue(request_of(porep(), m, 3, Priority::Normal, None))
                .unwrap()
        })
        .collect();
    until("partitions on both devices", || {
        !d0.calls().is_empty() && !d1.calls().is_empty()
    })
    .await;
    d1.fail();
    s.prove_gate.open();
    for j in &jobs {
        let o = done(&e, &j.job_id).await;
        assert_eq!(o.status, JobStatus::Completed, "{}: {}", j.job_id, o.error);
    }
    let st = e.status();
    assert_eq!(st.out_of_service[0], None);
    let why = st.out_of_service[1]
        .clone()
        .expect("scripted:1 out of service");
    assert!(why.contains("scripted device failure"), "{why}");
    assert_eq!((st.completed, st.failed), (4, 0));
    // Every partition proved once: the proofs are whole and verified.
    let mut proved = s.proved();
    proved.sort();
    proved.dedup();
    assert_eq!(proved.len(), 12, "{proved:?}");
    // Once out of service the device got no more partitions: at most the
    // calls its two workers had started, plus the failed ones they took
    // before the first failure was seen.
    let failed_after = d1.calls().len();
    let more = e
        .enqueue(request_of(porep(), 5, 3, Priority::Normal, None))
        .unwrap();
    assert_eq!(done(&e, &more.job_id).await.status, JobStatus::Completed);
    assert_eq!(
        d1.calls().len(),
        failed_after,
        "an out-of-service device got work"
    );
}

#[tokio::test]
async fn a_job_proved_before_the_last_device_fails_still_completes() {
    // Two workers per device: the one that proved the first job verifies
    // it (held at the gate), the others meet the failures.
    let s = shared();
    let (e, [d0, d1]) = two_devices(&s, 2);
    s.verify_gate.close();
    let proved = e
        .enqueue(request_of(porep(), 1, 1, Priority::Normal, None))
        .unwrap();
    until("the first job in verification", || {
        s.verified.lock().unwrap().contains(&1)
    })
    .await;
    d0.fail();
    d1.fail();
    let lost = e
        .enqueue(request_of(porep(), 2, 1, Priority::Normal, None))
        .unwrap();
    let o = done(&e, &lost.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(!e.job(&proved.job_id).unwrap().is_done());
    s.verify_gate.open();
    let o = done(&e, &proved.job_id).await;
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
}

#[tokio::test]
async fn with_every_device_out_of_service_jobs_fail_saying_why_and_new_ones_are_refused() {
    let s = shared();
    let (e, [d0, d1]) = two_devices(&s, 1);
    d0.fail();
    d1.fail();
    let job = e
        .enqueue(request_of(porep(), 1, 2, Priority::Normal, None))
        .unwrap();
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    for part in ["no prover device is in service", "scripted:0", "scripted:1"] {
        assert!(o.error.contains(part), "{part:?} not in {:?}", o.error);
    }
    match e.enqueue(request_of(porep(), 2, 1, Priority::Normal, None)) {
        Err(SubmitError::NoDevice(why)) => assert!(why.contains("scripted:1"), "{why}"),
        other => panic!("accepted without a device: {other:?}"),
    }
    let st = e.status();
    assert!(st.out_of_service.iter().all(Option::is_some));
    assert_eq!(st.failed, 1);
}

/// An engine on one scripted device.
fn one_device(s: &Shared) -> (Engine, Arc<FakeDevice>) {
    let d = FakeDevice::new(s, "scripted:0");
    let e = engine_on_devices(
        s,
        EngineConfig {
            partition_workers: 1.into(),
            gpu_workers_per_device: 1.into(),
            critical_workers: 0,
            ..Default::default()
        },
        MemoryBudget::new(1 << 40),
        vec![d.clone() as _],
    );
    (e, d)
}

#[tokio::test]
async fn a_partition_its_device_had_no_memory_for_is_proved_again() {
    let s = shared();
    let (e, d) = one_device(&s);
    d.short_of_memory
        .store(2, std::sync::atomic::Ordering::SeqCst);
    let job = e
        .enqueue(request_of(porep(), 1, 3, Priority::Normal, None))
        .unwrap();
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    // Three partitions, two calls refused for memory: five calls.
    assert_eq!(d.calls().len(), 5, "{:?}", d.calls());
    let mut proved = s.proved();
    proved.sort();
    proved.dedup();
    assert_eq!(proved.len(), 3, "{proved:?}");
    // The device stays in service; the retries are counted.
    assert_eq!(e.status().out_of_service, vec![None]);
    let metrics = e.metrics_text();
    assert!(
        metrics.contains("cuzk_partition_memory_retries_total{kind=\"porep\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_partition_short_of_memory_every_time_fails_its_job_saying_why() {
    let s = shared();
    let (e, d) = one_device(&s);
    d.short_of_memory
        .store(usize::MAX, std::sync::atomic::Ordering::SeqCst);
    let job = e
        .enqueue(request_of(porep(), 1, 1, Priority::Normal, None))
        .unwrap();
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("out of device memory"), "{}", o.error);
    assert!(o.error.contains("proved again 3 times"), "{}", o.error);
    // The first call and three more, then the job ends.
    assert_eq!(d.calls().len(), 4, "{:?}", d.calls());
    assert_eq!(e.status().out_of_service, vec![None]);
    // The engine still proves: the next job completes.
    d.short_of_memory
        .store(0, std::sync::atomic::Ordering::SeqCst);
    let next = e
        .enqueue(request_of(porep(), 2, 1, Priority::Normal, None))
        .unwrap();
    assert_eq!(done(&e, &next.job_id).await.status, JobStatus::Completed);
}
