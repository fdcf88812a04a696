//! Our prover against bellperson's on the synthetic [`Chain`] circuit: same
//! bytes for the same r and s, proofs that verify, unsatisfied circuits
//! refused. (Here rather than in cuzk-prover: the circuit lives in this
//! crate, above the prover.)

use bellperson::groth16::{
    create_proof_batch, generate_random_parameters, prepare_verifying_key, verify_proof, Parameters,
};
use blstrs::{Bls12, Scalar};
use cuzk_circuits::chain::Chain;
use cuzk_prover::backend::{ProverBackend, SrsRef};
use cuzk_prover::cpu::CpuBackend;
use cuzk_prover::{synthesize, SynthError};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn srs_ref(p: &Parameters<Bls12>) -> SrsRef<'_> {
    SrsRef {
        alpha_g1: p.vk.alpha_g1,
        beta_g1: p.vk.beta_g1,
        beta_g2: p.vk.beta_g2,
        delta_g1: p.vk.delta_g1,
        delta_g2: p.vk.delta_g2,
        h: &p.h,
        l: &p.l,
        a: &p.a,
        b_g1: &p.b_g1,
        b_g2: &p.b_g2,
        device: None,
    }
}

fn check_equal(steps: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(steps as u64);
    let blank = Chain {
        x: None,
        steps,
        break_at: None,
    };
    let params = generate_random_parameters::<Bls12, _, _>(blank, &mut rng).unwrap();
    let xs: Vec<Scalar> = (0..2).map(|_| Scalar::random(&mut rng)).collect();
    let r: Vec<Scalar> = (0..2).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..2).map(|_| Scalar::random(&mut rng)).collect();
    let circuits: Vec<Chain> = xs
        .iter()
        .map(|x| Chain {
            x: Some(*x),
            steps,
            break_at: None,
        })
        .collect();

    let theirs = create_proof_batch(circuits.clone(), &params, r.clone(), s.clone()).unwrap();
    let mut witnesses: Vec<_> = circuits
        .into_iter()
        .map(|c| synthesize(c).unwrap().witness)
        .collect();
    let publics: Vec<Vec<Scalar>> = witnesses.iter().map(|w| w.input[1..].to_vec()).collect();
    let kept = witnesses.clone();
    let (ours, stats) = CpuBackend
        .prove(&mut witnesses, &srs_ref(&params), &r, &s)
        .unwrap();
    // The MSM results once, assembled with the same r and s: the same proofs.
    for (i, mut w) in kept.into_iter().enumerate() {
        let m = CpuBackend.msm_results(&mut w, &srs_ref(&params)).unwrap();
        let again = cuzk_prover::proof::assemble(&srs_ref(&params), &m, r[i], s[i]).unwrap();
        assert_eq!(again, ours[i], "{steps} steps: msm_results + assemble");
    }
    if steps >= 40 {
        assert!(
            stats.shape.ones > 0 && stats.shape.zeros > 0,
            "{:?}",
            stats.shape
        );
    }

    let pvk = prepare_verifying_key(&params.vk);
    for ((o, t), inputs) in ours.iter().zip(&theirs).zip(&publics) {
        let mut tb = Vec::new();
        t.write(&mut tb).unwrap();
        assert_eq!(
            o.to_bytes().to_vec(),
            tb,
            "{steps} steps: proof bytes differ from bellperson"
        );
        let proof = bellperson::groth16::Proof::<Bls12>::read(&o.to_bytes()[..]).unwrap();
        assert!(verify_proof(&pvk, &proof, inputs).unwrap());
    }
}

#[test]
fn equals_bellperson_small() {
    for steps in [1, 2, 5, 40] {
        check_equal(steps);
    }
}

#[test]
fn equals_bellperson_2_pow_14() {
    // 2 constraints per step + 3 input/output constraints: just under 2^14.
    check_equal((1 << 13) - 4);
}

#[test]
fn unsatisfied_circuit_is_an_error() {
    let c = Chain {
        x: Some(Scalar::from(3u64)),
        steps: 10,
        break_at: Some(4),
    };
    match synthesize(c) {
        Err(SynthError::Unsatisfied { index, .. }) => assert_eq!(index, 8, "step 4's constraint"),
        other => panic!(
            "expected an unsatisfied error, got {:?}",
            other.map(|s| s.witness.num_constraints())
        ),
    }
}
