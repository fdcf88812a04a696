//! Resident G1 MSMs equal a sum made on the CPU, with points that reach
//! every case of the affine addition law: a point added to itself (a
//! doubling), to its negation (infinity), and the point at infinity, in
//! buckets and as a bucket's running sum. The large one takes the
//! batched-affine bucket accumulation (`cuda/accumulate_affine.cuh`: 22-bit
//! windows, ~43 points a bucket) and, for its few long buckets (a scalar
//! repeated), that kernel's XYZZ fallback; the small one the XYZZ kernel.
//! Picks over aux, and aux copied packed (`src/aux_pack.rs`), give the
//! MSMs the same scalars. Long buckets summed by whole blocks
//! (`gpus.tuning.heavy_bucket_points`) give the same sum, and so do
//! streamed MSMs that carry their buckets across batches
//! (`gpus.tuning.carry_buckets`).
//!
//! Needs a CUDA device (skipped, loudly, without one):
//! `cargo test --release -p cuzk-cuda --features cuda,lab --test gpu_msm -- --nocapture`
#![cfg(all(feature = "cuda", feature = "lab"))]

#[allow(dead_code)] // of the shared helpers this test needs only the device
mod common;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_cuda::Source;
use cuzk_prover::srs::Section;
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// 61 random points, their negations and infinity: tiled over the
/// section, every bucket meets repeats, negations and infinity.
fn pattern(rng: &mut ChaCha8Rng) -> Vec<G1Affine> {
    let base: Vec<G1Affine> = (0..61)
        .map(|_| G1Projective::random(&mut *rng).to_affine())
        .collect();
    let mut all = base.clone();
    all.extend(base.iter().map(|p| -p));
    all.push(G1Affine::identity());
    all
}

/// Σ s_i·pattern[i mod len], grouping the scalars of each pattern point.
fn cpu_sum(pattern: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    let mut per_point = vec![Scalar::ZERO; pattern.len()];
    for (i, s) in scalars.iter().enumerate() {
        per_point[i % pattern.len()] += s;
    }
    pattern
        .iter()
        .zip(&per_point)
        .map(|(p, s)| G1Projective::from(p) * s)
        .sum()
}

#[test]
fn affine_accumulation_meets_every_case_and_equals_the_cpu_sum() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let pattern = pattern(&mut rng);
    let mut st = gpu.stages().expect("the device's stage context");
    st.set_split01(false).expect("split off");
    // The smallest MSM with 22-bit windows (lg2(1.5·n) = 27), and a small one.
    for n in [89_478_486 + 1_000, (1usize << 20) + 12_345] {
        // Full-width scalars (a running sum of random steps), one in 4,099
        // a repeated value and one small (long buckets, equal digits).
        let steps: Vec<Scalar> = (0..4096).map(|_| Scalar::random(&mut rng)).collect();
        let repeated = Scalar::random(&mut rng);
        let mut run = Scalar::random(&mut rng);
        let scalars: Vec<Scalar> = (0..n)
            .map(|i| match i % 4099 {
                0 => repeated,
                1 => Scalar::from((i / 4099) as u64 % 3 + 1),
                _ => {
                    run += steps[i % 4096];
                    run
                }
            })
            .collect();
        st.srs_alloc(Section::L, n).expect("section");
        st.srs_tile(Section::L, &pattern).expect("tiled points");
        st.upload_aux(&scalars).expect("scalars");
        let got = st
            .msm_g1_resident(Source::Aux, Section::L, 0, n)
            .expect("MSM");
        st.srs_free().expect("free");
        assert_eq!(got, cpu_sum(&pattern, &scalars), "{n} points");
        eprintln!("{n} points: GPU sum equals the CPU's");
    }
}

/// Scalars of which one in 8 is `a` and one in 61 is `b`, the rest
/// random: in every window the buckets of `a`'s and `b`'s digits hold
/// about 1/8 and 1/61 of a batch's points, far past the mean.
fn repeated_scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
    let (a, b) = (Scalar::random(&mut *rng), -Scalar::random(&mut *rng));
    (0..n)
        .map(|i| match (i % 8, i % 61) {
            (0, _) => a,
            (_, 0) => b,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

/// A G2 pattern (31 random points, their negations, infinity), 2^18 + 999
/// [`repeated_scalars`] and Σ s_i·pattern[i mod len] made on the CPU.
fn g2_repeated(rng: &mut ChaCha8Rng) -> (Vec<G2Affine>, Vec<Scalar>, G2Projective) {
    let base: Vec<G2Affine> = (0..31)
        .map(|_| G2Projective::random(&mut *rng).to_affine())
        .collect();
    let mut pattern = base.clone();
    pattern.extend(base.iter().map(|p| -p));
    pattern.push(G2Affine::identity());
    let scalars = repeated_scalars(rng, (1usize << 18) + 999);
    let mut per_point = vec![Scalar::ZERO; pattern.len()];
    for (i, s) in scalars.iter().enumerate() {
        per_point[i % pattern.len()] += s;
    }
    let want = pattern
        .iter()
        .zip(&per_point)
        .map(|(p, s)| G2Projective::from(p) * s)
        .sum();
    (pattern, scalars, want)
}

/// `gpus.tuning.heavy_bucket_points` of each of `caps` in turn.
fn with_cap(st: &mut cuzk_cuda::lab::StageContext<'_>, cap: u32) {
    let tuning = cuzk_cuda::GpuTuning {
        heavy_bucket_points: cap,
        ..Default::default()
    };
    st.set_tuning(&tuning).expect("tuning");
}

/// Buckets past `gpus.tuning.heavy_bucket_points` are summed by whole
/// blocks (`accumulate_heavy` in `cuda/accumulate.cuh`): over points that
/// repeat, cancel and include infinity, with two values repeated among
/// the scalars (buckets of ~33 k and ~3.8 k points in every window of a
/// G1 batch, ~8 k and ~1 k of a G2 one, against means of ~110 and ~130),
/// the XYZZ MSMs equal the CPU's sums a thread a bucket, with the long
/// buckets by blocks (256) and with most buckets by blocks (64: blocks
/// take several buckets each), in G1 and in G2 (two lanes a field element).
#[test]
fn heavy_buckets_summed_by_blocks_equal_the_cpu_sum() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut st = gpu.stages().expect("the device's stage context");
    st.set_split01(false).expect("split off");
    let pattern = pattern(&mut rng);
    let n = (1usize << 20) + 4_321;
    let scalars = repeated_scalars(&mut rng, n);
    st.srs_alloc(Section::L, n).expect("section");
    st.srs_tile(Section::L, &pattern).expect("tiled points");
    st.upload_aux(&scalars).expect("scalars");
    let want = cpu_sum(&pattern, &scalars);
    for cap in [0u32, 256, 64] {
        with_cap(&mut st, cap);
        let got = st.msm_g1_resident(Source::Aux, Section::L, 0, n);
        assert_eq!(
            got.expect("G1 MSM"),
            want,
            "G1, heavy_bucket_points = {cap}"
        );
    }
    st.srs_free().expect("free");

    let (pattern2, scalars2, want2) = g2_repeated(&mut rng);
    let n2 = scalars2.len();
    st.srs_alloc(Section::BG2, n2).expect("section");
    st.srs_tile(Section::BG2, &pattern2).expect("tiled points");
    st.upload_aux(&scalars2).expect("scalars");
    for cap in [0u32, 256, 64] {
        with_cap(&mut st, cap);
        let got = st.msm_g2_resident(Source::Aux, 0, n2);
        assert_eq!(
            got.expect("G2 MSM"),
            want2,
            "G2, heavy_bucket_points = {cap}"
        );
    }
    with_cap(&mut st, 0);
    st.srs_free().expect("free");
}

/// `gpus.tuning.carry_buckets`: streamed MSMs of many tiles (a batch a
/// tile) that keep their buckets across batches and integrate once equal
/// the CPU's sums and the same MSMs without carrying: G1 accumulated in
/// XYZZ over 17 tiles with two values repeated (long buckets, by one
/// thread and by blocks), G1 accumulated the affine way (20-bit windows
/// forced on 2^26 + 1,000 points in three tiles: ~43 points a bucket on
/// a card of up to ~200 SMs, `plan_affine`; one scalar in 4,099 repeated,
/// so the buckets of its digits, ~5.5 k points a batch, go to the XYZZ
/// kernel as well), and G2 (two
/// lanes a field element). The context's count of carrying MSMs
/// shows each carried run carried.
#[test]
fn streamed_msms_carrying_buckets_equal_the_cpu_sum() {
    let Some(gpu) = common::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let mut st = gpu.stages().expect("the device's stage context");
    st.set_split01(false).expect("split off");
    let pattern = pattern(&mut rng);
    let tuned = |carry: bool, heavy: u32, tile: u64, wbits: u32| cuzk_cuda::GpuTuning {
        carry_buckets: carry,
        heavy_bucket_points: heavy,
        stream_tile_points: tile,
        msm_window_bits: wbits,
        ..Default::default()
    };
    let mut carried = st.carried_msms().expect("count");
    let mut check = |st: &mut cuzk_cuda::lab::StageContext<'_>, carry: bool, what: &str| {
        let now = st.carried_msms().expect("count");
        assert_eq!(now, carried + u64::from(carry), "{what}: carried");
        carried = now;
    };

    let n = (1usize << 20) + 4_321;
    let scalars = repeated_scalars(&mut rng, n);
    let points: Vec<G1Affine> = (0..n).map(|i| pattern[i % pattern.len()]).collect();
    st.upload_aux(&scalars).expect("scalars");
    let want = cpu_sum(&pattern, &scalars);
    for (carry, heavy) in [(false, 0u32), (true, 0), (true, 256)] {
        st.set_tuning(&tuned(carry, heavy, 1 << 16, 0))
            .expect("tuning");
        let got = st.msm_g1(Source::Aux, &points).expect("streamed G1 MSM");
        let what = format!("G1 XYZZ, carry {carry}, heavy {heavy}");
        assert_eq!(got, want, "{what}");
        check(&mut st, carry, &what);
    }
    drop(points);

    let n = (1usize << 26) + 1_000;
    let steps: Vec<Scalar> = (0..4096).map(|_| Scalar::random(&mut rng)).collect();
    let (repeated, mut run) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let scalars: Vec<Scalar> = (0..n)
        .map(|i| match i % 4099 {
            0 => repeated,
            _ => {
                run += steps[i % 4096];
                run
            }
        })
        .collect();
    let points: Vec<G1Affine> = (0..n).map(|i| pattern[i % pattern.len()]).collect();
    st.upload_aux(&scalars).expect("scalars");
    let want = cpu_sum(&pattern, &scalars);
    for carry in [false, true] {
        st.set_tuning(&tuned(carry, 0, 1 << 25, 20))
            .expect("tuning");
        let got = st.msm_g1(Source::Aux, &points).expect("streamed G1 MSM");
        let what = format!("G1 affine, carry {carry}");
        assert_eq!(got, want, "{what}");
        check(&mut st, carry, &what);
    }
    drop((points, scalars));

    let (pattern2, scalars2, want2) = g2_repeated(&mut rng);
    let points2: Vec<G2Affine> = (0..scalars2.len())
        .map(|i| pattern2[i % pattern2.len()])
        .collect();
    st.upload_aux(&scalars2).expect("scalars");
    for (carry, heavy) in [(false, 0u32), (true, 0), (true, 64)] {
        st.set_tuning(&tuned(carry, heavy, 1 << 14, 0))
            .expect("tuning");
        let got = st.msm_g2(Source::Aux, &points2).expect("streamed G2 MSM");
        let what = format!("G2, carry {carry}, heavy {heavy}");
        assert_eq!(got, want2, "{what}");
        check(&mut st, carry, &what);
    }
    st.set_tuning(&tuned(false, 0, 0, 0)).expect("tuning");
}

/// A pick over aux itself (the small cards' way: no second vector, chunk
/// by chunk) gives the scalars a pick into a second buffer gives: the
/// same MSM over them, equal to the CPU's sum over the picked scalars.
/// The density has long runs of set and clear bits and scattered ones,
/// over several of the in-place pick's 2^21-scalar chunks and a ragged end.
#[test]
fn a_pick_in_place_equals_a_pick_into_a_second_buffer() {
    use cuzk_prover::density::Density;
    let Some(gpu) = common::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let pattern = pattern(&mut rng);
    let mut st = gpu.stages().expect("the device's stage context");
    let n = (5usize << 21) + 4_321;
    let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let mut density = Density::zeroed(n);
    for i in 0..n {
        let set = match (i >> 20) % 4 {
            0 => true,                        // a run of set bits
            1 => i % 3 != 0,                  // most
            2 => i % 7 == 0,                  // few
            _ => (i * 2_654_435_761) % 5 < 2, // scattered
        };
        if set {
            density.set(i);
        }
    }
    let picked: Vec<Scalar> = (0..n)
        .filter(|&i| density.get(i))
        .map(|i| scalars[i])
        .collect();
    let points: Vec<G1Affine> = (0..picked.len())
        .map(|i| pattern[i % pattern.len()])
        .collect();
    st.upload_aux(&scalars).expect("aux");
    assert_eq!(st.pick(&density).expect("pick"), picked.len());
    let second = st
        .msm_g1(Source::Picked, &points)
        .expect("MSM, second buffer");
    assert_eq!(
        st.pick_in_place(&density).expect("pick in place"),
        picked.len()
    );
    let in_place = st.msm_g1(Source::Aux, &points).expect("MSM, in place");
    assert_eq!(in_place, second, "in place and second buffer");
    assert_eq!(in_place, cpu_sum(&pattern, &picked), "the CPU's sum");
}

/// Aux shaped like a PoRep partition's (mostly zeros and ones, one in 50
/// an other value; `aux_pack.rs` packs it: bitmaps and the others, expanded
/// on the device) reaches the MSMs as the scalars themselves: an MSM over
/// it equals one over the same aux copied as it is (`pack_aux` off) and the
/// CPU's sum, and so does one over a pick in place from it. The
/// length spans several packing threads' runs and ends mid-word; others
/// sit on words' first and last bits too.
#[test]
fn aux_copied_packed_reaches_the_msms_unchanged() {
    use cuzk_prover::density::Density;
    let Some(gpu) = common::gpu() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let pattern = pattern(&mut rng);
    let mut st = gpu.stages().expect("the device's stage context");
    let n = (3usize << 20) + 77;
    let scalars: Vec<Scalar> = (0..n)
        .map(|i| match (i % 64, (i * 2_654_435_761) % 100) {
            (0 | 63, _) if i % 1024 < 64 => Scalar::random(&mut rng),
            (_, 0 | 1) => Scalar::random(&mut rng),
            (_, x) if x < 50 => Scalar::ZERO,
            _ => Scalar::ONE,
        })
        .collect();
    let points: Vec<G1Affine> = (0..n).map(|i| pattern[i % pattern.len()]).collect();
    st.set_pack_aux(false);
    st.upload_aux(&scalars).expect("aux, plain");
    let plain = st.msm_g1(Source::Aux, &points).expect("MSM over plain aux");
    assert_eq!(
        st.aux_uploads_packed(),
        0,
        "without pack_aux aux goes as it is"
    );
    st.set_pack_aux(true);
    st.upload_aux(&scalars).expect("aux, packed");
    assert_eq!(st.aux_uploads_packed(), 1, "this aux goes packed");
    let whole = st.msm_g1(Source::Aux, &points).expect("MSM over aux");
    assert_eq!(whole, plain, "packed and plain");
    assert_eq!(whole, cpu_sum(&pattern, &scalars), "aux whole");
    let mut density = Density::zeroed(n);
    for i in (0..n).filter(|i| i % 3 != 1) {
        density.set(i);
    }
    let picked: Vec<Scalar> = (0..n)
        .filter(|&i| density.get(i))
        .map(|i| scalars[i])
        .collect();
    assert_eq!(st.pick_in_place(&density).expect("pick"), picked.len());
    let got = st
        .msm_g1(Source::Aux, &points[..picked.len()])
        .expect("MSM over the picked scalars");
    assert_eq!(got, cpu_sum(&pattern, &picked), "picked from aux");
}
