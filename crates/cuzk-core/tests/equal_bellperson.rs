//! On the four 2 KiB Filecoin circuits, with fixed r and s, our witnesses
//! proved by our CPU backend give exactly bellperson's proof bytes, and
//! those proofs verify with filecoin-proofs-api.

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use cuzk_core::params::param_files;
use cuzk_core::prover::proof_circuits;
use cuzk_core::ProofKind;
use cuzk_prover::srs::{ParamsFile, SubgroupCheck};
use cuzk_prover::{CpuBackend, ProverBackend};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn fixtures() -> cuzk_fixtures::Fixtures {
    cuzk_fixtures::ensure(&cuzk_fixtures::default_dir(), &mut |_| {}).expect("fixtures")
}

fn check(kind: ProofKind) {
    let f = fixtures();
    let req = f.request(kind).unwrap().validate(u64::MAX).unwrap();
    let circuits = proof_circuits(&req).unwrap();
    let src = circuits.source();
    let files = param_files(req.proof_type).unwrap();
    // bellperson reads the parameters its way, we ours.
    let params =
        Parameters::<Bls12>::read(std::fs::File::open(&files.params).unwrap(), false).unwrap();
    let srs = ParamsFile::open(&files.params)
        .unwrap()
        .decode(SubgroupCheck::None)
        .unwrap();
    let n = src.partitions();
    let mut rng = ChaCha8Rng::seed_from_u64(kind as u64);
    let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();

    let theirs = circuits
        .reference()
        .bellperson_proofs(&params, r.clone(), s.clone())
        .unwrap();
    let mut witnesses: Vec<_> = (0..n).map(|k| src.synthesize(k).unwrap().witness).collect();
    let (ours, _) = CpuBackend
        .prove(&mut witnesses, &srs.as_srs_ref(), &r, &s)
        .unwrap();

    let mut ours_bytes = Vec::new();
    let mut theirs_bytes = Vec::new();
    for (o, t) in ours.iter().zip(&theirs) {
        ours_bytes.extend_from_slice(&o.to_bytes());
        t.write(&mut theirs_bytes).unwrap();
    }
    assert_eq!(
        ours_bytes, theirs_bytes,
        "{kind}: proof bytes differ from bellperson's"
    );
    assert!(
        f.verify(kind, &ours_bytes).unwrap(),
        "{kind}: filecoin-proofs-api rejects our proof"
    );
}

#[test]
fn window_post_equals_bellperson() {
    check(ProofKind::WindowPost);
}

#[test]
fn winning_post_equals_bellperson() {
    check(ProofKind::WinningPost);
}

#[test]
fn snap_equals_bellperson() {
    check(ProofKind::SnapDeals);
}

#[test]
fn porep_equals_bellperson() {
    check(ProofKind::PoRep);
}
