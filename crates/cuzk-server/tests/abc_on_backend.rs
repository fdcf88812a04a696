//! A prover backend that evaluates a, b and c itself (as the CUDA backend
//! does on the device) is given witnesses without them once the shape's
//! constraint system is resident: the partition's reservation leaves them
//! out, the backend evaluates them from the matrices the witness carries,
//! and the proofs verify with filecoin-proofs' verifier.

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

#[tokio::test(flavor = "multi_thread")]
async fn witnesses_without_abc_prove_and_verify() {
    let backend = Arc::new(Deferring::default());
    let d = start_on(|_| {}, Some(vec![backend.clone()])).await;
    let mut c = d.client().await;
    // The first job records the constraint system (its first partition
    // is synthesized with a, b and c); the second finds it resident.
    for kind in [ProofKind::PoRep, ProofKind::PoRep, ProofKind::WinningPost] {
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
    let (deferred, evaluated) = (
        backend.deferred.load(Ordering::Relaxed),
        backend.evaluated.load(Ordering::Relaxed),
    );
    assert!(
        evaluated >= 2,
        "first partitions of each shape: {evaluated}"
    );
    assert!(deferred >= 1, "later partitions: {deferred}");
    d.stop().await;
}
