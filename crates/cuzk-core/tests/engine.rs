//! Engine behaviour with a scripted prover: queue order, idempotency,
//! cancellation, timeouts, failures and shutdown. No real proving, so these
//! run in milliseconds and every interleaving is forced, not hoped for.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cuzk_core::config::EngineConfig;
use cuzk_core::engine::SubmitError;
use cuzk_core::{
    AwaitOutcome, Engine, JobError, JobStatus, Priority, ProofInput, ProofRequest, ProofType,
    ProveOutput, Prover,
};
use filecoin_proofs_api::{RegisteredPoStProof, SectorId};

/// What the scripted prover does for a job, keyed by its marker byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    Prove,
    FailProve,
    Panic,
    BadProof,
}

/// A prover that records the order it is called in, can be held at a gate,
/// and follows a per-request script.
#[derive(Default)]
struct Scripted {
    log: Mutex<Vec<u8>>,
    scripts: Mutex<HashMap<u8, Script>>,
    gate: Mutex<bool>,
    gate_cv: Condvar,
    /// Signalled when a job enters prove() (its marker joins `log`).
    entered: Condvar,
}

impl Scripted {
    fn held() -> Arc<Scripted> {
        let s = Arc::new(Scripted::default());
        *s.gate.lock().unwrap() = true;
        s
    }
    fn release(&self) {
        *self.gate.lock().unwrap() = false;
        self.gate_cv.notify_all();
    }
    fn script(&self, marker: u8, s: Script) {
        self.scripts.lock().unwrap().insert(marker, s);
    }
    fn log(&self) -> Vec<u8> {
        self.log.lock().unwrap().clone()
    }
    /// Blocks until the job with `marker` has entered prove().
    fn wait_inside(&self, marker: u8) {
        let g = self.log.lock().unwrap();
        let (_g, timeout) = self
            .entered
            .wait_timeout_while(g, Duration::from_secs(10), |log| !log.contains(&marker))
            .unwrap();
        assert!(!timeout.timed_out(), "job {marker} never started");
    }
}

fn marker(req: &ProofRequest) -> u8 {
    match &req.input {
        ProofInput::WindowPost { randomness, .. } => randomness[0],
        _ => 0,
    }
}

impl Prover for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }
    fn prove(&self, req: &ProofRequest) -> Result<ProveOutput, String> {
        let m = marker(req);
        self.log.lock().unwrap().push(m);
        self.entered.notify_all();
        let g = self.gate.lock().unwrap();
        drop(self.gate_cv.wait_while(g, |held| *held).unwrap());
        let script = self.scripts.lock().unwrap().get(&m).copied();
        let proof = |p| {
            Ok(ProveOutput {
                proof: p,
                ..Default::default()
            })
        };
        match script.unwrap_or(Script::Prove) {
            Script::Prove => proof(vec![m; 192]),
            Script::BadProof => proof(vec![0xff; 192]),
            Script::FailProve => Err(format!("scripted failure of {m}")),
            Script::Panic => panic!("scripted panic of {m}"),
        }
    }
    fn verify(&self, req: &ProofRequest, proof: &[u8]) -> Result<bool, String> {
        Ok(proof == vec![marker(req); 192].as_slice())
    }
}

/// A checked-looking WindowPoSt request whose randomness[0] is its marker.
fn request(marker: u8, priority: Priority, request_id: Option<&str>) -> ProofRequest {
    let mut randomness = [0u8; 32];
    randomness[0] = marker;
    ProofRequest {
        request_id: request_id.map(str::to_string),
        priority,
        proof_type: ProofType::Window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2),
        input: ProofInput::WindowPost {
            randomness,
            prover_id: [0; 32],
            partition_index: 0,
            vanilla_proofs: vec![vec![1, 2, 3]],
            sectors: vec![(SectorId::from(1), [0; 32])],
        },
        vanilla_bytes: 3,
    }
}

fn engine(prover: Arc<Scripted>, workers: usize) -> Engine {
    Engine::start(
        EngineConfig {
            workers,
            ..Default::default()
        },
        prover,
    )
}

async fn done(engine: &Engine, job_id: &str) -> Arc<cuzk_core::JobOutcome> {
    match engine
        .await_job(job_id, Some(Duration::from_secs(20)))
        .await
        .unwrap()
    {
        AwaitOutcome::Done(o) => o,
        AwaitOutcome::Timeout => panic!("job {job_id} did not finish"),
    }
}

#[tokio::test]
async fn critical_job_overtakes_queued_normal_jobs() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    let first = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    p.wait_inside(1);
    let n2 = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    let n3 = e.enqueue(request(3, Priority::Normal, None)).unwrap();
    let low = e.enqueue(request(4, Priority::Low, None)).unwrap();
    let high = e.enqueue(request(5, Priority::High, None)).unwrap();
    let crit = e.enqueue(request(6, Priority::Critical, None)).unwrap();
    assert_eq!(n2.queue_position, 0);
    assert_eq!(n3.queue_position, 1);
    assert_eq!(crit.queue_position, 0, "CRITICAL goes to the head of the queue");
    p.release();
    for s in [&first, &n2, &n3, &low, &high, &crit] {
        assert_eq!(done(&e, &s.job_id).await.status, JobStatus::Completed);
    }
    assert_eq!(p.log(), vec![1, 6, 5, 2, 3, 4]);
}

#[tokio::test]
async fn same_request_id_is_one_job_and_one_proof() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    let a = e.enqueue(request(7, Priority::Normal, Some("sector-7"))).unwrap();
    let b = e.enqueue(request(7, Priority::Normal, Some("sector-7"))).unwrap();
    assert_eq!(a.job_id, "sector-7");
    assert_eq!(b.job_id, a.job_id);
    assert!(!a.existing);
    assert!(b.existing);
    p.release();
    let oa = done(&e, &a.job_id).await;
    // After completion, a resubmit still returns the finished job.
    let c = e.enqueue(request(7, Priority::Normal, Some("sector-7"))).unwrap();
    assert!(c.existing);
    assert_eq!(done(&e, &c.job_id).await.proof, oa.proof);
    assert_eq!(p.log(), vec![7], "proved exactly once");
    assert_eq!(e.status().completed, 1);
}

#[tokio::test]
async fn failed_request_id_is_proved_again_on_resubmit() {
    let p = Arc::new(Scripted::default());
    p.script(8, Script::FailProve);
    let e = engine(p.clone(), 1);
    let a = e.enqueue(request(8, Priority::Normal, Some("retry-me"))).unwrap();
    let oa = done(&e, &a.job_id).await;
    assert_eq!(oa.status, JobStatus::Failed);
    assert!(oa.error.contains("scripted failure of 8"), "{}", oa.error);
    p.script(8, Script::Prove);
    let b = e.enqueue(request(8, Priority::Normal, Some("retry-me"))).unwrap();
    assert!(!b.existing);
    assert_eq!(done(&e, &b.job_id).await.status, JobStatus::Completed);
    assert_eq!(p.log(), vec![8, 8]);
}

#[tokio::test]
async fn request_id_of_another_kind_is_a_conflict() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    e.enqueue(request(9, Priority::Normal, Some("shared-id"))).unwrap();
    let mut other = request(9, Priority::Normal, Some("shared-id"));
    other.proof_type = ProofType::Winning(RegisteredPoStProof::StackedDrgWinning2KiBV1);
    let err = e.enqueue(other).unwrap_err();
    assert!(matches!(err, SubmitError::RequestIdConflict { .. }), "{err}");
    p.release();
}

#[tokio::test]
async fn cancel_queued_job_never_proves_it() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    let first = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    p.wait_inside(1);
    let queued = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    assert_eq!(e.cancel(&queued.job_id), Ok(false));
    let o = done(&e, &queued.job_id).await;
    assert_eq!(o.status, JobStatus::Cancelled);
    assert!(o.proof.is_empty());
    assert!(matches!(
        e.cancel(&queued.job_id),
        Err(JobError::AlreadyEnded { .. })
    ));
    p.release();
    assert_eq!(done(&e, &first.job_id).await.status, JobStatus::Completed);
    assert_eq!(p.log(), vec![1]);
    assert!(matches!(e.cancel("no-such-job"), Err(JobError::NotFound(_))));
}

#[tokio::test]
async fn cancel_running_job_discards_its_proof() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    let job = e.enqueue(request(3, Priority::Normal, None)).unwrap();
    p.wait_inside(3);
    assert_eq!(e.cancel(&job.job_id), Ok(true));
    p.release();
    let o = done(&e, &job.job_id).await;
    assert_eq!(o.status, JobStatus::Cancelled);
    assert!(o.proof.is_empty());
    assert_eq!(e.status().cancelled, 1);
}

#[tokio::test]
async fn await_times_out_and_the_job_goes_on() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    let job = e.enqueue(request(4, Priority::Normal, None)).unwrap();
    let r = e
        .await_job(&job.job_id, Some(Duration::from_millis(20)))
        .await
        .unwrap();
    assert!(matches!(r, AwaitOutcome::Timeout));
    p.release();
    assert_eq!(done(&e, &job.job_id).await.status, JobStatus::Completed);
    assert!(matches!(
        e.await_job("nope", None).await,
        Err(JobError::NotFound(_))
    ));
}

#[tokio::test]
async fn bad_proof_is_failed_and_panics_do_not_kill_workers() {
    let p = Arc::new(Scripted::default());
    p.script(5, Script::BadProof);
    p.script(6, Script::Panic);
    let e = engine(p.clone(), 1);
    let bad = e.enqueue(request(5, Priority::Normal, None)).unwrap();
    let boom = e.enqueue(request(6, Priority::Normal, None)).unwrap();
    let fine = e.enqueue(request(7, Priority::Normal, None)).unwrap();
    let o = done(&e, &bad.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("failed verification"), "{}", o.error);
    assert!(o.proof.is_empty(), "an unverified proof is never returned");
    let o = done(&e, &boom.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("scripted panic of 6"), "{}", o.error);
    assert_eq!(done(&e, &fine.job_id).await.status, JobStatus::Completed);
    let s = e.status();
    assert_eq!((s.completed, s.failed), (1, 2));
}

#[tokio::test]
async fn timings_are_consistent() {
    let p = Arc::new(Scripted::default());
    let e = engine(p.clone(), 1);
    let job = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    let t = done(&e, &job.job_id).await.timings;
    assert!(t.total >= t.queue_wait + t.prove + t.verify);
}

#[tokio::test]
async fn several_workers_prove_at_once() {
    let p = Scripted::held();
    let e = engine(p.clone(), 2);
    let a = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    let b = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    p.wait_inside(1);
    // Both are taken by the two workers while the gate is held.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while p.log().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(p.log().len(), 2);
    let s = e.status();
    assert_eq!(s.workers.iter().flatten().count(), 2);
    p.release();
    done(&e, &a.job_id).await;
    done(&e, &b.job_id).await;
}

#[tokio::test]
async fn shutdown_fails_queued_jobs_and_refuses_new_ones() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    let running = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    p.wait_inside(1);
    let queued = e.enqueue(request(2, Priority::Normal, None)).unwrap();
    let e2 = e.clone();
    let stop = tokio::spawn(async move { e2.shutdown(Duration::from_secs(20)).await });
    let o = done(&e, &queued.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("shutting down"), "{}", o.error);
    // New work is refused while the running job finishes.
    assert_eq!(
        e.enqueue(request(3, Priority::Normal, None)),
        Err(SubmitError::ShuttingDown)
    );
    p.release();
    stop.await.unwrap();
    assert_eq!(done(&e, &running.job_id).await.status, JobStatus::Completed);
    assert_eq!(p.log(), vec![1]);
}

#[tokio::test]
async fn shutdown_grace_fails_a_job_that_runs_too_long() {
    let p = Scripted::held();
    let e = engine(p.clone(), 1);
    let running = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    p.wait_inside(1);
    e.shutdown(Duration::from_millis(50)).await;
    let o = done(&e, &running.job_id).await;
    assert_eq!(o.status, JobStatus::Failed);
    assert!(o.error.contains("stopped before"), "{}", o.error);
    p.release();
}

#[tokio::test]
async fn metrics_count_jobs() {
    let p = Arc::new(Scripted::default());
    let e = engine(p.clone(), 1);
    let job = e.enqueue(request(1, Priority::Normal, None)).unwrap();
    done(&e, &job.job_id).await;
    let text = e.metrics_text();
    assert!(
        text.contains("cuzk_jobs_finished_total{kind=\"window-post\",outcome=\"completed\"} 1"),
        "{text}"
    );
    assert!(text.contains("cuzk_queue_depth{kind=\"window-post\"} 0"), "{text}");
}
