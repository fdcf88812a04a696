//! Request ids over gRPC, as Curio uses them (`porep-<miner>-<sector>`,
//! `snap-...`, `wdpost-...`): the same id with a new payload gets a verified
//! proof of the new payload, whether the first job had finished (replaced)
//! or not (cancelled, its waiters told which request superseded it); the
//! same id with the same payload is still one job and one proof.
//!
//! The newest PoRep and SnapDeals payloads are another sector's (the
//! synthetic 2 KiB set's C1 and update, under the same miner and sector
//! numbers, as when Curio proves a sector again after a new C1): the proof
//! returned verifies against them and not against the first payload. The
//! payloads in between are the first one in Curio's C1 wrapper, or with
//! another `sector_number` (other digests); the WindowPoSt payloads are
//! different partitions.

mod support;

use base64::Engine as _;
use cuzk_core::{ProofKind, RawRequest};
use cuzk_proto::v1::{await_proof_response::Status, AwaitProofResponse, SubmitProofRequest};
use cuzk_server::convert::{raw_request, submit_request};
use support::*;

async fn submit(c: &mut cuzk_server::Client, r: &SubmitProofRequest) -> (String, bool) {
    let s = c
        .submit_proof(r.clone())
        .await
        .expect("accepted")
        .into_inner();
    (s.job_id, s.queue_position == 0)
}

/// Verifies `proof` against the public inputs of `r`, independently of the
/// daemon's own check (filecoin-proofs' verifiers on the decoded request).
fn verifies(r: &SubmitProofRequest, proof: &[u8]) -> bool {
    let req = raw_request(r.clone())
        .validate(u64::MAX)
        .expect("the request is valid");
    cuzk_core::verify::verify_proof(&req, proof).unwrap_or(false)
}

/// Polls until a job of `kind` is queued or running.
async fn wait_unfinished(c: &mut cuzk_server::Client, kind: ProofKind) {
    for _ in 0..3000 {
        let s = get_status(c).await;
        if s.queues
            .iter()
            .any(|q| q.proof_kind == kind.as_str() && q.pending + q.in_progress > 0)
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no unfinished {kind} job");
}

/// First payload proved to the end; a second payload under the same id
/// replaces it; while that one is unfinished (behind `blocker` if given,
/// for kinds that prove faster than a test can look) a third payload
/// cancels it and is proved.
async fn newest_wins(
    kind: ProofKind,
    id: &str,
    payloads: [SubmitProofRequest; 3],
    blocker: Option<SubmitProofRequest>,
) {
    let blocked = blocker.is_some();
    let d = start(|c| {
        if blocked {
            // The blocker holds the one prover worker: no CRITICAL lane
            // beside it.
            c.engine.critical_workers = 0;
        }
    })
    .await;
    let mut c = d.client().await;
    let [first, second, third] = payloads.map(|mut p| {
        p.request_id = id.to_string();
        p
    });
    // 1. Finished first job.
    let (job, _) = submit(&mut c, &first).await;
    assert_eq!(job, id);
    let r1 = await_job(&mut c, id).await;
    assert_eq!(status_of(&r1), Status::Completed, "{}", r1.error_message);
    // 2. Same id, new payload: not the old proof, a new job.
    if let Some(b) = blocker {
        submit(&mut c, &b).await;
    }
    submit(&mut c, &second).await;
    wait_unfinished(&mut c, kind).await;
    // Someone waits on the second job ...
    let mut waiter_client = d.client().await;
    let id_owned = id.to_string();
    let waiter = tokio::spawn(async move { await_job(&mut waiter_client, &id_owned).await });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // 3. ... when a third payload arrives under the id.
    submit(&mut c, &third).await;
    let cancelled: AwaitProofResponse = waiter.await.unwrap();
    assert_eq!(
        status_of(&cancelled),
        Status::Cancelled,
        "{}",
        cancelled.error_message
    );
    assert!(
        cancelled.error_message.contains("superseded")
            && cancelled.error_message.contains(&format!("{id:?}")),
        "{}",
        cancelled.error_message
    );
    let r3 = await_job(&mut c, id).await;
    assert_eq!(status_of(&r3), Status::Completed, "{}", r3.error_message);
    assert_ne!(r3.proof, r1.proof, "a new proof, not the first job's");
    assert!(
        verifies(&third, &r3.proof),
        "the proof is of the newest payload"
    );
    assert!(
        !verifies(&first, &r3.proof),
        "the newest proof also verified against the first payload"
    );
    // The same (newest) payload again: the same job, no new proof.
    let before = get_status(&mut c).await.total_proofs_completed;
    submit(&mut c, &third).await;
    let again = await_job(&mut c, id).await;
    assert_eq!(again.proof, r3.proof);
    let s = get_status(&mut c).await;
    assert_eq!(s.total_proofs_completed, before, "proved exactly once");
    assert_eq!(
        s.total_proofs_completed,
        2 + u64::from(blocked),
        "first and newest (and the blocker); the cancelled one never completed"
    );
    let metrics = c
        .get_metrics(cuzk_proto::v1::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    for old_job in ["finished", "unfinished"] {
        let line = format!(
            "cuzk_requests_superseded_total{{kind=\"{}\",old_job=\"{old_job}\"}} 1",
            kind.as_str()
        );
        assert!(metrics.contains(&line), "{line} in\n{metrics}");
    }
    d.stop().await;
}

fn wrapped_c1(mut r: RawRequest) -> RawRequest {
    let wrapper = serde_json::json!({
        "SectorNum": r.sector_number,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&r.vanilla_proof),
        "SectorSize": 2048,
    });
    r.vanilla_proof = serde_json::to_vec(&wrapper).unwrap();
    r
}

#[tokio::test(flavor = "multi_thread")]
async fn porep_same_id_new_payload() {
    let raw = fixtures().request(ProofKind::PoRep).unwrap();
    let new_c1 = synthetic().request(ProofKind::PoRep).unwrap();
    assert_eq!(
        (raw.miner_id, raw.sector_number),
        (new_c1.miner_id, new_c1.sector_number)
    );
    newest_wins(
        ProofKind::PoRep,
        "porep-1000-1",
        [
            submit_request(raw.clone()),
            submit_request(wrapped_c1(raw)),
            submit_request(new_c1),
        ],
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn snap_same_id_new_payload() {
    let raw = fixtures().request(ProofKind::SnapDeals).unwrap();
    let new_update = synthetic().request(ProofKind::SnapDeals).unwrap();
    assert_eq!(raw.sector_number, new_update.sector_number);
    let renumbered = RawRequest {
        sector_number: 20,
        ..raw.clone()
    };
    newest_wins(
        ProofKind::SnapDeals,
        "snap-1000-2",
        [
            submit_request(raw),
            submit_request(renumbered),
            submit_request(new_update),
        ],
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn window_post_same_id_new_payload() {
    let f = fixtures();
    let p0 = submit_request(f.deadline_request(0, 0).unwrap());
    let p1 = submit_request(f.deadline_request(0, 1).unwrap());
    let single = submit_request(f.request(ProofKind::WindowPost).unwrap());
    // A WinningPoSt (CRITICAL) keeps the second WindowPoSt queued.
    let blocker = submit_request(f.request(ProofKind::WinningPost).unwrap());
    newest_wins(
        ProofKind::WindowPost,
        "wdpost-1000-0",
        [p0, single, p1],
        Some(blocker),
    )
    .await;
}
