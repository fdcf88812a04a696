//! Multi-scalar multiplication on the CPU, over blst.
//!
//! Scalars are split three ways: zeros are skipped, ones are summed with
//! blst's batched affine addition (`blst_p*s_add`), and the rest go through
//! blst's Pippenger (`blst_p*s_mult_pippenger`). Witnesses of Filecoin
//! circuits are mostly bits, so the plain additions carry much of the work.
//! The index range is cut into chunks proved in parallel with rayon; density
//! bitmaps (A/B queries) map assignment indices to SRS points.

use blst::{
    blst_p1, blst_p1_affine, blst_p1s_add, blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof, blst_p2, blst_p2_affine, blst_p2s_add,
    blst_p2s_mult_pippenger, blst_p2s_mult_pippenger_scratch_sizeof, limb_t,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use rayon::prelude::*;

use crate::density::Density;

/// Below this many scalars a single chunk is used.
const MIN_CHUNK: usize = 1 << 12;

/// A curve group blst can add and multiply in bulk.
pub trait MsmCurve: Sized + Send + Sync {
    type Affine: Sync;
    type Projective: Group + Send;
    /// Σ points (affine, given by pointer array or `[first, null]` for a run).
    fn sum(points: &[*const Self::Affine]) -> Self::Projective;
    /// Σ scalar_i · point_i with scalars as 32 little-endian bytes.
    fn pippenger(points: &[*const Self::Affine], scalars: &[[u8; 32]]) -> Self::Projective;
}

/// G1 marker.
pub struct G1;
/// G2 marker.
pub struct G2;

impl MsmCurve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;

    fn sum(points: &[*const G1Affine]) -> G1Projective {
        if points.is_empty() {
            return G1Projective::identity();
        }
        let mut out = blst_p1::default();
        // SAFETY: G1Affine is #[repr(transparent)] over blst_p1_affine; the
        // pointers are valid for the call; blst reads `points.len()` of them.
        unsafe {
            blst_p1s_add(
                &mut out,
                points.as_ptr() as *const *const blst_p1_affine,
                points.len(),
            );
            std::mem::transmute::<blst_p1, G1Projective>(out)
        }
    }

    fn pippenger(points: &[*const G1Affine], scalars: &[[u8; 32]]) -> G1Projective {
        debug_assert_eq!(points.len(), scalars.len());
        if points.is_empty() {
            return G1Projective::identity();
        }
        let n = points.len();
        let scalar_ptrs = [scalars.as_ptr() as *const u8, std::ptr::null()];
        let mut out = blst_p1::default();
        // SAFETY: as above; the scratch has the size blst asks for; scalars
        // form one contiguous run of `n` 32-byte little-endian integers.
        unsafe {
            let words = blst_p1s_mult_pippenger_scratch_sizeof(n) / std::mem::size_of::<limb_t>();
            let mut scratch = vec![0 as limb_t; words + 1];
            blst_p1s_mult_pippenger(
                &mut out,
                points.as_ptr() as *const *const blst_p1_affine,
                n,
                scalar_ptrs.as_ptr(),
                255,
                scratch.as_mut_ptr(),
            );
            std::mem::transmute::<blst_p1, G1Projective>(out)
        }
    }
}

impl MsmCurve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;

    fn sum(points: &[*const G2Affine]) -> G2Projective {
        if points.is_empty() {
            return G2Projective::identity();
        }
        let mut out = blst_p2::default();
        // SAFETY: G2Affine is #[repr(transparent)] over blst_p2_affine.
        unsafe {
            blst_p2s_add(
                &mut out,
                points.as_ptr() as *const *const blst_p2_affine,
                points.len(),
            );
            std::mem::transmute::<blst_p2, G2Projective>(out)
        }
    }

    fn pippenger(points: &[*const G2Affine], scalars: &[[u8; 32]]) -> G2Projective {
        debug_assert_eq!(points.len(), scalars.len());
        if points.is_empty() {
            return G2Projective::identity();
        }
        let n = points.len();
        let scalar_ptrs = [scalars.as_ptr() as *const u8, std::ptr::null()];
        let mut out = blst_p2::default();
        // SAFETY: as for G1.
        unsafe {
            let words = blst_p2s_mult_pippenger_scratch_sizeof(n) / std::mem::size_of::<limb_t>();
            let mut scratch = vec![0 as limb_t; words + 1];
            blst_p2s_mult_pippenger(
                &mut out,
                points.as_ptr() as *const *const blst_p2_affine,
                n,
                scalar_ptrs.as_ptr(),
                255,
                scratch.as_mut_ptr(),
            );
            std::mem::transmute::<blst_p2, G2Projective>(out)
        }
    }
}

/// How the scalars of one MSM split (for statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsmShape {
    pub zeros: usize,
    pub ones: usize,
    pub others: usize,
}

impl std::ops::AddAssign for MsmShape {
    fn add_assign(&mut self, o: MsmShape) {
        self.zeros += o.zeros;
        self.ones += o.ones;
        self.others += o.others;
    }
}

const ONE_LE: [u8; 32] = {
    let mut b = [0u8; 32];
    b[0] = 1;
    b
};

/// One chunk: scalars `scalars[range]`, whose points start at `points[first_point]`
/// (dense: one point per scalar; sparse: one per set density bit).
fn chunk<C: MsmCurve>(
    points: &[C::Affine],
    scalars: &[Scalar],
    density: Option<&Density>,
    range: std::ops::Range<usize>,
    mut next_point: usize,
) -> (C::Projective, MsmShape) {
    let mut ones: Vec<*const C::Affine> = Vec::new();
    let mut others: Vec<*const C::Affine> = Vec::new();
    let mut bytes: Vec<[u8; 32]> = Vec::new();
    let mut shape = MsmShape::default();
    for i in range {
        if let Some(d) = density {
            if !d.get(i) {
                continue;
            }
        }
        let p: *const C::Affine = &points[next_point];
        next_point += 1;
        let s = scalars[i].to_bytes_le();
        if s == [0u8; 32] {
            shape.zeros += 1;
        } else if s == ONE_LE {
            shape.ones += 1;
            ones.push(p);
        } else {
            shape.others += 1;
            others.push(p);
            bytes.push(s);
        }
    }
    let mut acc = C::sum(&ones);
    acc += C::pippenger(&others, &bytes);
    (acc, shape)
}

/// Σ `scalars[i]·points[i]` over all `i`, or — with a density bitmap over the
/// scalars — over the set bits, taking consecutive points (the SRS stores
/// points only for variables present in the query).
///
/// Panics if there are fewer points than scalars (resp. set bits): callers
/// check SRS sizes first.
pub fn msm<C: MsmCurve>(
    points: &[C::Affine],
    scalars: &[Scalar],
    density: Option<&Density>,
) -> (C::Projective, MsmShape) {
    let n = scalars.len();
    let needed = density.map_or(n, Density::count);
    assert!(
        points.len() >= needed,
        "MSM needs {needed} points, has {}",
        points.len()
    );
    if let Some(d) = density {
        assert_eq!(d.len(), n, "density bitmap and scalars differ in length");
    }
    let threads = rayon::current_num_threads().max(1);
    let parts = if n < 2 * MIN_CHUNK {
        1
    } else {
        (2 * threads).min(n / MIN_CHUNK)
    };
    // Chunk boundaries on multiples of 64 keep prefix counting per word.
    let step = n.div_ceil(parts).next_multiple_of(64).max(64);
    let bounds: Vec<usize> = (0..n).step_by(step).chain(std::iter::once(n)).collect();
    let firsts: Vec<usize> = bounds
        .iter()
        .take(bounds.len() - 1)
        .scan(0usize, |acc, &start| {
            let first = *acc;
            let end = (start + step).min(n);
            *acc += density.map_or(end - start, |d| (start..end).filter(|&i| d.get(i)).count());
            Some(first)
        })
        .collect();
    bounds
        .windows(2)
        .zip(firsts)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(w, first)| chunk::<C>(points, scalars, density, w[0]..w[1], first))
        .reduce(
            || (C::Projective::identity(), MsmShape::default()),
            |(a, sa), (b, sb)| {
                let mut shape = sa;
                shape += sb;
                (a + b, shape)
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::Curve;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn naive_g1(
        points: &[G1Affine],
        scalars: &[Scalar],
        density: Option<&Density>,
    ) -> G1Projective {
        let mut acc = G1Projective::identity();
        let mut j = 0;
        for (i, s) in scalars.iter().enumerate() {
            if density.is_some_and(|d| !d.get(i)) {
                continue;
            }
            acc += points[j] * s;
            j += 1;
        }
        acc
    }

    fn sample(rng: &mut ChaCha8Rng, n: usize) -> (Vec<G1Affine>, Vec<Scalar>) {
        let points: Vec<G1Affine> = (0..n)
            .map(|_| G1Projective::random(&mut *rng).to_affine())
            .collect();
        let scalars = (0..n)
            .map(|_| match rng.gen_range(0..4) {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            })
            .collect();
        (points, scalars)
    }

    #[test]
    fn dense_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for n in [0, 1, 2, 3, 63, 64, 65, 300, 9000] {
            let (points, scalars) = sample(&mut rng, n);
            let (got, shape) = msm::<G1>(&points, &scalars, None);
            assert_eq!(got, naive_g1(&points, &scalars, None), "n = {n}");
            assert_eq!(shape.zeros + shape.ones + shape.others, n);
        }
    }

    #[test]
    fn sparse_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for n in [1, 64, 65, 1000, 10000] {
            let (points, scalars) = sample(&mut rng, n);
            let mut d = Density::new();
            for i in 0..n {
                d.push();
                if rng.gen_bool(0.3) {
                    d.set(i);
                }
            }
            let (got, _) = msm::<G1>(&points[..d.count()], &scalars, Some(&d));
            assert_eq!(got, naive_g1(&points, &scalars, Some(&d)), "n = {n}");
        }
    }

    #[test]
    fn g2_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 200;
        let points: Vec<G2Affine> = (0..n)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let scalars: Vec<Scalar> = (0..n)
            .map(|i| {
                if i % 3 == 0 {
                    Scalar::ONE
                } else {
                    Scalar::random(&mut rng)
                }
            })
            .collect();
        let mut want = G2Projective::identity();
        for (p, s) in points.iter().zip(&scalars) {
            want += p * s;
        }
        assert_eq!(msm::<G2>(&points, &scalars, None).0, want);
    }
}
