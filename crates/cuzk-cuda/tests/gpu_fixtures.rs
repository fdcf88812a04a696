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

use std::sync::Arc;

use blstrs::Scalar;
use cuzk_circuits::PartitionSource;
use cuzk_core::params::param_files;
use cuzk_core::prover::partition_source;
use cuzk_core::ProofKind;
use cuzk_prover::srs::{ParamsFile, Srs, SubgroupCheck};
use cuzk_prover::AbcAt;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const KINDS: [ProofKind; 4] = [
    ProofKind::WindowPost,
    ProofKind::WinningPost,
    ProofKind::SnapDeals,
    ProofKind::PoRep,
];

/// The 2 KiB fixtures, made when missing.
fn fixtures() -> cuzk_fixtures::Fixtures {
    let dir = cuzk_fixtures::default_dir();
    let t = std::time::Instant::now();
    let fixtures = cuzk_fixtures::ensure(&dir, &mut |p| eprintln!("fixtures: {p:?}"))
        .unwrap_or_else(|e| panic!("fixtures in {}: {e:#}", dir.display()));
    eprintln!("fixtures ready in {:.1} s", t.elapsed().as_secs_f64());
    fixtures
}

/// The partitions of the fixtures' `kind` proof and its SRS.
fn circuits(
    fixtures: &cuzk_fixtures::Fixtures,
    kind: ProofKind,
) -> (Box<dyn PartitionSource>, Srs) {
    let req = fixtures
        .request(kind)
        .unwrap_or_else(|e| panic!("{kind}: request: {e:#}"))
        .validate(u64::MAX)
        .unwrap_or_else(|e| panic!("{kind}: request: {e}"));
    let source = partition_source(&req).unwrap_or_else(|e| panic!("{kind}: circuits: {e}"));
    let files = param_files(req.proof_type).unwrap_or_else(|e| panic!("{kind}: params: {e}"));
    let srs = ParamsFile::open(&files.params)
        .and_then(|f| f.decode(SubgroupCheck::None))
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
    (source, srs)
}

#[test]
fn filecoin_2kib_circuits_equal_cpu_proofs() {
    let Some(gpu) = common::gpu() else { return };
    let fixtures = fixtures();
    for kind in KINDS {
        let (source, srs) = circuits(&fixtures, kind);
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

/// a, b and c left to the backend (the daemon's path once a shape's
/// constraint system is resident): evaluated on the device from the
/// matrices there, the proofs equal the CPU backend's (which evaluates
/// them on the host) and verify; at the a-only staging tier too; an
/// assignment that breaks a constraint is refused.
#[test]
fn deferred_abc_on_the_device_equals_cpu_proofs() {
    let Some(gpu) = common::gpu() else { return };
    let fixtures = fixtures();
    for kind in KINDS {
        let (source, srs) = circuits(&fixtures, kind);
        let mut cs = source
            .record(0)
            .unwrap_or_else(|e| panic!("{kind}: record: {e}"));
        cs.key = format!("{kind}-deferred-test");
        let cs = Arc::new(cs);
        let n = source.partitions();
        let mut rng = ChaCha8Rng::seed_from_u64(0xabc);
        let r: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let witness = |k: usize| {
            source
                .synthesize_compiled(k, &cs, AbcAt::Backend)
                .unwrap_or_else(|e| panic!("{kind}: synthesis: {e}"))
                .witness
        };
        let key = format!("{kind}");
        let mut proof = Vec::new();
        for k in 0..n {
            let w = witness(k);
            assert!(w.abc_deferred());
            let label = format!("{kind} p{k} deferred");
            let srs_ref = srs.as_srs_ref();
            for p in common::compare(
                &label,
                &gpu,
                &gpu.tier,
                &key,
                vec![w],
                &srs_ref,
                &r[k..=k],
                &s[k..=k],
            ) {
                proof.extend_from_slice(&p);
            }
        }
        assert!(
            fixtures
                .verify(kind, &proof)
                .unwrap_or_else(|e| panic!("{kind}: verify: {e:#}")),
            "{kind}: the GPU proof from deferred a/b/c does not verify"
        );

        // The a-only tier: the top tier's first allocation fails.
        gpu.release_buffers().expect("release");
        gpu.fail_next_allocs(1);
        let before = gpu.staging_counts();
        let mut one = vec![witness(0)];
        let (p, _) = common::prove_on(
            &gpu,
            &gpu.tier,
            &key,
            &mut one,
            &srs.as_srs_ref(),
            &r[..1],
            &s[..1],
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{kind}: a-only: {e}"));
        let st = gpu.staging_counts() - before;
        assert_eq!(
            (st.a_only, st.fallbacks, st.none),
            (1, 1, 0),
            "{kind}: {st:?}"
        );
        assert_eq!(
            p[0].to_bytes()[..],
            proof[..192],
            "{kind}: a-only proof bytes"
        );

        // A broken assignment: refused, with the constraint named.
        let mut bad = vec![witness(0)];
        let i = bad[0].aux.len() / 2;
        bad[0].aux[i] += Scalar::ONE;
        let e = common::prove_on(
            &gpu,
            &gpu.tier,
            &key,
            &mut bad,
            &srs.as_srs_ref(),
            &r[..1],
            &s[..1],
            &mut |_| {},
        )
        .expect_err("an unsatisfied witness must not prove");
        assert!(e.to_string().contains("not satisfied"), "{kind}: {e}");
        gpu.tier.forget(&key);
        eprintln!("{kind}: deferred a/b/c on the device: equal to the CPU, verified, a-only tier, refusal");
    }
}
