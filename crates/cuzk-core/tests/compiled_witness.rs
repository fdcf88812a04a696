//! The compiled-constraint-system path gives exactly today's witness: on
//! the four 2 KiB circuits (every partition), a, b, c, the assignment and
//! the densities equal `synthesize`'s, so proofs are the same bytes; the
//! file round-trips, and a corrupted, truncated or foreign file or an
//! assignment of another shape is refused.

use std::sync::Arc;

use blstrs::Scalar;
use cuzk_core::params::param_files;
use cuzk_core::prover::partition_source;
use cuzk_core::ProofKind;
use cuzk_prover::srs::{ParamsFile, SubgroupCheck};
use cuzk_prover::{AbcAt, CpuBackend, ProverBackend};
use cuzk_r1cs::file::{load, path_for, save};
use ff::Field;

const KINDS: [ProofKind; 4] = [
    ProofKind::PoRep,
    ProofKind::SnapDeals,
    ProofKind::WindowPost,
    ProofKind::WinningPost,
];

fn source(
    kind: ProofKind,
) -> (
    cuzk_core::ProofRequest,
    Box<dyn cuzk_circuits::PartitionSource>,
) {
    let f = cuzk_fixtures::ensure(&cuzk_fixtures::default_dir(), &mut |_| {}).expect("fixtures");
    let req = f.request(kind).unwrap().validate(u64::MAX).unwrap();
    let src = partition_source(&req).unwrap();
    (req, src)
}

fn refused<T>(r: Result<T, cuzk_circuits::CircuitError>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn compiled_witnesses_equal_todays_for_every_kind_and_partition() {
    for kind in KINDS {
        let (_, src) = source(kind);
        let cs = Arc::new(src.record(0).unwrap());
        let stats = cs.stats();
        eprintln!("{kind}: {stats:?}");
        assert!(stats.instances >= stats.segments);
        for k in 0..src.partitions() {
            let old = src.synthesize(k).unwrap().witness;
            let new = src
                .synthesize_compiled(k, &cs, AbcAt::Synthesis)
                .unwrap()
                .witness;
            assert_eq!(
                new.num_constraints(),
                old.num_constraints(),
                "{kind} partition {k}"
            );
            assert!(
                new == old,
                "{kind} partition {k}: the compiled witness differs"
            );
        }
    }
}

#[test]
fn compiled_and_todays_witnesses_prove_to_the_same_bytes() {
    let (req, src) = source(ProofKind::WinningPost);
    let srs = ParamsFile::open(&param_files(req.proof_type).unwrap().params)
        .unwrap()
        .decode(SubgroupCheck::None)
        .unwrap();
    let cs = Arc::new(src.record(0).unwrap());
    let (r, s) = (vec![Scalar::from(7u64)], vec![Scalar::from(11u64)]);
    let mut old = vec![src.synthesize(0).unwrap().witness];
    let mut new = vec![
        src.synthesize_compiled(0, &cs, AbcAt::Synthesis)
            .unwrap()
            .witness,
    ];
    // a, b and c left to the backend: the witness carries the matrices.
    let mut deferred = vec![
        src.synthesize_compiled(0, &cs, AbcAt::Backend)
            .unwrap()
            .witness,
    ];
    assert!(deferred[0].abc_deferred() && deferred[0].a.is_empty());
    assert_eq!(deferred[0].num_constraints(), old[0].num_constraints());
    let prove =
        |w: &mut Vec<_>| CpuBackend.prove(w, &srs.as_srs_ref(), &r, &s).unwrap().0[0].to_bytes();
    let a = prove(&mut old);
    assert_eq!(a, prove(&mut new));
    assert_eq!(a, prove(&mut deferred));
}

#[test]
fn a_deferred_unsatisfied_witness_is_refused_by_the_backend() {
    let (req, src) = source(ProofKind::WinningPost);
    let srs = ParamsFile::open(&param_files(req.proof_type).unwrap().params)
        .unwrap()
        .decode(SubgroupCheck::None)
        .unwrap();
    let cs = Arc::new(src.record(0).unwrap());
    let mut w = vec![
        src.synthesize_compiled(0, &cs, AbcAt::Backend)
            .unwrap()
            .witness,
    ];
    w[0].aux[3] += Scalar::ONE;
    let one = vec![Scalar::ONE];
    let e = CpuBackend
        .prove(&mut w, &srs.as_srs_ref(), &one, &one)
        .unwrap_err();
    assert!(e.to_string().contains("not satisfied"), "{e}");
}

#[test]
fn the_file_round_trips_and_bad_files_are_refused() {
    let (_, src) = source(ProofKind::WindowPost);
    let cs = src.record(0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = path_for(dir.path(), src.shape());
    save(&cs, &path).unwrap();
    assert_eq!(load(&path, src.shape()).unwrap(), cs);
    assert!(
        load(&path, "porep-other").is_err(),
        "a foreign key must be refused"
    );

    let bytes = std::fs::read(&path).unwrap();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x40;
    std::fs::write(&path, &flipped).unwrap();
    let e = load(&path, src.shape()).unwrap_err().to_string();
    assert!(e.contains("digest"), "{e}");
    std::fs::write(&path, &bytes[..bytes.len() - 100]).unwrap();
    assert!(
        load(&path, src.shape()).is_err(),
        "a truncated file must be refused"
    );

    // Rewritten with a correct digest but a broken body: still refused.
    // (The header's constraint count: after magic, version, key length,
    // key, inputs and aux.)
    let mut body = bytes[..bytes.len() - 32].to_vec();
    body[8 + 4 + 8 + src.shape().len() + 16] ^= 0x01;
    let digest = <sha2::Sha256 as sha2::Digest>::digest(&body);
    body.extend_from_slice(&digest);
    std::fs::write(&path, &body).unwrap();
    assert!(
        load(&path, src.shape()).is_err(),
        "a malformed body must be refused"
    );
}

#[test]
fn another_shapes_assignment_is_refused() {
    let (_, winning) = source(ProofKind::WinningPost);
    let (_, window) = source(ProofKind::WindowPost);
    let cs = Arc::new(window.record(0).unwrap());
    let e = refused(winning.synthesize_compiled(0, &cs, AbcAt::Synthesis));
    assert!(e.contains("does not fit"), "{e}");
}

#[test]
fn a_wrong_assignment_is_not_a_witness() {
    // A compiled system with one coefficient changed no longer matches the
    // circuit: the check after a/b/c must catch it.
    let (_, src) = source(ProofKind::WindowPost);
    let mut cs = src.record(0).unwrap();
    let i = cs.coeffs.iter().position(|c| *c == Scalar::ONE).unwrap();
    cs.coeffs[i] = Scalar::ONE.double();
    let cs = Arc::new(cs);
    let e = refused(src.synthesize_compiled(0, &cs, AbcAt::Synthesis));
    assert!(e.contains("not satisfied"), "{e}");
}
