//! Tests of the NTT: naive DFTs, round trips and equality with bellperson.

use super::h::compute_h_generator_coset;
use super::*;
use bellperson::domain::EvaluationDomain;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

type Op = fn(&Domain, &mut [Scalar]);

fn random_vec(rng: &mut ChaCha20Rng, len: usize) -> Vec<Scalar> {
    (0..len).map(|_| Scalar::random(&mut *rng)).collect()
}

fn apply(d: &Domain, x: &[Scalar], ops: &[Op]) -> Vec<Scalar> {
    let mut y = x.to_vec();
    ops.iter().for_each(|op| op(d, &mut y));
    y
}

/// `X_k = c * sum_i a_i (s w^k)^i`, O(n^2).
fn naive_dft(a: &[Scalar], w: Scalar, s: Scalar, c: Scalar) -> Vec<Scalar> {
    let mut x = s;
    (0..a.len())
        .map(|_| {
            let (mut acc, mut p) = (Scalar::ZERO, c);
            for ai in a {
                acc += *ai * p;
                p *= x;
            }
            x *= w;
            acc
        })
        .collect()
}

/// Production parameters, then tiny leaves / column passes so that small sizes exercise
/// multi-level recursion, with odd and even leaves and column passes (radix-2 + radix-4).
const PARAMS: [(u32, u32); 7] = [
    (LEAF_LOG, MAX_COL_LOG),
    (0, 1),
    (1, 2),
    (2, 3),
    (3, 2),
    (5, 3),
    (4, 4),
];

/// The four transforms of `Domain::with_params(log_n, leaf, col)` against naive DFTs.
fn check_naive(log_n: u32, leaf: u32, col: u32, rng: &mut ChaCha20Rng) {
    let (one, g) = (Scalar::ONE, Scalar::MULTIPLICATIVE_GENERATOR);
    let g_inv = g.invert().unwrap();
    let d = Domain::with_params(log_n, leaf, col).unwrap();
    let x = random_vec(rng, d.size());
    let (w, w_inv) = (d.omega(), d.omega().invert().unwrap());
    let n_inv = Scalar::from(d.size() as u64).invert().unwrap();
    let xi = naive_dft(&x, w_inv, one, n_inv);
    let pows = (0..).map(|i| g_inv.pow_vartime([i]));
    let xig = xi.iter().zip(pows).map(|(v, p)| *v * p).collect();
    let cases: [(Op, Vec<Scalar>); 4] = [
        (Domain::ntt, naive_dft(&x, w, one, one)),
        (Domain::intt, xi),
        (Domain::coset_ntt, naive_dft(&x, w, g, one)),
        (Domain::coset_intt, xig),
    ];
    for (i, (op, expected)) in cases.into_iter().enumerate() {
        let y = apply(&d, &x, &[op]);
        assert_eq!(y, expected, "op {i}, 2^{log_n}, leaf 2^{leaf}, col {col}");
    }
}

#[test]
fn matches_naive_dft() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for log_n in 0..=9 {
        for (leaf, col) in PARAMS {
            check_naive(log_n, leaf, col, &mut rng);
        }
    }
}

/// Every leaf size and column-pass depth for small sizes (2^0..2^3 included): pure leaves of
/// odd and even size, single radix-2 or radix-4 column stages, odd/even column passes.
#[test]
fn small_sizes_all_splits() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    for log_n in 0..=6 {
        for leaf in 0..=log_n {
            for col in 1..=4 {
                check_naive(log_n, leaf, col, &mut rng);
            }
        }
    }
}

/// Twiddles (`omega^+-k` for every `k < n`, by symmetry from the half table), the 4th roots,
/// and the stage-by-stage radix-4 leaf tables.
#[test]
fn twiddle_tables() {
    for log_n in 1..=9 {
        for leaf_log in [0, 1, 2, 3, 4, 5, LEAF_LOG] {
            let d = Domain::with_params(log_n, leaf_log, MAX_COL_LOG).unwrap();
            let (n, w) = (d.size(), d.omega());
            let w_inv = w.invert().unwrap();
            let msg = format!("2^{log_n}, leaf 2^{leaf_log}");
            for k in 0..n {
                assert_eq!(d.twiddle(k, false), w.pow_vartime([k as u64]), "{msg}");
                assert_eq!(d.twiddle(k, true), w_inv.pow_vartime([k as u64]), "{msg}");
            }
            let [zeta, zeta_inv] = d.half_coset.as_ref().unwrap().each_ref().map(|p| p.shift);
            assert_eq!(zeta.square(), w, "{msg}");
            assert_eq!(zeta.pow_vartime([n as u64]), -Scalar::ONE, "{msg}");
            assert_eq!(zeta * zeta_inv, Scalar::ONE, "{msg}");
            if n >= 4 {
                assert_eq!(d.im.square(), -Scalar::ONE, "{msg}");
                assert_eq!(
                    (d.im, d.im * d.im_inv),
                    (d.twiddle(n / 4, false), Scalar::ONE)
                );
            }
            let leaf = 1usize << d.leaf_log;
            let (wl, wl_inv) = (
                w.pow_vartime([(n / leaf) as u64]),
                w_inv.pow_vartime([(n / leaf) as u64]),
            );
            for (t, root) in [(&d.leaf_tw, wl), (&d.leaf_tw_inv, wl_inv)] {
                for h in (0..d.leaf_log / 2).map(|k| leaf >> (2 * k + 2)) {
                    let big_w = root.pow_vartime([(leaf / (4 * h)) as u64]);
                    for j in 0..h {
                        for k in 1..=3 {
                            let e = big_w.pow_vartime([(k * j) as u64]);
                            assert_eq!(t[leaf - 4 * h + 3 * j + k - 1], e, "{msg}, h {h}, j {j}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn round_trips() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let cases = (0..=16).map(|l| (l, LEAF_LOG, MAX_COL_LOG));
    for (log_n, leaf, col) in cases.chain([(10, 0, 3), (11, 2, 2), (12, 3, 4), (13, 1, 5)]) {
        let d = Domain::with_params(log_n, leaf, col).unwrap();
        let x = random_vec(&mut rng, d.size());
        for ops in [
            [Domain::ntt as Op, Domain::intt],
            [Domain::intt, Domain::ntt],
            [Domain::coset_ntt, Domain::coset_intt],
            [Domain::coset_intt, Domain::coset_ntt],
        ] {
            let msg = format!("2^{log_n}, leaf 2^{leaf}, col {col}");
            assert_eq!(apply(&d, &x, &ops), x, "{msg}");
        }
    }
}

#[test]
fn bitrev_permute_is_bit_reversal() {
    for log_n in 0..=13 {
        let x: Vec<Scalar> = (0..1u64 << log_n).map(Scalar::from).collect();
        let mut y = x.clone();
        bitrev_permute(&mut y);
        for (i, v) in y.iter().enumerate() {
            assert_eq!(*v, x[rev_bits(i, log_n)], "2^{log_n} index {i}");
        }
    }
}

#[test]
fn domain_sizes_and_errors() {
    assert_eq!(Domain::for_len(0).unwrap().size(), 1);
    assert_eq!(Domain::for_len(5).unwrap().log_size(), 3);
    assert_eq!(Domain::for_len(1 << 10).unwrap().size(), 1 << 10);
    let too_large = Domain::new(Scalar::S + 1);
    assert!(matches!(too_large, Err(NttError::DomainTooLarge { .. })));
    assert!(Domain::for_len(usize::MAX).is_err());
}

/// bellperson's CPU pipeline (`groth16/prover/native.rs::execute_fft`).
fn bellperson_h(a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Vec<Scalar> {
    let worker = Default::default();
    let mut a = EvaluationDomain::from_coeffs(a).unwrap();
    let mut b = EvaluationDomain::from_coeffs(b).unwrap();
    let mut c = EvaluationDomain::from_coeffs(c).unwrap();
    let mut abc = [&mut a, &mut b, &mut c];
    EvaluationDomain::ifft_many(&mut abc, &worker, &mut None).unwrap();
    EvaluationDomain::coset_fft_many(&mut abc, &worker, &mut None).unwrap();
    a.mul_assign(&worker, &b);
    a.sub_assign(&worker, &c);
    a.divide_by_z_on_coset(&worker);
    a.icoset_fft(&worker, &mut None).unwrap();
    let mut h = a.into_coeffs();
    h.truncate(h.len() - 1);
    h
}

/// Evaluations of a satisfied system of `len` constraints: random `a`, `b` and `c = a * b`.
fn satisfied(rng: &mut ChaCha20Rng, len: usize) -> [Vec<Scalar>; 3] {
    let (a, b) = (random_vec(rng, len), random_vec(rng, len));
    let c = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
    [a, b, c]
}

fn check_h(d: &Domain, len: usize, rng: &mut ChaCha20Rng) {
    let [mut a, mut b, mut c] = satisfied(rng, len);
    let expected = bellperson_h(a.clone(), b.clone(), c.clone());
    compute_h(d, &mut a, &mut b, &mut c);
    let msg = format!("compute_h != bellperson: 2^{}, len {len}", d.log_n);
    assert!(a.len() == d.size() - 1 && a == expected, "{msg}");
}

#[test]
fn compute_h_matches_bellperson() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    for log_n in (0..=15).chain([17, 18]) {
        let d = Domain::new(log_n).unwrap();
        let n = d.size();
        check_h(&d, n, &mut rng);
        // Fewer constraints than the domain size: zero-padded like bellperson (the padding
        // satisfies 0 * 0 = 0).
        check_h(&d, n / 2 + 1 + rng.gen_range(0..n.div_ceil(2)), &mut rng);
    }
    for (leaf, col) in PARAMS {
        check_h(&Domain::with_params(11, leaf, col).unwrap(), 2000, &mut rng);
    }
}

/// `compute_h` on the half-root coset and bellperson's generator-coset pipeline.
fn both_h(d: &Domain, [a, b, c]: &[Vec<Scalar>; 3]) -> [Vec<Scalar>; 2] {
    let (mut a1, mut b1, mut c1) = (a.clone(), b.clone(), c.clone());
    compute_h(d, &mut a1, &mut b1, &mut c1);
    let (mut a2, mut b2, mut c2) = (a.clone(), b.clone(), c.clone());
    compute_h_generator_coset(d, &mut a2, &mut b2, &mut c2);
    [a1, a2]
}

#[test]
fn half_coset_h_equals_generator_coset_h_when_satisfied() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    for log_n in 0..=10 {
        for (leaf, col) in PARAMS {
            let d = Domain::with_params(log_n, leaf, col).unwrap();
            let len = d.size() - rng.gen_range(0..d.size().div_ceil(2));
            let [h, expected] = both_h(&d, &satisfied(&mut rng, len));
            assert!(h == expected, "2^{log_n}, leaf 2^{leaf}, col {col}, {len}");
        }
    }
}

/// For unsatisfied inputs the two pipelines differ (so this fails if `compute_h` silently took
/// the generator coset): with `A*B = L + X^n H` and `C` the interpolant of `c`, the half-root
/// coset gives `(C - L + H)/2` and the generator coset `(L - C + g^n H)/(g^n - 1)`.
#[test]
fn half_coset_h_differs_from_generator_coset_h_when_unsatisfied() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for (log_n, (leaf, col)) in [(3, PARAMS[0]), (4, PARAMS[0]), (5, (2, 2)), (6, (3, 2))] {
        let d = Domain::with_params(log_n, leaf, col).unwrap();
        let n = d.size();
        let abc = [(); 3].map(|_| random_vec(&mut rng, n));
        let [h_zeta, h_g] = both_h(&d, &abc);
        assert_ne!(h_zeta, h_g, "2^{log_n}");
        // The closed forms, from the coefficients of A, B (naive product) and C.
        let [ca, cb, cc] = abc.map(|v| apply(&d, &v, &[Domain::intt]));
        let mut ab = vec![Scalar::ZERO; 2 * n];
        for (i, x) in ca.iter().enumerate() {
            for (j, y) in cb.iter().enumerate() {
                ab[i + j] += *x * y;
            }
        }
        let (l, h) = ab.split_at(n);
        let gn = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([n as u64]);
        let z_inv = (gn - Scalar::ONE).invert().unwrap();
        for i in 0..n - 1 {
            let msg = format!("2^{log_n}, coefficient {i}");
            assert_eq!(h_zeta[i], (cc[i] - l[i] + h[i]) * Scalar::TWO_INV, "{msg}");
            assert_eq!(h_g[i], (l[i] - cc[i] + gn * h[i]) * z_inv, "{msg}");
        }
    }
}

#[test]
fn ops_match_bellperson() {
    type Bp = fn(&mut EvaluationDomain<Scalar>);
    let cases: [(Op, Bp); 5] = [
        (Domain::ntt, |e| {
            e.fft(&Default::default(), &mut None).unwrap()
        }),
        (Domain::intt, |e| {
            e.ifft(&Default::default(), &mut None).unwrap()
        }),
        (Domain::coset_ntt, |e| {
            e.coset_fft(&Default::default(), &mut None).unwrap()
        }),
        (Domain::coset_intt, |e| {
            e.icoset_fft(&Default::default(), &mut None).unwrap()
        }),
        (Domain::divide_by_z_on_coset, |e| {
            e.divide_by_z_on_coset(&Default::default())
        }),
    ];
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for log_n in [0, 1, 2, 3, 5, 12, 13, 15, 16] {
        let d = Domain::new(log_n).unwrap();
        let x = random_vec(&mut rng, d.size());
        for (i, (op, bp)) in cases.iter().enumerate() {
            let mut e = EvaluationDomain::from_coeffs(x.clone()).unwrap();
            bp(&mut e);
            assert!(
                apply(&d, &x, &[*op]) == e.into_coeffs(),
                "op {i}, 2^{log_n}"
            );
        }
    }
}
