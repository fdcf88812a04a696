//! Conversions between the wire messages of `cuzk.v1` and cuzk-core types,
//! and the mapping of engine errors onto gRPC status codes.

use cuzk_core::engine::{JobError, SubmitError};
use cuzk_core::{JobOutcome, JobStatus, RawRequest, RequestError};
use cuzk_proto::v1::{await_proof_response, AwaitProofResponse, SubmitProofRequest};
use tonic::Status;

/// The request fields, unchecked, as the engine takes them.
pub fn raw_request(r: SubmitProofRequest) -> RawRequest {
    RawRequest {
        request_id: r.request_id,
        proof_kind: r.proof_kind,
        sector_size: r.sector_size,
        registered_proof: r.registered_proof,
        priority: r.priority,
        vanilla_proof: r.vanilla_proof,
        vanilla_proofs: r.vanilla_proofs,
        sector_number: r.sector_number,
        miner_id: r.miner_id,
        randomness: r.randomness,
        partition_index: r.partition_index,
        comm_r_old: r.comm_r_old,
        comm_r_new: r.comm_r_new,
        comm_d_new: r.comm_d_new,
    }
}

/// The wire message for a request (clients: bench, tests).
pub fn submit_request(r: RawRequest) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: r.request_id,
        proof_kind: r.proof_kind,
        sector_size: r.sector_size,
        registered_proof: r.registered_proof,
        priority: r.priority,
        vanilla_proof: r.vanilla_proof,
        vanilla_proofs: r.vanilla_proofs,
        sector_number: r.sector_number,
        miner_id: r.miner_id,
        randomness: r.randomness,
        partition_index: r.partition_index,
        comm_r_old: r.comm_r_old,
        comm_r_new: r.comm_r_new,
        comm_d_new: r.comm_d_new,
    }
}

fn ms(d: std::time::Duration) -> u64 {
    d.as_millis() as u64
}

/// The reply for a finished job.
pub fn await_response(job_id: &str, outcome: &JobOutcome) -> AwaitProofResponse {
    use await_proof_response::Status as S;
    let status = match outcome.status {
        JobStatus::Completed => S::Completed,
        JobStatus::Failed => S::Failed,
        JobStatus::Cancelled => S::Cancelled,
    };
    let t = &outcome.timings;
    AwaitProofResponse {
        job_id: job_id.to_string(),
        status: status as i32,
        proof: outcome.proof.clone(),
        error_message: outcome.error.clone(),
        queue_wait_ms: ms(t.queue_wait),
        srs_load_ms: ms(t.srs_load),
        synthesis_ms: ms(t.synthesis),
        // The prover backend's time, whichever device it runs on.
        gpu_compute_ms: ms(t.compute),
        total_ms: ms(t.total),
        verify_ms: ms(t.verify),
        prove_ms: ms(t.prove),
    }
}

/// The reply when an await timed out.
pub fn timeout_response(job_id: &str) -> AwaitProofResponse {
    AwaitProofResponse {
        job_id: job_id.to_string(),
        status: await_proof_response::Status::Timeout as i32,
        error_message: "timed out waiting; the job goes on".into(),
        ..Default::default()
    }
}

/// gRPC status for a refused submit.
pub fn submit_status(e: SubmitError) -> Status {
    match e {
        SubmitError::Request(RequestError::InvalidArgument { .. }) => {
            Status::invalid_argument(e.to_string())
        }
        SubmitError::Request(RequestError::FailedPrecondition(_)) => {
            Status::failed_precondition(e.to_string())
        }
        SubmitError::Request(RequestError::Unimplemented(_)) => {
            Status::unimplemented(e.to_string())
        }
        SubmitError::RequestIdConflict { .. } => Status::already_exists(e.to_string()),
        SubmitError::ShuttingDown => Status::unavailable(e.to_string()),
        SubmitError::QueueFull { .. } => Status::resource_exhausted(e.to_string()),
        // Not on disk, so not accepted: a retry may succeed.
        SubmitError::Journal(_) => Status::unavailable(e.to_string()),
        // The journal's disk is down to the PoSt reserve.
        SubmitError::DiskFull(_) => Status::resource_exhausted(e.to_string()),
        // Every device failed: another daemon may prove it.
        SubmitError::NoDevice(_) => Status::unavailable(e.to_string()),
    }
}

/// gRPC status for an SRS preload or eviction that could not be done.
pub fn srs_status(e: cuzk_core::srs_manager::SrsError) -> Status {
    use cuzk_core::srs_manager::SrsError as E;
    match e {
        E::UnknownCircuit(_) => Status::invalid_argument(format!("circuit_id: {e}")),
        E::InUse { .. } => Status::failed_precondition(e.to_string()),
        E::NoRoom { .. } => Status::resource_exhausted(e.to_string()),
        E::TooLarge { .. } => Status::failed_precondition(e.to_string()),
        E::Load { .. } => Status::failed_precondition(e.to_string()),
        E::Device { .. } => Status::internal(e.to_string()),
    }
}

/// gRPC status for a failed job lookup or control call.
pub fn job_status(e: JobError) -> Status {
    match e {
        JobError::NotFound(_) => Status::not_found(e.to_string()),
        JobError::AlreadyEnded { .. } => Status::failed_precondition(e.to_string()),
        JobError::NotRestored(_) => Status::unavailable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn refusals_get_the_codes_the_architecture_names() {
        let cases = [
            (SubmitError::QueueFull { limit: 2 }, Code::ResourceExhausted),
            (SubmitError::ShuttingDown, Code::Unavailable),
            (SubmitError::Journal("disk full".into()), Code::Unavailable),
            (
                SubmitError::DiskFull("reserve".into()),
                Code::ResourceExhausted,
            ),
            (
                SubmitError::Request(RequestError::Unimplemented("ni-porep".into())),
                Code::Unimplemented,
            ),
        ];
        for (e, code) in cases {
            let text = e.to_string();
            let s = submit_status(e);
            assert_eq!(s.code(), code, "{text}");
            assert_eq!(s.message(), text);
        }
    }
}
