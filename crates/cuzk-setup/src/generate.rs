//! Groth16 parameter generation with bellperson's layout and conventions.
//!
//! [`generate`] draws the toxic waste from an RNG in the order bellperson
//! 0.27's `generate_random_parameters` draws it (`g1`, `g2`, `alpha`, `beta`,
//! `gamma`, `delta`, `tau`), so the same RNG state gives byte-identical
//! parameters. [`generate_with`] takes the toxic waste explicitly. The
//! sections are, with `m` the evaluation-domain size (the constraint count,
//! input constraints included, rounded up to a power of two):
//!
//! * `h[i] = g1 * tau^i * (tau^m - 1) / delta` for `i < m - 1`;
//! * `ic[i] = g1 * (beta a_i + alpha b_i + c_i)(tau) / gamma` per input;
//! * `l[i] = g1 * (beta a_i + alpha b_i + c_i)(tau) / delta` per aux
//!   variable (a zero is an error: the variable is unconstrained);
//! * `a`, `b_g1`, `b_g2`: `g1 * a_i(tau)`, `g1 * b_i(tau)`, `g2 * b_i(tau)`
//!   over inputs then aux variables, points at infinity (zero evaluations)
//!   left out, which is what bellperson's prover expects of its density
//!   bitmaps.
//!
//! All scalar multiplications go through [`crate::fixed_base`].

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_prover::ntt::Domain;
use cuzk_prover::srs::{Srs, VerifyingKeyPoints};
use ff::Field;
use group::{Curve as _, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::assembly::{Assembly, Evaluations};
use crate::curve::{Curve, G1, G2};
use crate::fixed_base::{mul_many, FixedBaseTable};
use crate::{cpu_time, SetupError};

/// The secret values parameters are generated from. Whoever knows them can
/// forge proofs: parameters made here are for tests only.
#[derive(Clone, Copy, Debug)]
pub struct ToxicWaste {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub gamma: Scalar,
    pub delta: Scalar,
    pub tau: Scalar,
}

impl ToxicWaste {
    /// Draws the values in bellperson's order.
    pub fn random<R: RngCore>(rng: &mut R) -> ToxicWaste {
        ToxicWaste {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }

    /// `(1/gamma, 1/delta)`; an error if either is zero or a generator is
    /// the identity.
    pub(crate) fn inverses(&self) -> Result<(Scalar, Scalar), SetupError> {
        let gamma_inv =
            Option::<Scalar>::from(self.gamma.invert()).ok_or(SetupError::Degenerate)?;
        let delta_inv =
            Option::<Scalar>::from(self.delta.invert()).ok_or(SetupError::Degenerate)?;
        if bool::from(self.g1.is_identity()) || bool::from(self.g2.is_identity()) {
            return Err(SetupError::Degenerate);
        }
        Ok((gamma_inv, delta_inv))
    }
}

/// What one generation did and how long each stage took.
#[derive(Clone, Debug, Default)]
pub struct SetupStats {
    /// Constraints, input constraints included.
    pub constraints: usize,
    /// Public inputs, the constant one included.
    pub inputs: usize,
    /// Private variables.
    pub aux: usize,
    /// Non-zero entries of the A, B and C matrices together.
    pub matrix_entries: usize,
    /// log2 of the evaluation-domain size.
    pub domain_log: u32,
    /// G1 and G2 scalar multiplications done (zeros skipped).
    pub g1_muls: usize,
    pub g2_muls: usize,
    /// Window widths of the fixed-base tables.
    pub g1_window: usize,
    pub g2_window: usize,
    /// The streaming generator's first synthesis pass (counting only);
    /// zero for the in-memory one.
    pub count: Duration,
    /// Circuit synthesis: into matrices (in memory), or the evaluating
    /// second pass (streaming).
    pub synthesis: Duration,
    /// Powers of tau, Lagrange basis, per-variable evaluations (in memory)
    /// or the scan of them (streaming), scalars.
    pub scalars: Duration,
    /// Building the fixed-base tables.
    pub tables: Duration,
    /// The h section.
    pub h: Duration,
    /// The ic and l sections.
    pub ic_l: Duration,
    /// The a and b_g1 sections.
    pub a_b_g1: Duration,
    /// The b_g2 section.
    pub b_g2: Duration,
    /// Wall-clock time of the whole generation.
    pub total: Duration,
    /// CPU time of the whole process during the generation (all threads).
    pub cpu: Duration,
    /// Peak resident memory of the whole process so far (`VmHWM`) when the
    /// generation ended, in bytes, where the kernel says.
    pub peak_rss: Option<u64>,
    /// Bytes of the `.params` file written (streaming only).
    pub params_bytes: u64,
}

/// Generates parameters for `circuit` (a blank circuit) from `rng`: same
/// layout, conventions and, for the same RNG state, bytes as bellperson's
/// `generate_random_parameters`.
pub fn generate<C, R>(circuit: C, rng: &mut R) -> Result<(Srs, SetupStats), SetupError>
where
    C: bellpepper_core::Circuit<Scalar>,
    R: RngCore,
{
    let tw = ToxicWaste::random(rng);
    generate_with(circuit, &tw)
}

/// Generates parameters for `circuit` from explicit toxic waste (bellperson's
/// `generate_parameters`).
pub fn generate_with<C>(circuit: C, tw: &ToxicWaste) -> Result<(Srs, SetupStats), SetupError>
where
    C: bellpepper_core::Circuit<Scalar>,
{
    let start = Instant::now();
    let cpu_start = cpu_time();
    let mut stats = SetupStats::default();
    let (gamma_inv, delta_inv) = tw.inverses()?;

    let t = Instant::now();
    let cs = Assembly::synthesize(circuit)?;
    stats.synthesis = t.elapsed();
    stats.constraints = cs.num_constraints();
    stats.inputs = cs.num_inputs();
    stats.aux = cs.num_aux();
    stats.matrix_entries = cs.num_entries();
    tracing::debug!(
        constraints = stats.constraints,
        inputs = stats.inputs,
        aux = stats.aux,
        entries = stats.matrix_entries,
        elapsed = ?stats.synthesis,
        "synthesized blank circuit"
    );

    let t = Instant::now();
    let domain = Domain::for_len(cs.num_constraints())?;
    let m = domain.size();
    stats.domain_log = domain.log_size();
    // powers[i] = tau^i for i < m.
    let mut powers = vec![Scalar::ZERO; m];
    fill_powers(&mut powers, tw.tau, 0, Scalar::ONE);
    // h[i] = tau^i * (tau^m - 1) / delta.
    let coeff = (tw.tau.pow_vartime([m as u64]) - Scalar::ONE) * delta_inv;
    let h_scalars: Vec<Scalar> = powers[..m - 1].par_iter().map(|p| *p * coeff).collect();
    // The inverse transform of the powers of tau is the Lagrange basis at tau.
    domain.intt(&mut powers);
    drop(domain);
    let (num_inputs, num_aux) = (cs.num_inputs(), cs.num_aux());
    let Evaluations { at, bt, ct } = cs.evaluate(&powers);
    drop(powers);
    let ext = |range: std::ops::Range<usize>, inv: Scalar| -> Vec<Scalar> {
        range
            .into_par_iter()
            .map(|i| (tw.beta * at[i] + tw.alpha * bt[i] + ct[i]) * inv)
            .collect()
    };
    let ic_scalars = ext(0..num_inputs, gamma_inv);
    let l_scalars = ext(num_inputs..num_inputs + num_aux, delta_inv);
    drop(ct);
    if let Some(index) = l_scalars.iter().position(|s| bool::from(s.is_zero())) {
        return Err(SetupError::UnconstrainedVariable { index });
    }
    let nonzero = |v: Vec<Scalar>| -> Vec<Scalar> {
        v.into_iter().filter(|s| !bool::from(s.is_zero())).collect()
    };
    let a_scalars = nonzero(at);
    let b_scalars = nonzero(bt);
    stats.scalars = t.elapsed();

    stats.g1_muls =
        h_scalars.len() + ic_scalars.len() + l_scalars.len() + a_scalars.len() + b_scalars.len();
    stats.g2_muls = b_scalars.len();
    let t = Instant::now();
    stats.g1_window = FixedBaseTable::<G1>::best_window(stats.g1_muls);
    stats.g2_window = FixedBaseTable::<G2>::best_window(stats.g2_muls);
    let (g1_table, g2_table) = rayon::join(
        || FixedBaseTable::<G1>::new(&tw.g1, stats.g1_window),
        || FixedBaseTable::<G2>::new(&tw.g2, stats.g2_window),
    );
    stats.tables = t.elapsed();

    let mul1 = |scalars: &[Scalar], elapsed: &mut Duration| -> Vec<G1Affine> {
        let t = Instant::now();
        let out = mul_all::<G1>(&g1_table, scalars);
        *elapsed += t.elapsed();
        out
    };
    let h = mul1(&h_scalars, &mut stats.h);
    drop(h_scalars);
    let ic = mul1(&ic_scalars, &mut stats.ic_l);
    let l = mul1(&l_scalars, &mut stats.ic_l);
    drop(l_scalars);
    let a = mul1(&a_scalars, &mut stats.a_b_g1);
    drop(a_scalars);
    let b_g1 = mul1(&b_scalars, &mut stats.a_b_g1);
    drop(g1_table);
    let t = Instant::now();
    let b_g2: Vec<G2Affine> = mul_all::<G2>(&g2_table, &b_scalars);
    stats.b_g2 = t.elapsed();

    let g1 = tw.g1.to_affine();
    let g2 = tw.g2.to_affine();
    let vk = VerifyingKeyPoints {
        alpha_g1: (g1 * tw.alpha).to_affine(),
        beta_g1: (g1 * tw.beta).to_affine(),
        beta_g2: (g2 * tw.beta).to_affine(),
        gamma_g2: (g2 * tw.gamma).to_affine(),
        delta_g1: (g1 * tw.delta).to_affine(),
        delta_g2: (g2 * tw.delta).to_affine(),
        ic,
    };
    stats.total = start.elapsed();
    stats.cpu = cpu_time().saturating_sub(cpu_start);
    stats.peak_rss = crate::progress::peak_rss();
    tracing::debug!(?stats, "generated parameters");
    Ok((
        Srs {
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        },
        stats,
    ))
}

/// `scalars[i] * base` for all `i`, as blstrs affine points.
pub(crate) fn mul_all<C>(table: &FixedBaseTable<C>, scalars: &[Scalar]) -> Vec<C::BlstrsAffine>
where
    C: Curve,
    C::BlstrsAffine: Default,
{
    let mut out = vec![C::BlstrsAffine::default(); scalars.len()];
    mul_many(table, scalars, &mut out);
    out
}

/// `powers[i] = scale * tau^(start + i)`, in parallel chunks.
pub(crate) fn fill_powers(powers: &mut [Scalar], tau: Scalar, start: u64, scale: Scalar) {
    const CHUNK: usize = 1 << 14;
    powers
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut p = scale * tau.pow_vartime([start + (c * CHUNK) as u64]);
            for x in chunk {
                *x = p;
                p *= tau;
            }
        });
}
