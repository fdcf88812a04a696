//! Proof requests: the raw form that arrives on the wire and the checked form
//! the engine queues.
//!
//! [`RawRequest::validate`] is the one place where input is judged. Every
//! refusal names the offending field, so a client sees
//! `vanilla_proofs[2]: not a bincode FallbackPoStSectorProof ...` rather than
//! a failure deep inside a prover minutes later.
//!
//! Every number from the wire that could size memory, a loop or a file read
//! is bounded here by what its proof type allows ([`MAX_PARTITIONS_PER_DEADLINE`],
//! the partition and challenge counts of the registered proof), and what can
//! be checked without proving is checked before the job is accepted: a
//! PoRep's replica id against `miner_id` and `sector_number`
//! ([`porep`]), PoSt challenges against the randomness and sector ids
//! ([`post`]), SnapDeals commitments against the partition proofs
//! ([`snap`]). [`digest`] names a request's content for the job table.

pub mod digest;
pub mod porep;
pub mod post;
pub mod snap;

use bincode::Options as _;
use blstrs::Scalar;
use filecoin_proofs::with_shape;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{Commitment, ProverId, SectorId};
use serde::{Deserialize, Serialize};

use crate::kinds::{prover_id_from_miner, Priority, ProofKind, ProofType};
use crate::params::param_files;

pub use digest::{request_digest, RequestDigest};
use post::decode_post_vanilla;
use snap::check_snap_vanilla;

/// The start of the message for a payload whose decoding failed inside the
/// proof libraries (a check is missing: the fuzz harness fails on it).
pub const INTERNAL_DECODER_FAILURE: &str = "malformed (the proof library's decoder failed)";

/// The longest request_id accepted.
pub const MAX_REQUEST_ID_LEN: usize = 256;

/// The most partitions one WindowPoSt deadline can hold: the miner actor's
/// `max_partitions_per_deadline` (builtin-actors `runtime/src/runtime/policy.rs`,
/// 3000 on mainnet). A `partition_index` is below it; it sizes the
/// challenge derivation, never an allocation.
pub const MAX_PARTITIONS_PER_DEADLINE: u32 = 3000;

/// A request as received: the fields of `SubmitProofRequest`, unchecked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawRequest {
    pub request_id: String,
    /// Wire value of `ProofKind` (1..=4).
    pub proof_kind: i32,
    pub sector_size: u64,
    pub registered_proof: u64,
    /// Wire value of `Priority`; 0 = the kind's default.
    pub priority: i32,
    pub vanilla_proof: Vec<u8>,
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub sector_number: u64,
    pub miner_id: u64,
    pub randomness: Vec<u8>,
    pub partition_index: u32,
    pub comm_r_old: Vec<u8>,
    pub comm_r_new: Vec<u8>,
    pub comm_d_new: Vec<u8>,
}

/// Wire value of a kind (`ProofKind` enum of the proto).
pub fn kind_to_wire(kind: ProofKind) -> i32 {
    match kind {
        ProofKind::PoRep => 1,
        ProofKind::SnapDeals => 2,
        ProofKind::WindowPost => 3,
        ProofKind::WinningPost => 4,
    }
}

/// Kind from its wire value.
pub fn kind_from_wire(v: i32) -> Option<ProofKind> {
    ProofKind::ALL.into_iter().find(|k| kind_to_wire(*k) == v)
}

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The request itself is wrong; `field` names the culprit.
    #[error("{field}: {message}")]
    InvalidArgument { field: String, message: String },
    /// The request is fine but this daemon cannot serve it as configured
    /// (for example, the circuit's parameters are not in the cache).
    #[error("{0}")]
    FailedPrecondition(String),
    /// A valid request for something this daemon does not do yet.
    #[error("{0}")]
    Unimplemented(String),
}

pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> RequestError {
    RequestError::InvalidArgument {
        field: field.into(),
        message: message.into(),
    }
}

/// A checked request, ready to prove.
#[derive(Clone, Debug)]
pub struct ProofRequest {
    /// Client idempotency key, if one was given.
    pub request_id: Option<String>,
    pub priority: Priority,
    pub proof_type: ProofType,
    pub input: ProofInput,
    /// Bytes of vanilla proof data carried.
    pub vanilla_bytes: usize,
    /// What the request proves ([`request_digest`] of the raw request):
    /// a request id names one digest at a time.
    pub digest: RequestDigest,
}

impl ProofRequest {
    pub fn kind(&self) -> ProofKind {
        self.proof_type.kind()
    }
}

/// The public and vanilla inputs of one proof, decoded.
#[derive(Clone, Debug)]
pub enum ProofInput {
    PoRep {
        c1: Box<SealCommitPhase1Output>,
        prover_id: ProverId,
        sector_id: SectorId,
    },
    WinningPost {
        randomness: [u8; 32],
        prover_id: ProverId,
        /// bincode `FallbackPoStSectorProof`s, already checked to decode.
        vanilla_proofs: Vec<Vec<u8>>,
        /// (sector id, comm_r) of each vanilla proof, in request order.
        sectors: Vec<(SectorId, Commitment)>,
    },
    WindowPost {
        randomness: [u8; 32],
        prover_id: ProverId,
        partition_index: usize,
        vanilla_proofs: Vec<Vec<u8>>,
        sectors: Vec<(SectorId, Commitment)>,
    },
    SnapDeals {
        /// bincode `PartitionProof`s, one per partition, checked to decode.
        vanilla_proofs: Vec<Vec<u8>>,
        comm_r_old: Commitment,
        comm_r_new: Commitment,
        comm_d_new: Commitment,
    },
}

/// Decodes one bincode value as filecoin-proofs writes it (fixed-width
/// integers), refusing trailing bytes so a corrupted payload cannot pass as
/// valid, and reading no more than the bytes given (a length prefix cannot
/// make the decoder reserve more).
pub(crate) fn bincode_strict<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> bincode::Result<T> {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
}

impl RawRequest {
    /// Total vanilla payload bytes.
    pub fn vanilla_bytes(&self) -> usize {
        self.vanilla_proof.len() + self.vanilla_proofs.iter().map(Vec::len).sum::<usize>()
    }

    /// The kind named by `proof_kind`, checked.
    pub fn kind(&self) -> Result<ProofKind, RequestError> {
        kind_from_wire(self.proof_kind).ok_or_else(|| {
            invalid(
                "proof_kind",
                format!(
                    "must be POREP_SEAL_COMMIT (1), SNAP_DEALS_UPDATE (2), \
                     WINDOW_POST_PARTITION (3) or WINNING_POST (4); got {}",
                    self.proof_kind
                ),
            )
        })
    }

    /// Checks every field and decodes the vanilla proofs.
    ///
    /// `max_vanilla_bytes` bounds the vanilla payload. Parameter files are
    /// looked up in the process' parameter cache; missing ones give
    /// [`RequestError::FailedPrecondition`].
    pub fn validate(&self, max_vanilla_bytes: u64) -> Result<ProofRequest, RequestError> {
        self.checked(max_vanilla_bytes, true)
    }

    /// As [`RawRequest::validate`], without looking for parameter files:
    /// for tools that synthesize circuits but do not prove them.
    pub fn validate_without_params(
        &self,
        max_vanilla_bytes: u64,
    ) -> Result<ProofRequest, RequestError> {
        self.checked(max_vanilla_bytes, false)
    }

    fn checked(&self, max_vanilla_bytes: u64, params: bool) -> Result<ProofRequest, RequestError> {
        let kind = self.kind()?;
        let priority = match self.priority {
            0 => kind.default_priority(),
            v => Priority::from_wire(v).ok_or_else(|| {
                invalid(
                    "priority",
                    format!("must be 0 (kind default) or LOW..CRITICAL (1..=4); got {v}"),
                )
            })?,
        };
        if self.request_id.len() > MAX_REQUEST_ID_LEN {
            return Err(invalid(
                "request_id",
                format!(
                    "is {} bytes long; at most {MAX_REQUEST_ID_LEN} are allowed",
                    self.request_id.len()
                ),
            ));
        }
        let proof_type = ProofType::decode(kind, self.registered_proof)
            .map_err(|m| invalid("registered_proof", m.0))?;
        if self.sector_size != 0 && self.sector_size != proof_type.sector_size() {
            return Err(invalid(
                "sector_size",
                format!(
                    "{} does not match registered_proof {} ({proof_type}, {} byte sectors)",
                    self.sector_size,
                    self.registered_proof,
                    proof_type.sector_size()
                ),
            ));
        }
        let vanilla_bytes = self.vanilla_bytes();
        if vanilla_bytes as u64 > max_vanilla_bytes {
            let field = if self.vanilla_proof.len() >= vanilla_bytes / 2 {
                "vanilla_proof"
            } else {
                "vanilla_proofs"
            };
            return Err(invalid(
                field,
                format!(
                    "the request carries {vanilla_bytes} bytes of vanilla proofs; \
                     the limit is {max_vanilla_bytes} (engine.max_vanilla_bytes)"
                ),
            ));
        }
        self.check_unused_payload(proof_type)?;
        let files = param_files(proof_type).map_err(|e| RequestError::FailedPrecondition(e.0))?;
        if let Some(missing) = files.missing().filter(|_| params) {
            return Err(RequestError::FailedPrecondition(format!(
                "Groth16 parameters for {} ({proof_type}) are not available: {} is missing",
                proof_type.circuit_id(),
                missing.display()
            )));
        }

        let input = self.kind_input(proof_type)?;
        Ok(ProofRequest {
            request_id: (!self.request_id.is_empty()).then(|| self.request_id.clone()),
            priority,
            proof_type,
            input,
            vanilla_bytes,
            digest: request_digest(self),
        })
    }

    /// The payload field a kind does not use is empty: a PoRep carries its
    /// C1 output in `vanilla_proof` only, PoSt and SnapDeals their proofs in
    /// `vanilla_proofs` only (so a PoRep cannot smuggle millions of empty
    /// entries past the byte limit, nor a PoSt megabytes in a field never
    /// read).
    fn check_unused_payload(&self, proof_type: ProofType) -> Result<(), RequestError> {
        let n = self.vanilla_proofs.len();
        match proof_type {
            ProofType::Seal(_) if n > 0 => Err(invalid(
                "vanilla_proofs",
                format!("has {n} entries; a PoRep carries its C1 output in vanilla_proof only"),
            )),
            ProofType::Seal(_) => Ok(()),
            _ if !self.vanilla_proof.is_empty() => Err(invalid(
                "vanilla_proof",
                format!(
                    "is {} bytes; {proof_type} carries its proofs in vanilla_proofs only",
                    self.vanilla_proof.len()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The kind's own fields, decoded and checked. A panic inside the
    /// proof libraries' decoding (a malformed value the checks above did
    /// not foresee) is a refusal naming the payload, never a crash; the fuzz
    /// harness treats this message as a bug to fix.
    fn kind_input(&self, proof_type: ProofType) -> Result<ProofInput, RequestError> {
        let decode = || match proof_type {
            ProofType::Seal(seal) => self.porep_input(seal),
            ProofType::Winning(_) | ProofType::Window(_) => self.post_input(proof_type),
            ProofType::Update(_) => self.snap_input(proof_type),
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)).unwrap_or_else(|p| {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let field = if matches!(proof_type, ProofType::Seal(_)) {
                "vanilla_proof"
            } else {
                "vanilla_proofs"
            };
            Err(invalid(field, format!("{INTERNAL_DECODER_FAILURE}: {why}")))
        })
    }

    fn porep_input(
        &self,
        seal: filecoin_proofs_api::RegisteredSealProof,
    ) -> Result<ProofInput, RequestError> {
        if seal.feature_enabled(filecoin_proofs_api::ApiFeature::NonInteractivePoRep) {
            return Err(RequestError::Unimplemented(format!(
                "{seal:?}: non-interactive PoRep (aggregated proofs) is not supported yet"
            )));
        }
        if self.vanilla_proof.is_empty() {
            return Err(invalid(
                "vanilla_proof",
                "is empty; PoRep needs the C1 output JSON",
            ));
        }
        let c1 = porep::parse_c1(&self.vanilla_proof)?;
        if c1.registered_proof != seal {
            return Err(invalid(
                "registered_proof",
                format!(
                    "{} ({seal:?}) does not match the vanilla_proof's {:?}",
                    self.registered_proof, c1.registered_proof
                ),
            ));
        }
        porep::check_c1(&c1, self.miner_id, self.sector_number)?;
        Ok(ProofInput::PoRep {
            c1: Box::new(c1),
            prover_id: prover_id_from_miner(self.miner_id),
            sector_id: SectorId::from(self.sector_number),
        })
    }

    fn post_input(&self, proof_type: ProofType) -> Result<ProofInput, RequestError> {
        let randomness = field_element(&self.randomness, "randomness")?;
        let (post, is_winning) = match proof_type {
            ProofType::Winning(p) => (p, true),
            ProofType::Window(p) => (p, false),
            _ => unreachable!("post_input is only called for PoSt proof types"),
        };
        let partition_index = if is_winning {
            if self.partition_index != 0 {
                return Err(invalid(
                    "partition_index",
                    format!(
                        "is {}; a WinningPoSt has one partition, so it must be 0",
                        self.partition_index
                    ),
                ));
            }
            0
        } else {
            check_partition_index(self.partition_index)?
        };
        let max_sectors = post.sector_count();
        let n = self.vanilla_proofs.len();
        if n == 0 {
            return Err(invalid(
                "vanilla_proofs",
                "is empty; PoSt needs one FallbackPoStSectorProof per sector",
            ));
        }
        if is_winning && n != max_sectors {
            return Err(invalid(
                "vanilla_proofs",
                format!("has {n} sector proofs; {post:?} takes exactly {max_sectors}"),
            ));
        }
        if n > max_sectors {
            return Err(invalid(
                "vanilla_proofs",
                format!(
                    "has {n} sector proofs; {post:?} takes at most {max_sectors} per partition"
                ),
            ));
        }
        let challenge = post::ChallengeInputs {
            post_type: post,
            randomness: &randomness,
            partition_index,
        };
        let sectors = with_shape!(
            proof_type.sector_size(),
            decode_post_vanilla,
            &self.vanilla_proofs,
            &challenge
        )?;
        let mut ids: Vec<u64> = sectors.iter().map(|(id, _)| u64::from(*id)).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(invalid(
                "vanilla_proofs",
                format!("sector {} appears more than once", w[0]),
            ));
        }
        let prover_id = prover_id_from_miner(self.miner_id);
        let vanilla_proofs = self.vanilla_proofs.clone();
        Ok(if is_winning {
            ProofInput::WinningPost {
                randomness,
                prover_id,
                vanilla_proofs,
                sectors,
            }
        } else {
            ProofInput::WindowPost {
                randomness,
                prover_id,
                partition_index,
                vanilla_proofs,
                sectors,
            }
        })
    }

    fn snap_input(&self, proof_type: ProofType) -> Result<ProofInput, RequestError> {
        let comm_r_old = field_element(&self.comm_r_old, "comm_r_old")?;
        let comm_r_new = field_element(&self.comm_r_new, "comm_r_new")?;
        let comm_d_new = field_element(&self.comm_d_new, "comm_d_new")?;
        // partition_count takes the sector size in 32-byte nodes.
        let want = filecoin_proofs::partition_count(proof_type.sector_size() as usize / 32);
        let n = self.vanilla_proofs.len();
        if n != want {
            return Err(invalid(
                "vanilla_proofs",
                format!(
                    "has {n} partition proofs; SnapDeals for {} byte sectors needs {want}",
                    proof_type.sector_size()
                ),
            ));
        }
        let comms = snap::Commitments {
            sector_size: proof_type.sector_size(),
            comm_r_old: &comm_r_old,
            comm_r_new: &comm_r_new,
            comm_d_new: &comm_d_new,
        };
        with_shape!(
            proof_type.sector_size(),
            check_snap_vanilla,
            &self.vanilla_proofs,
            &comms
        )?;
        Ok(ProofInput::SnapDeals {
            vanilla_proofs: self.vanilla_proofs.clone(),
            comm_r_old,
            comm_r_new,
            comm_d_new,
        })
    }
}

/// A WindowPoSt partition index, bounded by [`MAX_PARTITIONS_PER_DEADLINE`].
fn check_partition_index(k: u32) -> Result<usize, RequestError> {
    if k >= MAX_PARTITIONS_PER_DEADLINE {
        return Err(invalid(
            "partition_index",
            format!(
                "{k} is out of range: a deadline holds at most {MAX_PARTITIONS_PER_DEADLINE} \
                 partitions (the miner actor's max_partitions_per_deadline), so the index \
                 is at most {}",
                MAX_PARTITIONS_PER_DEADLINE - 1
            ),
        ));
    }
    Ok(k as usize)
}

/// Whether a domain element's bytes are a canonical BLS12-381 scalar.
/// filecoin-hashers' domains accept any 32 bytes when deserialized, and
/// panic when a non-canonical one is hashed or put into a circuit, so every
/// element a check hashes is tested with this first.
pub(crate) fn canonical<D: AsRef<[u8]>>(d: &D) -> bool {
    let Ok(arr) = <[u8; 32]>::try_from(d.as_ref()) else {
        return false;
    };
    bool::from(Scalar::from_bytes_le(&arr).is_some())
}

/// Whether a Merkle proof's leaf, root and every path element are
/// canonical.
pub(crate) fn merkle_canonical<P: storage_proofs_core::merkle::MerkleProofTrait>(p: &P) -> bool {
    canonical(&p.leaf())
        && canonical(&p.root())
        && p.path()
            .iter()
            .all(|(siblings, _)| siblings.iter().all(canonical))
}

/// 32 bytes holding a canonical BLS12-381 scalar (little-endian), as
/// filecoin-proofs requires of randomness and commitments.
pub(crate) fn field_element(bytes: &[u8], field: &str) -> Result<[u8; 32], RequestError> {
    let arr: [u8; 32] = bytes.try_into().map_err(|_| {
        invalid(
            field,
            if bytes.is_empty() {
                "is empty; 32 bytes are required".to_string()
            } else {
                format!("must be 32 bytes, got {}", bytes.len())
            },
        )
    })?;
    if bool::from(Scalar::from_bytes_le(&arr).is_none()) {
        return Err(invalid(
            field,
            "is not a canonical BLS12-381 field element (top bits set?)",
        ));
    }
    Ok(arr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(e: RequestError) -> String {
        match e {
            RequestError::InvalidArgument { field, .. } => field,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn unknown_kind_and_priority_are_named() {
        let r = RawRequest::default();
        assert_eq!(field_of(r.validate(1 << 20).unwrap_err()), "proof_kind");
        let r = RawRequest {
            proof_kind: 4,
            priority: 9,
            ..Default::default()
        };
        assert_eq!(field_of(r.validate(1 << 20).unwrap_err()), "priority");
    }

    #[test]
    fn registered_proof_and_sector_size_are_checked() {
        let r = RawRequest {
            proof_kind: 4,
            registered_proof: 77,
            ..Default::default()
        };
        assert_eq!(
            field_of(r.validate(1 << 20).unwrap_err()),
            "registered_proof"
        );
        let r = RawRequest {
            proof_kind: 4,
            registered_proof: 10,
            ..Default::default()
        };
        assert_eq!(
            field_of(r.validate(1 << 20).unwrap_err()),
            "registered_proof"
        );
        let r = RawRequest {
            proof_kind: 4,
            registered_proof: 0,
            sector_size: 8 << 20,
            ..Default::default()
        };
        assert_eq!(field_of(r.validate(1 << 20).unwrap_err()), "sector_size");
    }

    #[test]
    fn oversize_payload_is_refused_before_parsing() {
        let r = RawRequest {
            proof_kind: 1,
            registered_proof: 5,
            vanilla_proof: vec![b'x'; 2048],
            ..Default::default()
        };
        let e = r.validate(1024).unwrap_err();
        assert!(e.to_string().contains("max_vanilla_bytes"), "{e}");
        assert_eq!(field_of(e), "vanilla_proof");
    }

    #[test]
    fn field_elements() {
        assert!(field_element(&[0u8; 32], "x").is_ok());
        assert!(field_element(&[0xffu8; 32], "x").is_err());
        assert!(field_element(&[0u8; 31], "x").is_err());
        let e = field_element(&[], "comm_d_new").unwrap_err();
        assert!(e.to_string().starts_with("comm_d_new: is empty"), "{e}");
    }

    #[test]
    fn c1_parse_errors_name_the_field() {
        let e = porep::parse_c1(b"{not json").unwrap_err();
        assert_eq!(field_of(e), "vanilla_proof");
        let e =
            porep::parse_c1(br#"{"SectorNum":1,"Phase1Out":"%%%","SectorSize":2048}"#).unwrap_err();
        assert!(e.to_string().contains("base64"), "{e}");
    }

    #[test]
    fn kinds_round_trip_on_the_wire() {
        for k in ProofKind::ALL {
            assert_eq!(kind_from_wire(kind_to_wire(k)), Some(k));
        }
        assert_eq!(kind_from_wire(0), None);
    }
}
