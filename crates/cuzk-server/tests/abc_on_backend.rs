//! A prover backend that evaluates a, b and c itself (as the CUDA backend
//! does on the device) is given witnesses without them once the shape's
//! constraint system is resident: the partition's reservation leaves them
//! out, the backend evaluates them from the matrices the witness carries,
//! and the proofs verify with filecoin-proofs' verifier. A shape recorded
//! before is loaded ahead of its first partition, so none carries them.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use blstrs::Scalar;
use cuzk_core::ProofKind;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_prover::{
    CpuBackend, HostBytes, PartitionWitness, Proof, ProveStats, ProverBackend, ProverError, SrsRef,
    WitnessSize,
};
use support::*;

/// The CPU backend, saying it evaluates a, b and c, counting the
/// witnesses that came with and without them.
#[derive(Default)]
struct Deferring {
    deferred: AtomicUsize,
    evaluated: AtomicUsize,
}

impl ProverBackend for Deferring {
    fn name(&self) -> String {
        "cpu-deferring".into()
    }
    fn host_bytes(&self, size: &WitnessSize) -> HostBytes {
        CpuBackend.host_bytes(size)
    }
    fn evaluates_abc(&self, _: &WitnessSize) -> bool {
        true
    }
    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        for w in witnesses.iter() {
            let n = if w.abc_deferred() {
                assert!(w.a.is_empty() && w.b.is_empty() && w.c.is_empty());
                &self.deferred
            } else {
                &self.evaluated
            };
            n.fetch_add(1, Ordering::Relaxed);
        }
        CpuBackend.prove_with(witnesses, srs, r, s, abc_freed)
    }
}

/// Removes the constraint systems recorded beside the fixtures'
/// parameters (the daemon records them there again; the parameter
/// directory is one per process, so the test cannot have its own).
fn forget_recordings() {
    let dir = cuzk_core::r1cs_manager::dir_for(&fixtures().params_dir());
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("removing {}: {e}", dir.display()),
    }
}

/// Proves `kinds` one after another through a daemon with
/// `backend`; each proof verified.
async fn prove_each(backend: &Arc<Deferring>, kinds: &[ProofKind]) {
    let d = start_on(|_| {}, Some(vec![backend.clone()])).await;
    let mut c = d.client().await;
    for &kind in kinds {
        let job = c
            .submit_proof(request(kind))
            .await
            .expect("submit")
            .into_inner()
            .job_id;
        let r = await_job(&mut c, &job).await;
        assert_eq!(
            status_of(&r),
            Status::Completed,
            "{kind}: {}",
            r.error_message
        );
        assert!(
            fixtures().verify(kind, &r.proof).expect("verifier runs"),
            "{kind}: filecoin-proofs-api rejects the proof"
        );
    }
    d.stop().await;
}

fn counts(backend: &Deferring) -> (usize, usize) {
    (
        backend.deferred.load(Ordering::Relaxed),
        backend.evaluated.load(Ordering::Relaxed),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn witnesses_without_abc_prove_and_verify() {
    forget_recordings();
    // The first job of each shape records its constraint system (its first
    // partition is synthesized with a, b and c); the second finds it
    // resident.
    let backend = Arc::new(Deferring::default());
    let kinds = [ProofKind::PoRep, ProofKind::PoRep, ProofKind::WinningPost];
    prove_each(&backend, &kinds).await;
    let (deferred, evaluated) = counts(&backend);
    assert!(
        evaluated >= 2,
        "first partitions of each shape: {evaluated}"
    );
    assert!(deferred >= 1, "later partitions: {deferred}");

    // A daemon started later on the same parameters loads the recorded
    // systems before its first partitions: none of them carries a, b and c.
    let backend = Arc::new(Deferring::default());
    prove_each(&backend, &[ProofKind::PoRep, ProofKind::WinningPost]).await;
    let (deferred, evaluated) = counts(&backend);
    assert_eq!(evaluated, 0, "with the systems recorded before");
    assert!(deferred >= 2, "every partition deferred: {deferred}");
}
