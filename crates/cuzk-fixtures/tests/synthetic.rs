//! Synthetic fixture sets at 2 KiB and 8 MiB: the vanilla proofs read back
//! from disk pass filecoin-proofs' own vanilla verifiers, and a corrupted one
//! does not.

use std::collections::HashMap;
use std::fs;

use blstrs::Scalar;
use cuzk_core::ProofKind;
use cuzk_fixtures::{ensure_synthetic, Fixtures, SectorSize, SyntheticSpec};
use ff::Field;
use filecoin_proofs_api::RegisteredPoStProof;

fn make(size: SectorSize, dir: &std::path::Path) -> Fixtures {
    let spec = SyntheticSpec {
        dir: dir.to_path_buf(),
        params: dir.join("params"),
        with_params: false,
        ..SyntheticSpec::new(size)
    };
    ensure_synthetic(&spec, &mut |_| {}).expect("synthetic fixtures")
}

fn read(f: &Fixtures, name: &str) -> Vec<u8> {
    fs::read(f.dir.join(name)).expect("fixture file")
}

#[test]
fn synthetic_vanilla_proofs_pass_filecoin_proofs_verifiers() {
    for size in [SectorSize::S2KiB, SectorSize::S8MiB] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let f = make(size, tmp.path());
        assert_eq!(f.manifest.sector_size, size.bytes());
        for kind in ProofKind::ALL {
            assert!(
                f.verify_vanilla(kind).expect("verifier runs"),
                "{size}: {kind}"
            );
        }
        // The WindowPoSt fixture is the deadline's first partition.
        assert_eq!(
            f.manifest.window_deadlines[0].partitions[0],
            f.manifest.window_post.vanilla_files
        );
        // A flipped byte inside the last challenge's TreeRNew path.
        let name = &f.manifest.snap.vanilla_files[0];
        let mut bytes = read(&f, name);
        let at = bytes.len() - 40;
        bytes[at] ^= 1;
        fs::write(f.dir.join(name), bytes).expect("rewrite");
        assert!(
            !f.verify_vanilla(ProofKind::SnapDeals).unwrap_or(false),
            "{size}: a corrupted SnapDeals proof verified"
        );
        assert_eq!(
            f.manifest.window_post.sector_numbers.len(),
            size.window_proof().sector_count(),
            "{size}: the WindowPoSt fixture is one full partition"
        );
    }
}

#[test]
fn a_set_is_reused_and_rebuilt_identically() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let first = make(SectorSize::S2KiB, tmp.path());
    let c1 = read(&first, &first.manifest.porep.c1_file);
    // Reused as is.
    let again = make(SectorSize::S2KiB, tmp.path());
    assert_eq!(again.manifest.porep.comm_r, first.manifest.porep.comm_r);
    // Rebuilt from the same seed: the same bytes.
    fs::remove_file(tmp.path().join("manifest.json")).expect("remove manifest");
    let rebuilt = make(SectorSize::S2KiB, tmp.path());
    assert_eq!(read(&rebuilt, &rebuilt.manifest.porep.c1_file), c1);
    assert_eq!(
        rebuilt.manifest.snap.comm_r_new,
        first.manifest.snap.comm_r_new
    );
    // A set of an older generator is not reused: made again, then read.
    let path = tmp.path().join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(&path).expect("manifest")).expect("json");
    manifest["generator"] = serde_json::json!(2);
    fs::write(&path, manifest.to_string()).expect("rewrite manifest");
    let Err(err) = cuzk_fixtures::load_with(tmp.path(), &tmp.path().join("params")) else {
        panic!("an older generator's set was loaded");
    };
    assert!(
        format!("{err:#}").contains("synthetic generator 2"),
        "{err:#}"
    );
    let remade = make(SectorSize::S2KiB, tmp.path());
    assert_eq!(remade.manifest.generator, rebuilt.manifest.generator);
    assert_eq!(remade.manifest.porep.comm_r, first.manifest.porep.comm_r);
}

/// Every 8 MiB circuit built from the synthetic inputs is satisfied and has
/// the blank circuit's shape (a SnapDeals partition stands for its four).
#[test]
fn synthetic_8mib_circuits_are_satisfied() {
    use cuzk_core::prover::partition_source;
    use cuzk_setup::FilecoinCircuit;

    let tmp = tempfile::tempdir().expect("tempdir");
    let size = SectorSize::S8MiB;
    let f = make(size, tmp.path());
    let cases = [
        (
            ProofKind::PoRep,
            FilecoinCircuit::Seal(size.seal_proof()),
            0,
        ),
        (
            ProofKind::WindowPost,
            FilecoinCircuit::Window(size.window_proof()),
            0,
        ),
        (
            ProofKind::WinningPost,
            FilecoinCircuit::Winning(size.winning_proof()),
            0,
        ),
        (
            ProofKind::SnapDeals,
            FilecoinCircuit::Update(size.update_proof()),
            3,
        ),
    ];
    for (kind, circuit, k) in cases {
        let req = f
            .request(kind)
            .expect("request")
            .validate_without_params(u64::MAX)
            .expect("a valid request");
        let source = partition_source(&req).expect("circuits");
        let check = source.check(k).expect("synthesis");
        assert_eq!(check.unsatisfied, 0, "{kind}: {check:?}");
        let blank = circuit.shape().expect("blank circuit");
        assert_eq!(check.constraints, blank.constraints, "{kind}");
        assert_eq!(
            (check.inputs, check.aux),
            (blank.inputs, blank.aux),
            "{kind}"
        );
        if kind == ProofKind::WindowPost {
            let w = source.synthesize(k).expect("synthesis").witness;
            assert_no_value_on_every_path(&w.aux, size.window_proof());
        }
    }
}

/// Each synthetic sector has its own TreeR with distinct siblings, so a
/// witness value other than 0 and 1 stays within its sector's paths: per
/// path through a node, the node is a sibling slot and up to 3 of
/// `insert_8`'s 20 picks, or a Poseidon output and 5 picks, so at most ~6
/// copies per challenge of its sector. Trees whose unopened subtrees share a
/// default hash put it in all 7 sibling slots and 15 picks of a level, 22
/// copies per challenge: 220 per sector at 8 MiB, 440 over the partition
/// with one tree for every sector, and the GPU's Pippenger buckets that
/// long (docs/PERF.md).
fn assert_no_value_on_every_path(aux: &[Scalar], proof: RegisteredPoStProof) {
    let mut counts: HashMap<[u8; 32], usize> = HashMap::new();
    for x in aux
        .iter()
        .filter(|x| !bool::from(x.is_zero()) && **x != Scalar::ONE)
    {
        *counts.entry(x.to_bytes_le()).or_default() += 1;
    }
    let most = counts.values().copied().max().unwrap_or(0);
    let challenges = proof.as_v1_config().challenge_count;
    let bound = 6 * challenges;
    assert!(
        most <= bound,
        "a value appears {most} times in the WindowPoSt witness (at most {bound} expected)"
    );
}

/// At 8 MiB too, the compiled path (every kind assigned natively) gives
/// exactly today's witness: a, b, c, the assignment and the densities (a
/// SnapDeals partition stands for its four).
#[test]
fn synthetic_8mib_compiled_witnesses_equal_todays() {
    use cuzk_core::prover::partition_source;

    let tmp = tempfile::tempdir().expect("tempdir");
    let f = make(SectorSize::S8MiB, tmp.path());
    for (kind, k) in [
        (ProofKind::PoRep, 0),
        (ProofKind::WindowPost, 0),
        (ProofKind::WinningPost, 0),
        (ProofKind::SnapDeals, 3),
    ] {
        let req = f
            .request(kind)
            .expect("request")
            .validate_without_params(u64::MAX)
            .expect("a valid request");
        let source = partition_source(&req).expect("circuits");
        let cs = std::sync::Arc::new(source.record(k).expect("recording"));
        let compiled = source
            .synthesize_compiled(k, &cs, cuzk_prover::AbcAt::Synthesis)
            .expect("compiled");
        let today = source.synthesize(k).expect("today's path");
        assert_eq!(
            compiled.witness.num_constraints(),
            today.witness.num_constraints(),
            "{kind}"
        );
        assert!(
            compiled.witness == today.witness,
            "{kind}: the compiled witness differs from today's"
        );
    }
}
