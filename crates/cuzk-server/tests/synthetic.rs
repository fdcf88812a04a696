//! End-to-end over gRPC on synthetic 2 KiB sectors (made without sealing,
//! like the sectors of every larger size): the daemon proves all four kinds
//! from them, and filecoin-proofs-api's verifiers accept the proofs against
//! the public inputs the synthetic set recorded.

mod support;

use cuzk_core::ProofKind;
use cuzk_fixtures::{ensure_synthetic, SectorSize, SyntheticSpec};
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_server::convert::submit_request;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn synthetic_sectors_prove_and_verify_for_every_kind() {
    // The sealed set makes the 2 KiB parameters the synthetic set shares.
    let sealed = fixtures();
    let spec = SyntheticSpec::new(SectorSize::S2KiB);
    assert_eq!(spec.params, sealed.params_dir());
    let synthetic =
        ensure_synthetic(&spec, &mut |p| eprintln!("fixtures: {p:?}")).expect("synthetic fixtures");
    assert_eq!(synthetic.manifest.synthetic, Some(spec.seed));

    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let mut jobs = Vec::new();
    for kind in ProofKind::ALL {
        let raw = synthetic.request(kind).expect("synthetic request");
        let r = c
            .submit_proof(submit_request(raw))
            .await
            .expect("submit")
            .into_inner();
        jobs.push((kind, r.job_id));
    }
    for (kind, job_id) in jobs {
        let r = await_job(&mut c, &job_id).await;
        assert_eq!(
            status_of(&r),
            Status::Completed,
            "{kind}: {}",
            r.error_message
        );
        assert!(
            synthetic.verify(kind, &r.proof).expect("verifier runs"),
            "{kind}: filecoin-proofs-api rejects the proof of a synthetic sector"
        );
        // The sealed set's public inputs are another sector's: no match.
        assert!(
            !sealed.verify(kind, &r.proof).unwrap_or(false),
            "{kind}: the proof also verified against the sealed sector's inputs"
        );
    }
    d.stop().await;
}
