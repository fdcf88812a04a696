//! Times our chunked MSM against blst's own threaded Pippenger on random
//! scalars: `cargo run --release -p cuzk-prover --example msm_bench -- 22`.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, Scalar};
use cuzk_prover::msm::{msm, G1};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let n = 1usize << log;
    let base = G1Projective::random(ChaCha8Rng::seed_from_u64(1));
    let points: Vec<G1Affine> = {
        let proj: Vec<G1Projective> = (0..n as u64)
            .into_par_iter()
            .map(|i| base * Scalar::from(i + 1))
            .collect();
        let mut aff = vec![G1Affine::default(); n];
        G1Projective::batch_normalize(&proj, &mut aff);
        aff
    };
    let scalars: Vec<Scalar> = (0..n)
        .into_par_iter()
        .map(|i| Scalar::random(ChaCha8Rng::seed_from_u64(i as u64)))
        .collect();

    let t = Instant::now();
    let (ours, _) = msm::<G1>(&points, &scalars, None);
    println!("ours  2^{log}: {:?}", t.elapsed());

    let proj: Vec<blst::blst_p1> = points
        .iter()
        .map(|p| unsafe {
            std::mem::transmute::<G1Projective, blst::blst_p1>(G1Projective::from(p))
        })
        .collect();
    let affines = blst::p1_affines::from(&proj);
    let t = Instant::now();
    let bytes: Vec<u8> = scalars.iter().flat_map(|s| s.to_bytes_le()).collect();
    let theirs = affines.mult(&bytes, 255);
    println!(
        "blst  2^{log}: {:?} (threaded p1_affines::mult)",
        t.elapsed()
    );
    let theirs: G1Projective = unsafe { std::mem::transmute(theirs) };
    assert_eq!(ours.to_affine(), theirs.to_affine());
}
