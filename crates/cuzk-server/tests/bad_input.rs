//! Bad input over gRPC: each class of malformed request gets a clear error
//! (right status code, message naming the field), and the daemon keeps
//! answering afterwards.

mod support;

use bytesize::ByteSize;
use cuzk_core::ProofKind;
use cuzk_proto::v1::{await_proof_response::Status, SubmitProofRequest};
use support::*;
use tonic::Code;

/// Submits `req`, expects `code` with `needle` in the message, then checks
/// the daemon still answers.
async fn refused(c: &mut cuzk_server::Client, req: SubmitProofRequest, code: Code, needle: &str) {
    let e = c
        .submit_proof(req)
        .await
        .expect_err("request must be refused");
    assert_eq!(e.code(), code, "message: {}", e.message());
    assert!(
        e.message().contains(needle),
        "message {:?} should name {needle:?}",
        e.message()
    );
    get_status(c).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_vanilla_json_then_a_valid_request_still_proves() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let mut r = request(ProofKind::PoRep);
    r.vanilla_proof = b"{\"registered_proof\": \"StackedDrg2KiBV1_1\", oops".to_vec();
    refused(&mut c, r, Code::InvalidArgument, "vanilla_proof").await;
    let mut r = request(ProofKind::PoRep);
    r.vanilla_proof =
        b"{\"SectorNum\":1,\"Phase1Out\":\"not base64!\",\"SectorSize\":2048}".to_vec();
    refused(&mut c, r, Code::InvalidArgument, "vanilla_proof").await;
    // The daemon goes on proving.
    let ok = c
        .submit_proof(request(ProofKind::WindowPost))
        .await
        .unwrap()
        .into_inner();
    let r = await_job(&mut c, &ok.job_id).await;
    assert_eq!(status_of(&r), Status::Completed, "{}", r.error_message);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn truncated_vanilla_bytes() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let mut r = request(ProofKind::PoRep);
    let n = r.vanilla_proof.len();
    r.vanilla_proof.truncate(n / 2);
    refused(&mut c, r, Code::InvalidArgument, "vanilla_proof").await;
    for kind in [
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::SnapDeals,
    ] {
        let mut r = request(kind);
        let n = r.vanilla_proofs[0].len();
        r.vanilla_proofs[0].truncate(n - 7);
        refused(&mut c, r, Code::InvalidArgument, "vanilla_proofs[0]").await;
        // Trailing garbage is no better than missing bytes.
        let mut r = request(kind);
        r.vanilla_proofs[0].extend_from_slice(b"junk");
        refused(&mut c, r, Code::InvalidArgument, "vanilla_proofs[0]").await;
    }
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_registered_proof() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    for kind in ProofKind::ALL {
        let mut r = request(kind);
        r.registered_proof = 999;
        refused(&mut c, r, Code::InvalidArgument, "registered_proof").await;
    }
    let mut r = request(ProofKind::WindowPost);
    r.priority = 17;
    refused(&mut c, r, Code::InvalidArgument, "priority").await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kind_that_does_not_match_registered_proof_or_sector_size() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    // A WindowPoSt proof type sent as WinningPoSt, and the reverse.
    let mut r = request(ProofKind::WindowPost);
    r.proof_kind = 4;
    refused(&mut c, r, Code::InvalidArgument, "registered_proof").await;
    let mut r = request(ProofKind::WinningPost);
    r.proof_kind = 3;
    refused(&mut c, r, Code::InvalidArgument, "registered_proof").await;
    // 2 KiB proofs claiming another sector size.
    for kind in ProofKind::ALL {
        let mut r = request(kind);
        r.sector_size = 32 << 30;
        refused(&mut c, r, Code::InvalidArgument, "sector_size").await;
    }
    // WinningPoSt vanilla proofs sent as a WindowPoSt request: the decoded
    // proof does not fit the circuit's shape.
    let mut r = request(ProofKind::WindowPost);
    r.vanilla_proofs = request(ProofKind::WinningPost).vanilla_proofs;
    let e = c.submit_proof(r).await;
    if let Err(e) = e {
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    } else {
        // It decodes (same sector shape); then it must fail, never "succeed".
        let job = e.unwrap().into_inner().job_id;
        let r = await_job(&mut c, &job).await;
        assert_eq!(
            status_of(&r),
            Status::Failed,
            "a mismatched proof cannot complete"
        );
    }
    get_status(&mut c).await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn empty_fields() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let mut r = request(ProofKind::WindowPost);
    r.proof_kind = 0;
    refused(&mut c, r, Code::InvalidArgument, "proof_kind").await;
    let mut r = request(ProofKind::PoRep);
    r.vanilla_proof.clear();
    refused(&mut c, r, Code::InvalidArgument, "vanilla_proof").await;
    for kind in [
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::SnapDeals,
    ] {
        let mut r = request(kind);
        r.vanilla_proofs.clear();
        refused(&mut c, r, Code::InvalidArgument, "vanilla_proofs").await;
    }
    let mut r = request(ProofKind::WinningPost);
    r.randomness.clear();
    refused(&mut c, r, Code::InvalidArgument, "randomness").await;
    let mut r = request(ProofKind::WindowPost);
    r.randomness = vec![0xff; 32];
    refused(&mut c, r, Code::InvalidArgument, "randomness").await;
    for field in ["comm_r_old", "comm_r_new", "comm_d_new"] {
        let mut r = request(ProofKind::SnapDeals);
        match field {
            "comm_r_old" => r.comm_r_old.clear(),
            "comm_r_new" => r.comm_r_new.truncate(31),
            _ => r.comm_d_new.clear(),
        }
        refused(&mut c, r, Code::InvalidArgument, field).await;
    }
    let e = c
        .await_proof(cuzk_proto::v1::AwaitProofRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("job_id"));
    let e = c
        .prove(cuzk_proto::v1::ProveRequest { submit: None })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("submit"));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_over_the_size_limit() {
    let d = start(|c| c.engine.max_vanilla_bytes = ByteSize::kib(16)).await;
    let mut c = d.client().await;
    // The C1 output of a 2 KiB sector is larger than 16 KiB.
    let r = request(ProofKind::PoRep);
    assert!(r.vanilla_proof.len() > 16 << 10);
    refused(&mut c, r, Code::InvalidArgument, "max_vanilla_bytes").await;
    let mut r = request(ProofKind::WindowPost);
    r.vanilla_proofs = vec![vec![0u8; 6 << 10]; 3];
    r.vanilla_proofs
        .push(request(ProofKind::WindowPost).vanilla_proofs[0].clone());
    refused(&mut c, r, Code::InvalidArgument, "vanilla_proofs").await;
    // Beyond the transport limit (the configured limit + 16 MiB) the gRPC
    // layer refuses the message before it is decoded.
    let mut r = request(ProofKind::PoRep);
    r.vanilla_proof = vec![b' '; 17 << 20];
    let e = c.submit_proof(r).await.unwrap_err();
    assert_eq!(e.code(), Code::OutOfRange, "{}", e.message());
    assert!(e.message().contains("too large"), "{}", e.message());
    get_status(&mut c).await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_parameters_are_a_failed_precondition() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    // 8 MiB WinningPoSt: a valid proof type whose parameters the 2 KiB
    // fixtures do not have.
    let mut r = request(ProofKind::WinningPost);
    r.registered_proof = 1;
    r.sector_size = 8 << 20;
    refused(&mut c, r, Code::FailedPrecondition, "winning-8m").await;
    let mut r = request(ProofKind::SnapDeals);
    r.registered_proof = 3;
    r.sector_size = 0; // unset: taken from the registered proof
    refused(&mut c, r, Code::FailedPrecondition, "snap-32g").await;
    d.stop().await;
}

/// The request of issue 16: a WindowPoSt partition whose index no deadline
/// can have, through `Prove` as Curio calls it. It is refused at once; the
/// daemon goes on answering and proving.
#[tokio::test(flavor = "multi_thread")]
async fn huge_partition_index_is_refused_and_the_daemon_lives() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let mut r = request(ProofKind::WindowPost);
    r.partition_index = 4_000_000_000;
    let e = c
        .prove(cuzk_proto::v1::ProveRequest {
            submit: Some(r.clone()),
        })
        .await
        .expect_err("refused");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    assert!(
        e.message().starts_with("partition_index")
            && e.message().contains("4000000000")
            && e.message().contains("3000"),
        "{}",
        e.message()
    );
    refused(&mut c, r, Code::InvalidArgument, "partition_index").await;
    let s = get_status(&mut c).await;
    assert_eq!(s.total_proofs_completed + s.total_proofs_failed, 0);
    let ok = c
        .submit_proof(request(ProofKind::WindowPost))
        .await
        .unwrap()
        .into_inner();
    let r = await_job(&mut c, &ok.job_id).await;
    assert_eq!(status_of(&r), Status::Completed, "{}", r.error_message);
    // The largest await timeout a client can send sizes a timer, nothing
    // else: it answers.
    let r = c
        .await_proof(cuzk_proto::v1::AwaitProofRequest {
            job_id: ok.job_id.clone(),
            timeout_ms: u64::MAX,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status_of(&r), Status::Completed);
    d.stop().await;
}

/// Inputs that cannot give a valid proof are refused at submit, before any
/// synthesis: a PoRep whose sector or miner is not the C1's, and a SnapDeals
/// with comm_r_old and comm_r_new swapped (named, not a panic text).
#[tokio::test(flavor = "multi_thread")]
async fn inconsistent_inputs_are_refused_before_synthesis() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let mut r = request(ProofKind::PoRep);
    r.sector_number += 1;
    refused(&mut c, r, Code::InvalidArgument, "sector_number").await;
    let mut r = request(ProofKind::PoRep);
    r.miner_id += 1;
    refused(&mut c, r, Code::InvalidArgument, "miner_id").await;
    let mut r = request(ProofKind::SnapDeals);
    std::mem::swap(&mut r.comm_r_old, &mut r.comm_r_new);
    let e = c.submit_proof(r).await.expect_err("refused");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    assert!(
        e.message()
            .starts_with("comm_r_old, comm_r_new: are swapped"),
        "{}",
        e.message()
    );
    assert!(!e.message().contains("panicked"), "{}", e.message());
    // Nothing was queued, started or proved.
    let s = get_status(&mut c).await;
    assert!(s
        .queues
        .iter()
        .all(|q| q.pending == 0 && q.in_progress == 0));
    assert_eq!(s.total_proofs_completed + s.total_proofs_failed, 0);
    let m = c
        .get_metrics(cuzk_proto::v1::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    assert!(!m.contains("cuzk_jobs_submitted_total{"), "{m}");
    d.stop().await;
}
