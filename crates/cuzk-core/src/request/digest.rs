//! A request's digest: what its proof is of.
//!
//! SHA-256 over the kind, the registered proof and every payload and
//! public-input field (sector number, miner id, randomness, partition
//! index, commitments, the vanilla proofs), each length-prefixed. The
//! request id, the priority and `sector_size` (implied by the registered
//! proof) are left out: a resubmit at another priority is the same request.
//! The job table keys idempotency on (request id, digest).

use sha2::{Digest, Sha256};

use super::RawRequest;

/// SHA-256 of a request's content.
pub type RequestDigest = [u8; 32];

/// Domain separation for the digest's encoding.
const TAG: &[u8] = b"cuzk-request-digest-v1";

/// The digest of `r` (cheap next to decoding it: one pass of SHA-256).
pub fn request_digest(r: &RawRequest) -> RequestDigest {
    let mut h = Sha256::new();
    h.update(TAG);
    h.update(r.proof_kind.to_le_bytes());
    h.update(r.registered_proof.to_le_bytes());
    h.update(r.sector_number.to_le_bytes());
    h.update(r.miner_id.to_le_bytes());
    h.update(r.partition_index.to_le_bytes());
    for field in [
        &r.randomness,
        &r.comm_r_old,
        &r.comm_r_new,
        &r.comm_d_new,
        &r.vanilla_proof,
    ] {
        bytes(&mut h, field);
    }
    h.update((r.vanilla_proofs.len() as u64).to_le_bytes());
    for p in &r.vanilla_proofs {
        bytes(&mut h, p);
    }
    h.finalize().into()
}

fn bytes(h: &mut Sha256, b: &[u8]) {
    h.update((b.len() as u64).to_le_bytes());
    h.update(b);
}

/// The first 8 bytes in hex, for logs and messages.
pub fn short_hex(d: &RequestDigest) -> String {
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_covers_payload_not_priority_or_id() {
        let base = RawRequest {
            request_id: "a".into(),
            proof_kind: 3,
            registered_proof: 10,
            vanilla_proofs: vec![vec![1, 2], vec![3]],
            ..Default::default()
        };
        let d = request_digest(&base);
        let same = RawRequest {
            request_id: "b".into(),
            priority: 4,
            sector_size: 2048,
            ..base.clone()
        };
        assert_eq!(request_digest(&same), d);
        // Moving a byte between two proofs changes it (length prefixes).
        let moved = RawRequest {
            vanilla_proofs: vec![vec![1], vec![2, 3]],
            ..base.clone()
        };
        assert_ne!(request_digest(&moved), d);
        for other in [
            RawRequest {
                partition_index: 1,
                ..base.clone()
            },
            RawRequest {
                miner_id: 1,
                ..base.clone()
            },
            RawRequest {
                randomness: vec![0; 32],
                ..base.clone()
            },
            RawRequest {
                registered_proof: 11,
                ..base.clone()
            },
            RawRequest {
                proof_kind: 4,
                ..base.clone()
            },
        ] {
            assert_ne!(request_digest(&other), d, "{other:?}");
        }
        assert_eq!(short_hex(&d).len(), 16);
    }
}
