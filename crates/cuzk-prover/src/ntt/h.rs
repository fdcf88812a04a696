//! The Groth16 H polynomial on the half-root coset (6 transforms), and bellperson's pipeline on
//! the generator coset (7 transforms) for the one domain size without a half root. See
//! [the module doc](super#the-h-polynomial) for the algebra.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::butterfly::sub_from;
use super::{bitrev_permute, scale, CosetPowers, Domain, Pass, CHUNK};

/// The Groth16 H polynomial: the coefficients of `(A*B - C)/Z`, where `A, B, C` interpolate
/// `a, b, c` on the domain and `Z = X^n - 1` its vanishing polynomial.
///
/// `a`, `b`, `c` hold the constraint evaluations (length at most `domain.size()`; shorter
/// inputs are zero-padded). On return `a` holds `h` (length `n - 1`); `b` and `c` are scratch
/// (length `n`, contents unspecified).
///
/// For a satisfied system (`c_j = a_j * b_j` for every `j`, which a real witness always gives,
/// padding included) the result is bit-identical to bellperson 0.27's
///
/// ```text
/// a.ifft(); a.coset_fft(); (same for b, c)
/// a = a * b - c; a.divide_by_z_on_coset(); a.icoset_fft(); h = a[0..n-1]
/// ```
///
/// but computed on the half-root coset with 6 transforms instead of 7. For an unsatisfied system
/// both results are meaningless and they differ (see [the module doc](super#the-h-polynomial)).
///
/// Panics if any input is longer than the domain.
pub fn compute_h(domain: &Domain, a: &mut Vec<Scalar>, b: &mut Vec<Scalar>, c: &mut Vec<Scalar>) {
    pad(domain, [&mut *a, &mut *b, &mut *c]);
    match &domain.half_coset {
        Some(zeta) => half_coset(domain, zeta, a, b, c),
        None => generator_coset(domain, a, b, c),
    }
    a.truncate(domain.size() - 1);
}

/// [`compute_h`] the way bellperson does it, on the coset `g * <omega>`, whatever the domain
/// size: equal to [`compute_h`] for satisfied systems only.
#[cfg(test)]
pub(super) fn compute_h_generator_coset(
    domain: &Domain,
    a: &mut Vec<Scalar>,
    b: &mut Vec<Scalar>,
    c: &mut Vec<Scalar>,
) {
    pad(domain, [&mut *a, &mut *b, &mut *c]);
    generator_coset(domain, a, b, c);
    a.truncate(domain.size() - 1);
}

/// Zero-pads the inputs to the domain size; panics if one is longer.
fn pad(domain: &Domain, abc: [&mut Vec<Scalar>; 3]) {
    let n = domain.size();
    for v in abc {
        assert!(
            v.len() <= n,
            "compute_h: input of length {} exceeds the domain size {n}",
            v.len()
        );
        v.resize(n, Scalar::ZERO);
    }
}

/// `h` (length `n`, the last coefficient 0 for a satisfied system) on the half-root coset
/// `zeta * <omega>` (`zeta` and `zeta^-1` powers in `zeta`): `h_i = (C_i - zeta^-i P_i) / 2`
/// with `P` the interpolant of `A*B` on the coset.
fn half_coset(
    domain: &Domain,
    zeta: &[CosetPowers; 2],
    a: &mut [Scalar],
    b: &mut [Scalar],
    c: &mut [Scalar],
) {
    // Unscaled inverse transforms give n*coeffs: the coset evaluations come out as n*A and n*B,
    // and C's bit-reversed coefficients, scaled by 1/(2n), as C_i / 2 = (L_i + H_i) / 2.
    let half_n_inv = domain.n_inv * Scalar::TWO_INV;
    rayon::join(
        || domain.evals_to_coset(a, &zeta[0], Scalar::ONE),
        || {
            rayon::join(
                || domain.evals_to_coset(b, &zeta[0], Scalar::ONE),
                || {
                    let op = |leaf: &mut [Scalar], _| scale(leaf, half_n_inv);
                    domain.run(c, 0, Pass::Inv, Pass::Skip, &op);
                },
            )
        },
    );
    a.par_chunks_mut(CHUNK)
        .zip(b.par_chunks(CHUNK))
        .for_each(|(a, b)| a.iter_mut().zip(b).for_each(|(x, y)| *x *= y));
    // n^2 * (L - H) on the coset; the unscaled inverse transform gives n^3 * zeta^i (L_i - H_i)
    // at the same bit-reversed positions as C's: scale by zeta^-i / (2 n^3) and subtract from
    // (L_i + H_i) / 2 in the leaves.
    let n_inv = domain.n_inv;
    let k = n_inv.square() * n_inv * Scalar::TWO_INV;
    let unshift = domain.coset_op(&zeta[1], k);
    let c = &*c;
    let op = |leaf: &mut [Scalar], base: usize| {
        unshift(leaf, base);
        leaf.iter_mut()
            .zip(&c[base..])
            .for_each(|(x, y)| sub_from(x, y));
    };
    domain.run(a, 0, Pass::Inv, Pass::Skip, &op);
    bitrev_permute(a);
}

/// `h` (length `n`) as bellperson computes it, on the coset `g * <omega>`.
fn generator_coset(domain: &Domain, a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar]) {
    // Unscaled inverse transforms give n*coeffs, so the coset evaluations come out as n*A, n*B
    // and (with the extra factor n) n^2*C; then n^2*(A*B - C) = (nA)(nB) - n^2*C.
    let n_field = Scalar::from(domain.size() as u64);
    let g = &domain.coset[0];
    rayon::join(
        || domain.evals_to_coset(a, g, Scalar::ONE),
        || {
            rayon::join(
                || domain.evals_to_coset(b, g, Scalar::ONE),
                || domain.evals_to_coset(c, g, n_field),
            )
        },
    );
    a.par_chunks_mut(CHUNK)
        .zip(b.par_chunks(CHUNK))
        .zip(c.par_chunks(CHUNK))
        .for_each(|((a, b), c)| {
            for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
                *x *= y;
                *x -= z;
            }
        });
    // Unscaled inverse transform (another factor n), g^-i and all constants in the leaves.
    let n_inv = domain.n_inv;
    let k = n_inv.square() * n_inv * domain.z_inv;
    let op = domain.coset_op(&domain.coset[1], k);
    domain.run(a, 0, Pass::Inv, Pass::Skip, &op);
    bitrev_permute(a);
}
