//! The `cuzk.v1.ProvingEngine` service over a cuzk-core [`Engine`].

use std::time::Duration;

use cuzk_core::{AwaitOutcome, Engine};
use cuzk_proto::v1::*;
use cuzk_proto::ProvingEngine;
use tonic::{Request, Response, Status};

use crate::convert::{
    await_response, job_status, raw_request, srs_status, submit_status, timeout_response,
};
use cuzk_core::Tier;

/// The gRPC service. Cloning shares the engine.
#[derive(Clone)]
pub struct ProvingService {
    engine: Engine,
}

impl ProvingService {
    pub fn new(engine: Engine) -> Self {
        ProvingService { engine }
    }

    async fn submit(&self, req: SubmitProofRequest) -> Result<SubmitProofResponse, Status> {
        let engine = self.engine.clone();
        let raw = raw_request(req);
        // Decoding vanilla proofs is CPU work: keep it off the reactor.
        let submission = tokio::task::spawn_blocking(move || engine.submit(&raw))
            .await
            .map_err(|e| Status::internal(format!("submit task failed: {e}")))?
            .map_err(submit_status)?;
        Ok(SubmitProofResponse {
            job_id: submission.job_id,
            queue_position: submission.queue_position,
            assigned_gpu: String::new(),
        })
    }

    async fn wait(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitProofResponse, Status> {
        if job_id.is_empty() {
            return Err(Status::invalid_argument("job_id: is empty"));
        }
        match self
            .engine
            .await_job(job_id, timeout)
            .await
            .map_err(job_status)?
        {
            // A job the stop leaves in the journal is not failed: the
            // caller awaits it again (or resubmits the same request id)
            // once the daemon is back.
            AwaitOutcome::Done(outcome) if outcome.resumes => Err(Status::unavailable(format!(
                "job {job_id}: {}",
                outcome.error
            ))),
            AwaitOutcome::Done(outcome) => Ok(await_response(job_id, &outcome)),
            AwaitOutcome::Timeout => Ok(timeout_response(job_id)),
        }
    }
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        Ok(Response::new(self.submit(request.into_inner()).await?))
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> Result<Response<AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let timeout = (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms));
        Ok(Response::new(self.wait(&r.job_id, timeout).await?))
    }

    async fn prove(
        &self,
        request: Request<ProveRequest>,
    ) -> Result<Response<ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("submit: is missing"))?;
        let submitted = self.submit(submit).await?;
        let result = self.wait(&submitted.job_id, None).await?;
        Ok(Response::new(ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let job_id = request.into_inner().job_id;
        if job_id.is_empty() {
            return Err(Status::invalid_argument("job_id: is empty"));
        }
        let was_running = self.engine.cancel(&job_id).map_err(job_status)?;
        Ok(Response::new(CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        let s = self.engine.status();
        Ok(Response::new(GetStatusResponse {
            // One entry per accelerator (none for the CPU backend), with
            // the partition its first busy worker proves.
            gpus: s
                .devices
                .iter()
                .enumerate()
                .filter_map(|(d, info)| {
                    let info = info.as_ref()?;
                    let task = s
                        .prover_workers
                        .iter()
                        .zip(&s.prover_devices)
                        .find_map(|(t, w)| if *w == d { t.as_ref() } else { None });
                    Some(cuzk_proto::v1::GpuStatus {
                        ordinal: info.ordinal,
                        name: info.name.clone(),
                        vram_total_bytes: info.memory_total,
                        vram_free_bytes: info.memory_free,
                        current_job_id: task.map(|t| t.job_id.clone()).unwrap_or_default(),
                        current_proof_kind: task
                            .map(|t| t.kind.as_str().to_string())
                            .unwrap_or_default(),
                        out_of_service: s.out_of_service[d].clone().unwrap_or_default(),
                    })
                })
                .collect(),
            loaded_srs: s
                .srs
                .iter()
                .map(|e| SrsStatus {
                    circuit_id: e.circuit_id.clone(),
                    tier: match e.tier {
                        Tier::Hot => srs_status::Tier::Hot,
                        Tier::Warm => srs_status::Tier::Warm,
                        Tier::Cold => srs_status::Tier::Cold,
                    } as i32,
                    size_bytes: e.bytes,
                    ref_count: e.in_use,
                    last_used_unix_secs: e
                        .idle_secs
                        .and_then(|idle| unix_now_secs().checked_sub(idle))
                        .unwrap_or(0),
                    on_devices: e
                        .on_devices
                        .iter()
                        .map(|d| SrsDeviceCopy {
                            backend: d.backend.clone(),
                            size_bytes: d.bytes,
                            resident_sections: d.resident.iter().map(|s| s.to_string()).collect(),
                        })
                        .collect(),
                })
                .collect(),
            queues: s
                .queues
                .iter()
                .map(|q| QueueStatus {
                    proof_kind: q.kind.as_str().to_string(),
                    pending: q.pending,
                    in_progress: q.in_progress,
                })
                .collect(),
            total_proofs_completed: s.completed,
            total_proofs_failed: s.failed,
            uptime_seconds: s.uptime.as_secs(),
            pinned_memory_bytes: 0,
            pinned_memory_limit_bytes: 0,
            restoring: s.restoring_jobs.is_some(),
            restoring_jobs: s.restoring_jobs.unwrap_or(0) as u64,
            constraint_systems: s
                .constraint_systems
                .iter()
                .map(|e| cuzk_proto::v1::ConstraintSystemStatus {
                    shape: e.shape.clone(),
                    size_bytes: e.bytes,
                    constraints: e.constraints,
                    uses: e.uses,
                })
                .collect(),
        }))
    }

    async fn get_metrics(
        &self,
        _request: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        Ok(Response::new(GetMetricsResponse {
            prometheus_text: self.engine.metrics_text(),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<PreloadSrsRequest>,
    ) -> Result<Response<PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let srs = self.engine.srs().clone();
        let (already_loaded, took) = tokio::task::spawn_blocking(move || srs.preload(&id))
            .await
            .map_err(|e| Status::internal(format!("preload task failed: {e}")))?
            .map_err(srs_status)?;
        Ok(Response::new(PreloadSrsResponse {
            already_loaded,
            load_time_ms: took.as_millis() as u64,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let (was_loaded, freed_bytes) = self.engine.srs().evict(&id).map_err(srs_status)?;
        Ok(Response::new(EvictSrsResponse {
            was_loaded,
            freed_bytes,
        }))
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn unix_now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
