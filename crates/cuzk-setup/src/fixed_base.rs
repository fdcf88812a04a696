//! Many scalar multiplications of one fixed base point.
//!
//! Parameter generation multiplies the two generators by millions of
//! scalars. A [`FixedBaseTable`] holds, for each `w`-bit window `j` of a
//! scalar, the multiples `k * 2^(w j) * P` for `k = 1 ..= 2^(w-1)` in affine
//! form. A scalar recoded into signed digits `d_j` in `(-2^(w-1), 2^(w-1)]`
//! then costs one table lookup and one addition per window and no doublings.
//!
//! The additions are done in affine coordinates, many scalars at a time
//! ([`mul_many`]): each window adds one table point to every accumulator of
//! a batch, and the `n` slope denominators of the batch share one field
//! inversion (Montgomery's trick). An affine addition then costs about six
//! field multiplications against eleven for a mixed Jacobian addition, and
//! the results come out affine with no final normalisation. Exceptional
//! cases (an accumulator meeting its own point or its negation) fall back to
//! blst's complete Jacobian formulas. Table points are prefetched a few
//! scalars ahead: with 16-bit windows a G1 table is 50 MB, and the lookups
//! are otherwise cache misses.

use blstrs::Scalar;
use rayon::prelude::*;

use crate::curve::Curve;

/// Scalars per batch sharing one inversion per window.
const BATCH: usize = 1024;

/// How many scalars ahead table points are prefetched.
const PREFETCH: usize = 16;

/// Bits of a scalar (the BLS12-381 scalar field modulus is below `2^255`).
const SCALAR_BITS: usize = 255;

/// Affine multiples of a base point per scalar window.
pub struct FixedBaseTable<C: Curve> {
    window: usize,
    windows: usize,
    half: usize,
    /// `points[j * half + k] = (k + 1) * 2^(window * j) * base`.
    points: Vec<C::Affine>,
}

impl<C: Curve> FixedBaseTable<C> {
    /// Builds the table of `base` (which must not be the identity) for
    /// `window`-bit windows (`2 ..= 24`).
    pub fn new(base: &C::BlstrsProjective, window: usize) -> Self {
        assert!((2..=24).contains(&window), "window of {window} bits");
        // With signed digits the top window must hold at most `window - 1`
        // bits so the final carry is absorbed: one more window than
        // `255 / window` guarantees it.
        let windows = SCALAR_BITS / window + 1;
        let half = 1usize << (window - 1);
        let mut bases = Vec::with_capacity(windows);
        let mut b = C::from_blstrs(base);
        for _ in 0..windows {
            bases.push(C::to_affine(&b));
            for _ in 0..window {
                b = C::double(&b);
            }
        }
        let mut points = vec![C::Affine::default(); windows * half];
        points
            .par_chunks_mut(half)
            .zip(bases.par_iter())
            .for_each(|(out, base)| {
                let mut jac = Vec::with_capacity(half);
                let mut acc = C::from_affine(base);
                jac.push(acc);
                for _ in 1..half {
                    acc = C::add_affine(&acc, base);
                    jac.push(acc);
                }
                C::batch_to_affine(&jac, out);
            });
        FixedBaseTable {
            window,
            windows,
            half,
            points,
        }
    }

    /// Window width in bits.
    pub fn window(&self) -> usize {
        self.window
    }

    /// The points, `points[j * 2^(window-1) + k] = (k + 1) * 2^(window j)
    /// * base` (what an [`Accelerator`](crate::Accelerator) copies).
    pub fn points(&self) -> &[C::Affine] {
        &self.points
    }

    /// Memory held by the table.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(self.points.as_slice())
    }

    /// Writes the signed `window`-bit digits of `s` into `digits`.
    fn recode(&self, s: &Scalar, digits: &mut [i32]) {
        let bytes = s.to_bytes_le();
        let mut limbs = [0u64; 5];
        for (l, c) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            *l = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
        }
        let mask = (1u64 << self.window) - 1;
        let half = self.half as i64;
        let mut carry = 0i64;
        for (j, d) in digits.iter_mut().enumerate() {
            let bit = j * self.window;
            let (limb, shift) = (bit / 64, bit % 64);
            let mut raw = limbs[limb] >> shift;
            if shift + self.window > 64 && limb + 1 < limbs.len() {
                raw |= limbs[limb + 1] << (64 - shift);
            }
            let mut v = (raw & mask) as i64 + carry;
            carry = 0;
            if v > half {
                v -= 2 * half;
                carry = 1;
            }
            *d = v as i32;
        }
        debug_assert_eq!(carry, 0, "scalar not below 2^255");
    }

    /// The window width minimising table building plus `n` multiplications.
    pub fn best_window(n: usize) -> usize {
        (2..=16)
            .min_by_key(|&w| (SCALAR_BITS / w + 1) * ((1usize << (w - 1)) + n))
            .unwrap_or(16)
    }
}

/// Per-thread buffers of [`mul_batch`].
struct Scratch<C: Curve> {
    digits: Vec<i32>,
    acc: Vec<C::Affine>,
    inf: Vec<bool>,
    pend_idx: Vec<u32>,
    pend_q: Vec<C::Affine>,
    prod: Vec<C::Fe>,
}

impl<C: Curve> Scratch<C> {
    fn new() -> Self {
        Scratch {
            digits: Vec::new(),
            acc: Vec::new(),
            inf: Vec::new(),
            pend_idx: Vec::new(),
            pend_q: Vec::new(),
            prod: Vec::new(),
        }
    }
}

/// `out[i] = scalars[i] * base` for all `i`, in parallel; a zero scalar
/// gives the identity (blst's all-zero affine encoding).
pub fn mul_many<C: Curve>(
    table: &FixedBaseTable<C>,
    scalars: &[Scalar],
    out: &mut [C::BlstrsAffine],
) {
    assert_eq!(scalars.len(), out.len());
    let out = C::as_blst_mut(out);
    out.par_chunks_mut(BATCH)
        .zip(scalars.par_chunks(BATCH))
        .for_each_init(Scratch::<C>::new, |s, (o, sc)| mul_batch(table, sc, o, s));
}

/// One batch of [`mul_many`].
fn mul_batch<C: Curve>(
    table: &FixedBaseTable<C>,
    scalars: &[Scalar],
    out: &mut [C::Affine],
    s: &mut Scratch<C>,
) {
    let n = scalars.len();
    let nw = table.windows;
    s.digits.resize(n * nw, 0);
    for (sc, d) in scalars.iter().zip(s.digits.chunks_exact_mut(nw)) {
        table.recode(sc, d);
    }
    s.acc.clear();
    s.acc.resize(n, C::Affine::default());
    s.inf.clear();
    s.inf.resize(n, true);

    for j in 0..nw {
        let tab = &table.points[j * table.half..(j + 1) * table.half];
        s.pend_idx.clear();
        s.pend_q.clear();
        s.prod.clear();
        // Forward: collect the additions to do, with running products of
        // their slope denominators.
        for i in 0..n {
            if i + PREFETCH < n {
                let d = s.digits[(i + PREFETCH) * nw + j];
                if d != 0 {
                    prefetch(&tab[d.unsigned_abs() as usize - 1]);
                }
            }
            let d = s.digits[i * nw + j];
            if d == 0 {
                continue;
            }
            let t = &tab[d.unsigned_abs() as usize - 1];
            let q = C::from_xy(*C::x(t), C::cneg(C::y(t), d < 0));
            if s.inf[i] {
                s.acc[i] = q;
                s.inf[i] = false;
                continue;
            }
            let a = &s.acc[i];
            if C::fe_eq(C::x(a), C::x(&q)) {
                // a == q: double; a == -q: the identity.
                if C::fe_eq(C::y(a), C::y(&q)) {
                    s.acc[i] = C::to_affine(&C::double(&C::from_affine(a)));
                } else {
                    s.inf[i] = true;
                }
                continue;
            }
            let dx = C::sub(C::x(&q), C::x(a));
            let p = match s.prod.last() {
                Some(last) => C::mul(last, &dx),
                None => dx,
            };
            s.prod.push(p);
            s.pend_idx.push(i as u32);
            s.pend_q.push(q);
        }
        let Some(last) = s.prod.last() else {
            continue;
        };
        // Backward: peel one inverse off per addition and apply it.
        let mut inv = C::inv(last);
        for k in (0..s.prod.len()).rev() {
            let i = s.pend_idx[k] as usize;
            let q = &s.pend_q[k];
            let a = s.acc[i];
            let inv_k = if k > 0 {
                let inv_k = C::mul(&inv, &s.prod[k - 1]);
                inv = C::mul(&inv, &C::sub(C::x(q), C::x(&a)));
                inv_k
            } else {
                inv
            };
            let lambda = C::mul(&C::sub(C::y(q), C::y(&a)), &inv_k);
            let x3 = C::sub(&C::sub(&C::sqr(&lambda), C::x(&a)), C::x(q));
            let y3 = C::sub(&C::mul(&lambda, &C::sub(C::x(&a), &x3)), C::y(&a));
            s.acc[i] = C::from_xy(x3, y3);
        }
    }
    for ((o, a), inf) in out.iter_mut().zip(&s.acc).zip(&s.inf) {
        *o = if *inf { C::Affine::default() } else { *a };
    }
}

/// Hints the cache lines of `p` into the cache.
#[inline(always)]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (p as *const T).cast::<i8>();
        for off in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: prefetching is a hint; the address is within `*p`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::{G1, G2};
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use ff::Field;
    use group::{Curve as _, Group};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn scalars(rng: &mut ChaCha20Rng, n: usize) -> Vec<Scalar> {
        let mut v: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
        // Edge cases: zero, small values, -1, -2, and repeats.
        v.extend([
            Scalar::ZERO,
            Scalar::ONE,
            Scalar::from(2u64),
            Scalar::from(0xffffu64),
            Scalar::from(0x8000u64),
            Scalar::from(0x8001u64),
            -Scalar::ONE,
            -Scalar::from(2u64),
            Scalar::from(u64::MAX),
        ]);
        v
    }

    #[test]
    fn g1_matches_plain_multiplication() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let base = G1Projective::random(&mut rng);
        let sc = scalars(&mut rng, 3000);
        for w in [3, 8, 13, 16] {
            let table = FixedBaseTable::<G1>::new(&base, w);
            let mut out = vec![G1Affine::default(); sc.len()];
            mul_many(&table, &sc, &mut out);
            for (s, o) in sc.iter().zip(&out) {
                assert_eq!(*o, (base * s).to_affine(), "window {w}, scalar {s:?}");
            }
        }
    }

    #[test]
    fn g2_matches_plain_multiplication() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let base = G2Projective::random(&mut rng);
        let sc = scalars(&mut rng, 500);
        for w in [5, 12] {
            let table = FixedBaseTable::<G2>::new(&base, w);
            let mut out = vec![G2Affine::default(); sc.len()];
            mul_many(&table, &sc, &mut out);
            for (s, o) in sc.iter().zip(&out) {
                assert_eq!(*o, (base * s).to_affine(), "window {w}");
            }
        }
    }

    #[test]
    fn exceptional_additions() {
        // With 2-bit windows, digits repeat the same table points often, and
        // scalars like 2^k (k even) * (1 + 4) hit a == q in the accumulator.
        let base = G1Projective::generator();
        let table = FixedBaseTable::<G1>::new(&base, 2);
        let sc: Vec<Scalar> = (0u64..4096).map(Scalar::from).collect();
        let mut out = vec![G1Affine::default(); sc.len()];
        mul_many(&table, &sc, &mut out);
        for (s, o) in sc.iter().zip(&out) {
            assert_eq!(*o, (base * s).to_affine());
        }
    }

    #[test]
    fn best_window_grows_with_count() {
        assert!(FixedBaseTable::<G1>::best_window(10) <= 6);
        assert_eq!(FixedBaseTable::<G1>::best_window(10_000_000), 16);
    }
}
