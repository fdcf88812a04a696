//! Provers: what turns a checked request into proof bytes.
//!
//! The engine drives any [`Prover`] and always verifies before a proof
//! leaves the daemon. [`CuzkProver`] is the production prover: it builds the
//! proof's circuits partition by partition (cuzk-circuits), synthesizes each
//! into a witness, and proves it with a `ProverBackend` (the CPU backend
//! today) against the circuit's SRS, loaded once and kept ([`SrsCache`]).
//! The filecoin-proofs-api path lives on in [`crate::reference`] for tests
//! and benchmarks only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_circuits::{porep_source, snap_source, window_post_source, winning_post_source, PartitionSource};
use cuzk_prover::{ProverBackend, PROOF_BYTES};
use ff::Field;

use crate::kinds::ProofType;
use crate::request::{ProofInput, ProofRequest};
use crate::srs_cache::{SrsCache, SrsEntry};
use crate::verify::verify_proof;

/// Proof bytes and where the prover's time went.
#[derive(Clone, Debug, Default)]
pub struct ProveOutput {
    pub proof: Vec<u8>,
    /// Loading (decoding) the SRS; zero when it was already resident.
    pub srs_load: Duration,
    /// Building and synthesizing the circuits.
    pub synthesis: Duration,
    /// The backend: H polynomial, MSMs, assembly.
    pub compute: Duration,
}

/// Produces and checks proofs for checked requests. Implementations are
/// called from the engine's worker threads and may block for minutes.
pub trait Prover: Send + Sync + 'static {
    /// A short name for logs and status (`cpu`, `cuda:0`).
    fn name(&self) -> String;

    /// Proves `req`; the error text becomes the job's error message.
    fn prove(&self, req: &ProofRequest) -> Result<ProveOutput, String>;

    /// Verifies a proof of `req`: `Ok(true)` only for a valid proof.
    fn verify(&self, req: &ProofRequest, proof: &[u8]) -> Result<bool, String> {
        verify_proof(req, proof).map_err(|e| format!("{e:#}"))
    }

    /// The SRS this prover holds resident.
    fn srs_entries(&self) -> Vec<SrsEntry> {
        Vec::new()
    }
}

/// The partitions of a request's proof, ready to synthesize.
pub fn partition_source(req: &ProofRequest) -> Result<Box<dyn PartitionSource>, String> {
    let err = |e: cuzk_circuits::CircuitError| e.to_string();
    match (&req.input, req.proof_type) {
        (ProofInput::PoRep { c1, .. }, _) => porep_source(c1).map_err(err),
        (
            ProofInput::WinningPost {
                randomness,
                prover_id,
                vanilla_proofs,
                ..
            },
            ProofType::Winning(t),
        ) => winning_post_source(t, randomness, *prover_id, vanilla_proofs).map_err(err),
        (
            ProofInput::WindowPost {
                randomness,
                prover_id,
                partition_index,
                vanilla_proofs,
                ..
            },
            ProofType::Window(t),
        ) => window_post_source(t, randomness, *prover_id, vanilla_proofs, *partition_index)
            .map_err(err),
        (
            ProofInput::SnapDeals {
                vanilla_proofs,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            },
            ProofType::Update(t),
        ) => snap_source(t, vanilla_proofs, comm_r_old, comm_r_new, comm_d_new).map_err(err),
        (_, t) => Err(format!("request input does not match its proof type {t}")),
    }
}

/// Our prover: per-partition synthesis, then a backend.
pub struct CuzkProver {
    backend: Arc<dyn ProverBackend>,
    srs: SrsCache,
}

impl CuzkProver {
    pub fn new(backend: Arc<dyn ProverBackend>, srs: SrsCache) -> CuzkProver {
        CuzkProver { backend, srs }
    }

    /// The SRS cache (for status).
    pub fn srs(&self) -> &SrsCache {
        &self.srs
    }
}

impl Prover for CuzkProver {
    fn name(&self) -> String {
        self.backend.name()
    }

    fn srs_entries(&self) -> Vec<SrsEntry> {
        self.srs.entries()
    }

    fn prove(&self, req: &ProofRequest) -> Result<ProveOutput, String> {
        let mut out = ProveOutput::default();
        let t = Instant::now();
        let source = partition_source(req)?;
        out.synthesis += t.elapsed();

        let (srs, load) = self.srs.get(req.proof_type)?;
        out.srs_load = load;

        let mut rng = rand::rngs::OsRng;
        out.proof.reserve(source.partitions() * PROOF_BYTES);
        // Partitions in order: the proof is their concatenation.
        for k in 0..source.partitions() {
            let synthesized = source.synthesize(k).map_err(|e| e.to_string())?;
            out.synthesis += synthesized.elapsed;
            let mut witnesses = [synthesized.witness];
            let t = Instant::now();
            let (proofs, _) = self
                .backend
                .prove(
                    &mut witnesses,
                    &srs.as_srs_ref(),
                    &[Scalar::random(&mut rng)],
                    &[Scalar::random(&mut rng)],
                )
                .map_err(|e| format!("partition {k}: {e}"))?;
            out.compute += t.elapsed();
            for p in proofs {
                out.proof.extend_from_slice(&p.to_bytes());
            }
        }
        Ok(out)
    }
}
