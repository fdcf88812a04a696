//! End-to-end over gRPC with real proofs (2 KiB fixtures, CPU prover): every
//! kind proves and verifies with filecoin-proofs-api, request ids are
//! idempotent, priorities order the queue, awaits time out, queued jobs cancel.

mod support;

use std::sync::{Arc, Mutex};

use cuzk_core::ProofKind;
use cuzk_proto::v1::{
    await_proof_response::Status, AwaitProofRequest, CancelProofRequest, GetMetricsRequest,
};
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn all_four_kinds_prove_and_verify() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let kinds = [
        ProofKind::WinningPost,
        ProofKind::WindowPost,
        ProofKind::SnapDeals,
        ProofKind::PoRep,
    ];
    let mut jobs = Vec::new();
    for kind in kinds {
        let r = c
            .submit_proof(request(kind))
            .await
            .expect("submit")
            .into_inner();
        assert!(!r.job_id.is_empty());
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
        assert!(r.error_message.is_empty());
        assert_eq!(r.proof.len() % 192, 0, "{kind}: whole Groth16 proofs");
        assert!(!r.proof.is_empty());
        assert!(
            r.total_ms >= r.prove_ms + r.verify_ms,
            "{kind}: timings add up"
        );
        assert!(r.prove_ms > 0, "{kind}: proving takes time");
        // Independent check: filecoin-proofs-api's verifier, with the public
        // inputs recorded when the fixtures were sealed.
        assert!(
            fixtures().verify(kind, &r.proof).expect("verifier runs"),
            "{kind}: filecoin-proofs-api rejects the proof"
        );
        // And a corrupted proof is rejected by the same check.
        let mut bad = r.proof.clone();
        bad[100] ^= 0x01;
        assert!(
            !fixtures().verify(kind, &bad).unwrap_or(false),
            "{kind}: a corrupted proof must not verify"
        );
    }
    let s = get_status(&mut c).await;
    assert_eq!(s.total_proofs_completed, 4);
    assert_eq!(s.total_proofs_failed, 0);
    // Proved through compiled constraint systems (the default path): one
    // per shape, resident, with its bytes.
    let mut shapes: Vec<_> = s
        .constraint_systems
        .iter()
        .map(|c| c.shape.as_str())
        .collect();
    shapes.sort();
    assert_eq!(shapes.len(), 4, "{:?}", s.constraint_systems);
    for (prefix, shape) in ["porep-", "post-", "post-", "snap-"].iter().zip(&shapes) {
        assert!(shape.starts_with(prefix), "{shapes:?}");
    }
    for cs in &s.constraint_systems {
        assert!(
            cs.size_bytes > 0 && cs.constraints > 0 && cs.uses >= 1,
            "{cs:?}"
        );
    }
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn same_request_id_twice_is_one_job_and_one_proof() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("cuzk.sock");
    let d = start(|c| c.daemon.listen = format!("unix://{}", sock.display())).await;
    assert!(d.addr.starts_with("unix://"));
    let mut c = d.client().await;
    let mut req = request(ProofKind::WindowPost);
    req.request_id = "wpost-1000-1-p0".into();
    let a = c.submit_proof(req.clone()).await.unwrap().into_inner();
    let b = c.submit_proof(req.clone()).await.unwrap().into_inner();
    assert_eq!(a.job_id, "wpost-1000-1-p0");
    assert_eq!(a.job_id, b.job_id);
    let ra = await_job(&mut c, &a.job_id).await;
    assert_eq!(status_of(&ra), Status::Completed, "{}", ra.error_message);
    // A third submit after completion returns the finished proof at once.
    let again = c
        .prove(cuzk_proto::v1::ProveRequest { submit: Some(req) })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(again.proof, ra.proof);
    let s = get_status(&mut c).await;
    assert_eq!(s.total_proofs_completed, 1, "proved exactly once");
    let m = c
        .get_metrics(GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(
        m.prometheus_text
            .contains("cuzk_jobs_submitted_total{kind=\"window-post\"} 1"),
        "{}",
        m.prometheus_text
    );
    d.stop().await;
    assert!(!sock.exists(), "socket removed on stop");
}

#[tokio::test(flavor = "multi_thread")]
async fn critical_job_starts_before_queued_normal_jobs() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let submit = |kind: ProofKind, priority: i32| {
        let mut r = request(kind);
        r.priority = priority;
        r
    };
    // A long PoRep holds the prover; one NORMAL WindowPoSt gets synthesized
    // and waits in the (one-place) ready queue; then more arrive.
    let blocker = c
        .submit_proof(submit(ProofKind::PoRep, 2))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    wait_running(&mut c, ProofKind::PoRep).await;
    let n1 = c
        .submit_proof(submit(ProofKind::WindowPost, 2))
        .await
        .unwrap()
        .into_inner();
    wait_running(&mut c, ProofKind::WindowPost).await;
    let n2 = c
        .submit_proof(submit(ProofKind::WindowPost, 2))
        .await
        .unwrap()
        .into_inner();
    let n3 = c
        .submit_proof(submit(ProofKind::WindowPost, 2))
        .await
        .unwrap()
        .into_inner();
    let crit = c
        .submit_proof(submit(ProofKind::WindowPost, 4))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(n2.queue_position, 0);
    assert_eq!(n3.queue_position, 1);
    assert_eq!(
        crit.queue_position, 0,
        "CRITICAL is placed ahead of queued NORMAL jobs"
    );

    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waits = Vec::new();
    for (name, id) in [
        ("n1", n1.job_id),
        ("n2", n2.job_id),
        ("n3", n3.job_id),
        ("crit", crit.job_id),
    ] {
        let (order, mut c) = (order.clone(), d.client().await);
        waits.push(tokio::spawn(async move {
            let r = await_job(&mut c, &id).await;
            assert_eq!(
                status_of(&r),
                Status::Completed,
                "{name}: {}",
                r.error_message
            );
            order.lock().unwrap().push(name);
        }));
    }
    // Free the prover: the PoRep is cancelled mid-proof.
    c.cancel_proof(CancelProofRequest { job_id: blocker })
        .await
        .unwrap();
    for w in waits {
        w.await.unwrap();
    }
    // CRITICAL goes before the queued NORMALs, which keep their order. n1
    // had started: it is first if its partition was already synthesized,
    // second if it was still waiting for memory (it then gives way).
    let order = order.lock().unwrap().clone();
    assert!(
        order == ["n1", "crit", "n2", "n3"] || order == ["crit", "n1", "n2", "n3"],
        "{order:?}"
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn await_timeout_returns_timeout_and_job_continues() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let blocker = c
        .submit_proof(request(ProofKind::WindowPost))
        .await
        .unwrap()
        .into_inner();
    wait_running(&mut c, ProofKind::WindowPost).await;
    let queued = c
        .submit_proof(request(ProofKind::WindowPost))
        .await
        .unwrap()
        .into_inner();
    let r = c
        .await_proof(AwaitProofRequest {
            job_id: queued.job_id.clone(),
            timeout_ms: 50,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status_of(&r), Status::Timeout);
    assert!(r.proof.is_empty());
    let r = await_job(&mut c, &queued.job_id).await;
    assert_eq!(status_of(&r), Status::Completed, "{}", r.error_message);
    assert_eq!(
        status_of(&await_job(&mut c, &blocker.job_id).await),
        Status::Completed
    );
    let missing = c
        .await_proof(AwaitProofRequest {
            job_id: "no-such-job".into(),
            timeout_ms: 10,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_of_a_queued_job() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    // A PoRep proving and a WindowPoSt synthesized keep the third job queued.
    let blocker = c
        .submit_proof(request(ProofKind::PoRep))
        .await
        .unwrap()
        .into_inner();
    wait_running(&mut c, ProofKind::PoRep).await;
    let ready = c
        .submit_proof(request(ProofKind::WindowPost))
        .await
        .unwrap()
        .into_inner();
    wait_running(&mut c, ProofKind::WindowPost).await;
    // LOW, so it never overtakes the WindowPoSt (which may still be
    // waiting for memory and would give way to a more urgent job).
    let mut low = request(ProofKind::WinningPost);
    low.priority = 1;
    let queued = c.submit_proof(low).await.unwrap().into_inner();
    let r = c
        .cancel_proof(CancelProofRequest {
            job_id: queued.job_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!r.was_running);
    let r = await_job(&mut c, &queued.job_id).await;
    assert_eq!(status_of(&r), Status::Cancelled);
    assert!(r.proof.is_empty());
    // Cancelling again: the job has ended.
    let again = c
        .cancel_proof(CancelProofRequest {
            job_id: queued.job_id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(again.code(), tonic::Code::FailedPrecondition);
    // A running job can be cancelled too: it ends at once.
    let r = c
        .cancel_proof(CancelProofRequest {
            job_id: blocker.job_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.was_running);
    assert_eq!(
        status_of(&await_job(&mut c, &blocker.job_id).await),
        Status::Cancelled
    );
    assert_eq!(
        status_of(&await_job(&mut c, &ready.job_id).await),
        Status::Completed
    );
    let s = get_status(&mut c).await;
    assert_eq!(
        s.total_proofs_completed, 1,
        "only the WindowPoSt was proved"
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn window_post_partitions_verify_as_a_deadline() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let f = fixtures();
    let mut prove = async |req: cuzk_core::RawRequest| {
        let job = c
            .submit_proof(cuzk_server::convert::submit_request(req))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        await_job(&mut c, &job).await
    };
    for (dl, deadline) in f.manifest.window_deadlines.iter().enumerate() {
        let mut proofs = Vec::new();
        for k in 0..deadline.partitions.len() {
            let r = prove(f.deadline_request(dl, k).unwrap()).await;
            assert_eq!(
                status_of(&r),
                Status::Completed,
                "deadline {dl} partition {k}: {}",
                r.error_message
            );
            assert_eq!(r.proof.len(), 192);
            proofs.push(r.proof);
        }
        assert!(
            proofs.len() >= 2,
            "the deadline fixture has several partitions"
        );
        // filecoin-proofs-api's verifier accepts the partitions as one
        // deadline, and only in their order.
        assert!(f.verify_deadline(dl, &proofs).unwrap(), "deadline {dl}");
        let swapped: Vec<_> = proofs.iter().rev().cloned().collect();
        assert!(
            !f.verify_deadline(dl, &swapped).unwrap_or(false),
            "deadline {dl}"
        );
    }

    // Tampered public inputs are refused at submit (the challenges the
    // vanilla proofs open are checked against them), never proved:
    //  - V1 challenges depend on the partition index: partition 1's vanilla
    //    proofs claimed as partition 0;
    //  - any version: another challenge seed.
    let v1 = f
        .manifest
        .window_deadlines
        .iter()
        .position(|d| d.registered_proof == 5)
        .expect("a V1 deadline fixture");
    let mut wrong_index = f.deadline_request(v1, 1).unwrap();
    wrong_index.partition_index = 0;
    let mut wrong_seed = f.deadline_request(0, 1).unwrap();
    wrong_seed.randomness[0] ^= 1;
    for wrong in [wrong_index, wrong_seed] {
        let e = c
            .submit_proof(cuzk_server::convert::submit_request(wrong))
            .await
            .expect_err("refused at submit");
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{}", e.message());
        assert!(
            e.message().starts_with("vanilla_proofs[0]") && e.message().contains("challenge"),
            "{}",
            e.message()
        );
    }
    d.stop().await;
}
