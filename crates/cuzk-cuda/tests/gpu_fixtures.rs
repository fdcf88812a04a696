//! GPU proofs of the four 2 KiB Filecoin circuits (PoRep C2, SnapDeals,
//! WindowPoSt, WinningPoSt) are byte-identical to the CPU backend's with the
//! same r and s, and verify with filecoin-proofs.
//!
//! Fixtures: `$CUZK_FIXTURES_DIR`, else `~/.cache/cuzk/fixtures-2KiB`;
//! generated there when missing (about a minute on 16 cores; the parameters
//! are insecure, test only). Needs a CUDA device (skipped, loudly, without):
//! `cargo test --release -p cuzk-cuda --features cuda --test gpu_fixtures -- --nocapture`
#![cfg(feature = "cuda")]

mod common;

use blstrs::Scalar;
use cuzk_core::params::param_files;
use cuzk_core::prover::partition_source;
use cuzk_core::ProofKind;
use cuzk_prover::srs::{ParamsFile, SubgroupCheck};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn filecoin_2kib_circuits_equal_cpu_proofs() {
    let Some(gpu) = common::gpu() else { return };
    let dir = cuzk_fixtures::default_dir();
    let t = std::time::Instant::now();
    let fixtures = cuzk_fixtures::ensure(&dir, &mut |p| eprintln!("fixtures: {p:?}"))
        .unwrap_or_else(|e| panic!("fixtures in {}: {e:#}", dir.display()));
    eprintln!("fixtures ready in {:.1} s", t.elapsed().as_secs_f64());
    for kind in [
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::SnapDeals,
        ProofKind::PoRep,
    ] {
        let raw = fixtures
            .request(kind)
            .unwrap_or_else(|e| panic!("{kind}: request: {e:#}"));
        let req = raw
            .validate(u64::MAX)
            .unwrap_or_else(|e| panic!("{kind}: request: {e}"));
        let source = partition_source(&req).unwrap_or_else(|e| panic!("{kind}: circuits: {e}"));
        let files = param_files(req.proof_type).unwrap_or_else(|e| panic!("{kind}: params: {e}"));
        let srs = ParamsFile::open(&files.params)
            .and_then(|f| f.decode(SubgroupCheck::None))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        let n = source.partitions();
        let mut rng = ChaCha8Rng::seed_from_u64(0x6b0);
        let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let mut proof = Vec::new();
        for k in 0..n {
            let w = source
                .synthesize(k)
                .unwrap_or_else(|e| panic!("{kind}: synthesis: {e}"))
                .witness;
            eprintln!(
                "{kind} partition {k}: {} constraints, {} aux",
                w.num_constraints(),
                w.aux.len()
            );
            let label = format!("{kind} p{k}");
            for p in common::compare(
                &label,
                &gpu,
                &gpu.tier,
                &format!("{kind}"),
                vec![w],
                &srs.as_srs_ref(),
                &r[k..=k],
                &s[k..=k],
            ) {
                proof.extend_from_slice(&p);
            }
        }
        let ok = fixtures
            .verify(kind, &proof)
            .unwrap_or_else(|e| panic!("{kind}: verify: {e:#}"));
        assert!(ok, "{kind}: the GPU proof does not verify");
        gpu.tier.forget(&format!("{kind}"));
        eprintln!("{kind}: GPU proof verifies ({n} partition(s))");
    }
}
