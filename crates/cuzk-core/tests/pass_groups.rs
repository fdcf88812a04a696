//! A backend whose partitions share passes over the SRS
//! (`ProverBackend::partitions_per_pass` > 1, a GPU streaming sections
//! from host memory) gets ready partitions of one circuit in groups: never
//! more than it allows, never a CRITICAL partition in a group, and every
//! partition's proof lands in its own job.

mod support;

use std::sync::{Arc, Mutex};

use blstrs::Scalar;
use cuzk_core::budget::MemoryBudget;
use cuzk_core::config::EngineConfig;
use cuzk_core::{JobStatus, Priority};
use cuzk_prover::backend::DeviceSrs;
use cuzk_prover::proof::Proof;
use cuzk_prover::synth::PartitionWitness;
use cuzk_prover::{ProveStats, ProverBackend, ProverError, SrsRef};
use support::*;

/// Proves as the scripted backend does, a group at a time, recording each
/// call's (marker, partition, urgent) list.
struct Grouping {
    per_pass: usize,
    calls: Mutex<Vec<Vec<(u8, usize, bool)>>>,
}

impl ProverBackend for Grouping {
    fn name(&self) -> String {
        "grouping".into()
    }
    fn host_bytes(&self, size: &cuzk_prover::WitnessSize) -> cuzk_prover::HostBytes {
        cuzk_prover::CpuBackend.host_bytes(size)
    }
    fn partitions_per_pass(&self, _device: Option<&DeviceSrs>) -> usize {
        self.per_pass
    }
    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        _srs: &SrsRef<'_>,
        r: &[Scalar],
        _s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        assert_eq!(r.len(), witnesses.len(), "one r per witness");
        let call: Vec<_> = witnesses
            .iter()
            .map(|w| {
                let (marker, k) = witness_marker(w);
                (marker, k, w.urgent)
            })
            .collect();
        self.calls.lock().unwrap().push(call);
        for i in 0..witnesses.len() {
            abc_freed(i);
        }
        // Long enough for the next partitions to be ready when a worker
        // comes back.
        std::thread::sleep(std::time::Duration::from_millis(20));
        Ok((vec![good_proof(); witnesses.len()], ProveStats::default()))
    }
}

fn grouping_engine(s: &Shared, per_pass: usize) -> (cuzk_core::Engine, Arc<Grouping>) {
    let backend = Arc::new(Grouping {
        per_pass,
        calls: Mutex::new(Vec::new()),
    });
    let e = engine_on_devices(
        s,
        EngineConfig {
            partition_workers: 2.into(),
            gpu_workers_per_device: 1.into(),
            synthesized_queue: 4.into(),
            critical_workers: 0,
            ..Default::default()
        },
        MemoryBudget::new(1 << 40),
        vec![backend.clone() as _],
    );
    (e, backend)
}

#[tokio::test]
async fn ready_partitions_of_one_circuit_are_proved_in_groups() {
    let s = shared();
    let (e, backend) = grouping_engine(&s, 2);
    let jobs: Vec<_> = (1..=2u8)
        .map(|m| {
            e.enqueue(request_of(porep(), m, 6, Priority::Normal, None))
                .unwrap()
        })
        .collect();
    for j in &jobs {
        let o = done(&e, &j.job_id).await;
        assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
        assert_eq!(o.proof.len(), 6 * 192, "every partition's proof in its job");
    }
    let calls = backend.calls.lock().unwrap().clone();
    assert!(
        calls.iter().all(|c| c.len() <= 2),
        "at most 2 a call: {calls:?}"
    );
    assert!(
        calls.iter().any(|c| c.len() == 2),
        "some partitions shared a call: {calls:?}"
    );
    let mut proved: Vec<_> = calls.iter().flatten().map(|(m, k, _)| (*m, *k)).collect();
    proved.sort();
    let want: Vec<_> = (1..=2u8)
        .flat_map(|m| (0..6).map(move |k| (m, k)))
        .collect();
    assert_eq!(proved, want, "every partition proved once");
}

#[tokio::test]
async fn a_critical_partition_is_never_grouped() {
    let s = shared();
    let (e, backend) = grouping_engine(&s, 4);
    let normal = e
        .enqueue(request_of(porep(), 1, 8, Priority::Normal, None))
        .unwrap();
    let critical = e
        .enqueue(request_of(winning(), 2, 3, Priority::Critical, None))
        .unwrap();
    for j in [&normal, &critical] {
        let o = done(&e, &j.job_id).await;
        assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    }
    let calls = backend.calls.lock().unwrap().clone();
    for c in &calls {
        let urgent = c.iter().filter(|p| p.2).count();
        assert!(
            urgent == 0 || c.len() == 1,
            "a CRITICAL partition in a group: {calls:?}"
        );
        let markers: std::collections::BTreeSet<_> = c.iter().map(|p| p.0).collect();
        assert_eq!(markers.len(), 1, "one circuit a call: {calls:?}");
    }
    assert!(
        calls.iter().any(|c| c.len() > 1),
        "the NORMAL job's partitions were grouped: {calls:?}"
    );
}

#[tokio::test]
async fn a_backend_that_shares_nothing_gets_one_partition_a_call() {
    let s = shared();
    let (e, backend) = grouping_engine(&s, 1);
    let job = e
        .enqueue(request_of(porep(), 1, 5, Priority::Normal, None))
        .unwrap();
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Completed, "{}", o.error);
    let calls = backend.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 5);
    assert!(calls.iter().all(|c| c.len() == 1));
}
