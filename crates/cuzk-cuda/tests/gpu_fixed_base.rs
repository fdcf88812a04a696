//! Fixed-base products on the GPU (`cuda/fixed_base.cuh`, the parameter
//! generator's `gen-params --gpu`) equal blstrs' scalar multiplications in
//! G1 and G2, for random scalars and the edge cases (0, 1, 2, r - 1, r - 2,
//! `2^(w j)` and their neighbours, digits at the signed recoding's carry),
//! with cuzk-setup's tables of two window widths; a table of the wrong
//! length is refused.
//!
//! Needs a CUDA device (skipped, loudly, without one):
//! `cargo test --release -p cuzk-cuda --features cuda --test gpu_fixed_base -- --nocapture`
#![cfg(feature = "cuda")]

use blst::{blst_p1, blst_p2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_cuda::fixed_base::{FixedBaseDevice, FixedBaseTable};
use cuzk_setup::curve::{G1, G2};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn device() -> Option<usize> {
    let count = cuzk_cuda::device_count().unwrap_or_else(|e| panic!("counting CUDA devices: {e}"));
    if count == 0 {
        eprintln!("\n!!!!!!!! SKIPPED: no CUDA device on this machine: this GPU test proved NOTHING !!!!!!!!\n");
        return None;
    }
    Some(0)
}

/// Random scalars and the edge cases of a `w`-bit signed recoding.
fn scalars(rng: &mut ChaCha8Rng, w: u32) -> Vec<Scalar> {
    let minus = |k: u64| -Scalar::from(k);
    let mut s = vec![
        Scalar::ZERO,
        Scalar::ONE,
        Scalar::from(2),
        minus(1),
        minus(2),
    ];
    let two = Scalar::from(2);
    for j in 0..255 / w {
        let p = two.pow_vartime([u64::from(w * j)]);
        let half = two.pow_vartime([u64::from(w * j + w - 1)]);
        s.extend([
            p,
            p - Scalar::ONE,
            p + Scalar::ONE,
            half,
            half + Scalar::ONE,
            -p,
        ]);
        // All ones in this window: a digit of -1 and a carry.
        s.push(two.pow_vartime([u64::from(w * (j + 1))]) - p);
    }
    s.extend((0..100_000).map(|_| Scalar::random(&mut *rng)));
    s
}

fn jac1(p: &blst_p1) -> G1Affine {
    // blst_p1 is G1Projective's layout (Jacobian).
    unsafe { std::mem::transmute::<blst_p1, G1Projective>(*p) }.to_affine()
}

fn jac2(p: &blst_p2) -> G2Affine {
    unsafe { std::mem::transmute::<blst_p2, G2Projective>(*p) }.to_affine()
}

#[test]
fn products_equal_blstrs_in_g1_and_g2_for_two_window_widths() {
    let Some(dev) = device() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (b1, b2) = (
        G1Projective::random(&mut rng),
        G2Projective::random(&mut rng),
    );
    for w in [8u32, 13] {
        let t1 = cuzk_setup::fixed_base::FixedBaseTable::<G1>::new(&b1, w as usize);
        let t2 = cuzk_setup::fixed_base::FixedBaseTable::<G2>::new(&b2, w as usize);
        let fb = FixedBaseDevice::new(
            dev,
            FixedBaseTable {
                points: t1.points(),
                window: w,
            },
            FixedBaseTable {
                points: t2.points(),
                window: w,
            },
        )
        .expect("tables on the device");
        let s = scalars(&mut rng, w);
        let mut g1 = vec![blst_p1::default(); s.len()];
        fb.g1(&s, &mut g1).expect("G1 products");
        let mut g2 = vec![blst_p2::default(); s.len()];
        fb.g2(&s, &mut g2).expect("G2 products");
        for (i, x) in s.iter().enumerate() {
            assert_eq!(
                jac1(&g1[i]),
                (b1 * x).to_affine(),
                "w={w} G1 #{i} {:?}",
                x.to_repr()
            );
            // G2 on the edge cases and a sample (its CPU check is slower).
            if i < 1_000 || i % 97 == 0 {
                assert_eq!(jac2(&g2[i]), (b2 * x).to_affine(), "w={w} G2 #{i}");
            }
        }
        eprintln!("w={w}: {} G1 and G2 products equal blstrs'", s.len());
    }
}

#[test]
fn a_table_of_the_wrong_length_is_refused() {
    let Some(dev) = device() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let t1 = cuzk_setup::fixed_base::FixedBaseTable::<G1>::new(&G1Projective::random(&mut rng), 8);
    let t2 = cuzk_setup::fixed_base::FixedBaseTable::<G2>::new(&G2Projective::random(&mut rng), 8);
    let short = &t1.points()[..t1.points().len() - 1];
    let err = FixedBaseDevice::new(
        dev,
        FixedBaseTable {
            points: short,
            window: 8,
        },
        FixedBaseTable {
            points: t2.points(),
            window: 8,
        },
    )
    .err()
    .expect("refused");
    assert!(err.to_string().contains("fixed-base table"), "{err}");
}
