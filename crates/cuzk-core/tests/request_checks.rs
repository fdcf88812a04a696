//! Request checking on the real fixtures: one test per bound (partition
//! index, counts, lengths) and per consistency check that runs before any
//! proving (PoRep replica id, PoSt challenges, SnapDeals commitments).
//! Each mutated request must be refused with `InvalidArgument` naming its
//! field; the unmutated fixture requests must pass.

use std::sync::OnceLock;

use cuzk_core::request::MAX_PARTITIONS_PER_DEADLINE;
use cuzk_core::{ProofKind, RawRequest, RequestError};
use cuzk_fixtures::Fixtures;
use serde_json::Value;

const MAX: u64 = 256 << 20;

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let dir = cuzk_fixtures::default_dir();
        let f = cuzk_fixtures::ensure(&dir, &mut |p| eprintln!("fixtures: {p:?}"))
            .expect("fixtures could not be made");
        cuzk_core::params::init_parameter_cache(&f.params_dir()).expect("parameter cache");
        f
    })
}

fn request(kind: ProofKind) -> RawRequest {
    fixtures().request(kind).expect("fixture request")
}

/// Validates `r`, expects a refusal whose field is `field` and whose
/// message contains `needle`; returns the message.
fn refused(r: &RawRequest, field: &str, needle: &str) -> String {
    match r.validate(MAX) {
        Err(e @ RequestError::InvalidArgument { .. }) => {
            let RequestError::InvalidArgument { field: f, .. } = &e else {
                unreachable!()
            };
            assert_eq!(f, field, "{e}");
            let text = e.to_string();
            assert!(text.contains(needle), "{text:?} should contain {needle:?}");
            text
        }
        Err(e) => panic!("expected InvalidArgument on {field}, got {e:?}"),
        Ok(_) => panic!("expected a refusal naming {field}; the request was accepted"),
    }
}

#[test]
fn fixture_requests_pass_every_check() {
    for kind in ProofKind::ALL {
        request(kind)
            .validate(MAX)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
    for d in 0..fixtures().manifest.window_deadlines.len() {
        for k in 0..2 {
            let r = fixtures().deadline_request(d, k).unwrap();
            r.validate(MAX)
                .unwrap_or_else(|e| panic!("deadline {d} partition {k}: {e}"));
        }
    }
}

#[test]
fn window_partition_index_is_bounded_by_the_deadline_limit() {
    let mut r = request(ProofKind::WindowPost);
    for k in [MAX_PARTITIONS_PER_DEADLINE, 4_000_000_000, u32::MAX] {
        r.partition_index = k;
        let m = refused(&r, "partition_index", "3000");
        assert!(m.contains(&k.to_string()), "{m}");
    }
    // The last index allowed passes the bound (V1_2 challenges do not
    // depend on the partition, so the fixture's proofs still fit).
    r.partition_index = MAX_PARTITIONS_PER_DEADLINE - 1;
    r.validate(MAX).expect("index 2999 is within a deadline");
}

#[test]
fn winning_post_has_one_partition_and_exact_sector_count() {
    let mut r = request(ProofKind::WinningPost);
    r.partition_index = 1;
    refused(&r, "partition_index", "must be 0");
    let mut r = request(ProofKind::WinningPost);
    r.vanilla_proofs.push(r.vanilla_proofs[0].clone());
    refused(&r, "vanilla_proofs", "exactly 1");
    let mut r = request(ProofKind::WinningPost);
    r.vanilla_proofs.clear();
    refused(&r, "vanilla_proofs", "is empty");
}

#[test]
fn window_post_sector_count_is_bounded_by_the_partition() {
    let mut r = fixtures().deadline_request(0, 0).unwrap();
    let extra = fixtures().deadline_request(0, 1).unwrap().vanilla_proofs;
    r.vanilla_proofs.extend(extra);
    refused(&r, "vanilla_proofs", "at most 2 per partition");
}

#[test]
fn snap_partition_count_must_match_the_sector_size() {
    let mut r = request(ProofKind::SnapDeals);
    r.vanilla_proofs.push(r.vanilla_proofs[0].clone());
    refused(&r, "vanilla_proofs", "needs 1");
}

#[test]
fn the_payload_field_a_kind_does_not_use_is_refused() {
    // A PoRep with a million empty vanilla_proofs entries (no payload
    // bytes, so under the byte limit).
    let mut r = request(ProofKind::PoRep);
    r.vanilla_proofs = vec![Vec::new(); 1_000_000];
    refused(&r, "vanilla_proofs", "has 1000000 entries");
    // PoSt and SnapDeals with bytes in vanilla_proof (8 MB for WinningPoSt).
    for (kind, bytes) in [
        (ProofKind::WinningPost, 8_000_000),
        (ProofKind::WindowPost, 1),
        (ProofKind::SnapDeals, 1),
    ] {
        let mut r = request(kind);
        r.vanilla_proof = vec![0; bytes];
        refused(&r, "vanilla_proof", &format!("is {bytes} bytes"));
    }
}

#[test]
fn request_id_length_is_bounded() {
    let mut r = request(ProofKind::WinningPost);
    r.request_id = "x".repeat(cuzk_core::request::MAX_REQUEST_ID_LEN + 1);
    refused(&r, "request_id", "at most 256");
}

#[test]
fn a_huge_length_prefix_in_a_vanilla_proof_is_refused_without_allocating() {
    // FallbackPoStSectorProof: sector id (8), comm_r (32), then the length
    // of its sector proof list.
    for kind in [ProofKind::WinningPost, ProofKind::WindowPost] {
        let mut r = request(kind);
        r.vanilla_proofs[0][40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        refused(&r, "vanilla_proofs[0]", "FallbackPoStSectorProof");
    }
    // PartitionProof: comm_c (32), then the apex leaf count.
    let mut r = request(ProofKind::SnapDeals);
    r.vanilla_proofs[0][32..40].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    refused(&r, "vanilla_proofs[0]", "PartitionProof");
}

// ---- PoRep: the C1 against its proof type and the request ----

fn c1_json() -> Value {
    serde_json::from_slice(&request(ProofKind::PoRep).vanilla_proof).expect("C1 JSON")
}

fn with_c1(v: &Value) -> RawRequest {
    RawRequest {
        vanilla_proof: serde_json::to_vec(v).unwrap(),
        ..request(ProofKind::PoRep)
    }
}

fn partitions(v: &mut Value) -> &mut Vec<Value> {
    v["vanilla_proofs"]["StackedDrg2KiBV1"]
        .as_array_mut()
        .expect("2 KiB vanilla proofs")
}

#[test]
fn porep_sector_number_or_miner_that_does_not_match_the_c1_is_refused() {
    let mut r = request(ProofKind::PoRep);
    r.sector_number += 1;
    let m = refused(&r, "sector_number, miner_id", "replica_id");
    assert!(m.contains(&r.sector_number.to_string()), "{m}");
    let mut r = request(ProofKind::PoRep);
    r.miner_id += 1;
    refused(&r, "sector_number, miner_id", "another sector or miner");
    // The same holds inside Curio's wrapper.
    use base64::Engine as _;
    let mut r = request(ProofKind::PoRep);
    let wrapped = serde_json::json!({
        "SectorNum": r.sector_number,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&r.vanilla_proof),
        "SectorSize": 2048,
    });
    r.vanilla_proof = serde_json::to_vec(&wrapped).unwrap();
    r.validate(MAX).expect("wrapped C1 of the right sector");
    r.sector_number = 77;
    refused(&r, "sector_number, miner_id", "replica_id");
}

#[test]
fn porep_partition_and_challenge_counts_are_those_of_the_proof_type() {
    let mut v = c1_json();
    let p = partitions(&mut v)[0].clone();
    partitions(&mut v).push(p);
    refused(&with_c1(&v), "vanilla_proof", "has 2 partitions");
    let mut v = c1_json();
    partitions(&mut v)[0].as_array_mut().unwrap().pop();
    refused(&with_c1(&v), "vanilla_proof", "challenge proofs");
    let mut v = c1_json();
    partitions(&mut v)[0][0]["labeling_proofs"]
        .as_array_mut()
        .unwrap()
        .pop();
    refused(&with_c1(&v), "vanilla_proof", "labeling proofs");
    let mut v = c1_json();
    partitions(&mut v)[0][0]["replica_column_proofs"]["drg_parents"]
        .as_array_mut()
        .unwrap()
        .pop();
    refused(&with_c1(&v), "vanilla_proof", "parent columns");
}

#[test]
fn porep_commitments_must_be_what_the_proofs_open() {
    let mut v = c1_json();
    v["comm_d"][0] = Value::from(v["comm_d"][0].as_u64().unwrap() ^ 1);
    refused(&with_c1(&v), "vanilla_proof", "comm_d");
    let mut v = c1_json();
    v["comm_r"][0] = Value::from(v["comm_r"][0].as_u64().unwrap() ^ 1);
    refused(&with_c1(&v), "vanilla_proof", "comm_r");
    let mut v = c1_json();
    v["seed"] = serde_json::json!(vec![0u8; 32]);
    refused(&with_c1(&v), "vanilla_proof", "seed is all zeros");
}

// ---- PoSt: challenges against randomness, sector and partition ----

#[test]
fn post_vanilla_proofs_made_for_other_randomness_are_refused() {
    for kind in [ProofKind::WinningPost, ProofKind::WindowPost] {
        let mut r = request(kind);
        r.randomness[0] ^= 1;
        refused(&r, "vanilla_proofs[0]", "challenge leaf");
    }
}

#[test]
fn window_post_v1_partition_index_must_be_the_proofs_partition() {
    // Deadline fixture 1 is a V1 (api 1.0) WindowPoSt: the sector's place
    // in the deadline enters its challenges.
    let f = fixtures();
    let mut r = f.deadline_request(1, 1).unwrap();
    r.validate(MAX).expect("partition 1 as made");
    r.partition_index = 0;
    refused(&r, "vanilla_proofs[0]", "partition_index 0");
}

#[test]
fn post_inclusion_proof_count_is_the_proof_types_challenge_count() {
    use filecoin_proofs::SectorShape2KiB;
    use filecoin_proofs_api::FallbackPoStSectorProof;
    for (kind, challenges) in [(ProofKind::WindowPost, 10), (ProofKind::WinningPost, 66)] {
        let mut r = request(kind);
        let mut p: FallbackPoStSectorProof<SectorShape2KiB> =
            bincode::deserialize(&r.vanilla_proofs[0]).unwrap();
        let proofs = &mut p.vanilla_proof.sectors[0].inclusion_proofs;
        assert_eq!(proofs.len(), challenges);
        proofs.pop();
        r.vanilla_proofs[0] = bincode::serialize(&p).unwrap();
        refused(
            &r,
            "vanilla_proofs[0]",
            &format!("{} inclusion proofs", challenges - 1),
        );
        // Two sector proofs in one FallbackPoStSectorProof.
        let mut p: FallbackPoStSectorProof<SectorShape2KiB> =
            bincode::deserialize(&request(kind).vanilla_proofs[0]).unwrap();
        let s = p.vanilla_proof.sectors[0].clone();
        p.vanilla_proof.sectors.push(s);
        r.vanilla_proofs[0] = bincode::serialize(&p).unwrap();
        refused(&r, "vanilla_proofs[0]", "holds 2 sector proofs");
    }
}

// ---- SnapDeals: commitments against the partition proofs ----

#[test]
fn snap_swapped_commitments_are_named() {
    let mut r = request(ProofKind::SnapDeals);
    std::mem::swap(&mut r.comm_r_old, &mut r.comm_r_new);
    let m = refused(&r, "comm_r_old, comm_r_new", "swapped");
    assert!(!m.contains("panicked"), "{m}");
}

#[test]
fn snap_commitments_of_another_sector_are_named() {
    let other = request(ProofKind::PoRep);
    let c1: Value = serde_json::from_slice(&other.vanilla_proof).unwrap();
    let foreign: Vec<u8> = c1["comm_r"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap() as u8)
        .collect();
    let mut r = request(ProofKind::SnapDeals);
    r.comm_r_old = foreign.clone();
    refused(&r, "comm_r_old", "H(comm_c, root_r_old)");
    let mut r = request(ProofKind::SnapDeals);
    r.comm_r_new = foreign.clone();
    refused(&r, "comm_r_new", "H(comm_c, root_r_new)");
    let mut r = request(ProofKind::SnapDeals);
    r.comm_d_new = foreign;
    refused(&r, "comm_d_new", "TreeD");
}

/// Found by the fuzz harness (`fuzz-corpus/crash-from-repr.req`): a value
/// that is not a field element inside a vanilla proof made the Poseidon
/// hash of the check panic. It is refused, naming the proof.
#[test]
fn non_canonical_values_in_vanilla_proofs_are_refused() {
    use filecoin_hashers::Domain;
    use filecoin_proofs::SectorShape2KiB;
    use filecoin_proofs_api::FallbackPoStSectorProof;
    let mut r = request(ProofKind::WindowPost);
    let mut p: FallbackPoStSectorProof<SectorShape2KiB> =
        bincode::deserialize(&r.vanilla_proofs[0]).unwrap();
    p.vanilla_proof.sectors[0].comm_c = Domain::try_from_bytes(&[0xff; 32]).unwrap();
    r.vanilla_proofs[0] = bincode::serialize(&p).unwrap();
    refused(&r, "vanilla_proofs[0]", "not a field element");
}
