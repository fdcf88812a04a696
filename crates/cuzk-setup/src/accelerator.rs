//! Fixed-base products computed off this CPU (a GPU): the hook the
//! streaming generator calls in place of [`mul_many`](crate::fixed_base::mul_many).
//!
//! An [`Accelerator`] takes the generator's two [`FixedBaseTable`]s once
//! and then chunks of scalars, and hands back Jacobian products (blst's
//! layout). [`mul_accelerated`] makes them affine in parallel batches —
//! an affine point has one representation, so the encoded bytes are the
//! CPU path's — and checks three products of every chunk (the first, one
//! inside, the last) against the CPU table, so a device that computes
//! wrong products stops the generation rather than writing wrong
//! parameters.

use blst::{blst_p1, blst_p2};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::curve::{Curve, G1, G2};
use crate::fixed_base::{mul_many, FixedBaseTable};
use crate::SetupError;

/// Multiplies the bases of the generator's tables by many scalars.
pub trait Accelerator: Sync {
    /// What computes the products, for logs ("CUDA device 0").
    fn name(&self) -> String;
    /// Takes the G1 and G2 tables, before any product.
    fn load(&self, g1: &FixedBaseTable<G1>, g2: &FixedBaseTable<G2>) -> Result<(), String>;
    /// `out[i] = scalars[i] * base` of the G1 table.
    fn g1(&self, scalars: &[Scalar], out: &mut [blst_p1]) -> Result<(), String>;
    /// `out[i] = scalars[i] * base` of the G2 table.
    fn g2(&self, scalars: &[Scalar], out: &mut [blst_p2]) -> Result<(), String>;
}

/// The curves an [`Accelerator`] computes products on.
pub trait Accelerated: Curve {
    fn products(
        a: &dyn Accelerator,
        scalars: &[Scalar],
        out: &mut [Self::Jac],
    ) -> Result<(), String>;
}

impl Accelerated for G1 {
    fn products(
        a: &dyn Accelerator,
        scalars: &[Scalar],
        out: &mut [blst_p1],
    ) -> Result<(), String> {
        a.g1(scalars, out)
    }
}

impl Accelerated for G2 {
    fn products(
        a: &dyn Accelerator,
        scalars: &[Scalar],
        out: &mut [blst_p2],
    ) -> Result<(), String> {
        a.g2(scalars, out)
    }
}

/// Points made affine per batch (one inversion each).
const BATCH: usize = 4096;

/// The products of a chunk of `n` checked on this CPU: the first, an odd
/// one inside and the last (a wrong stride, lane or layout shows in one).
fn spot_checks(n: usize) -> impl Iterator<Item = usize> {
    let mut at = vec![0, (n / 3) | 1, n.saturating_sub(1)];
    at.retain(|&i| i < n);
    at.dedup();
    at.into_iter()
}

/// `scalars[i] * base` through `accel`, affine; three products checked
/// against `table` (the same base on this CPU).
pub(crate) fn mul_accelerated<C>(
    accel: &dyn Accelerator,
    table: &FixedBaseTable<C>,
    scalars: &[Scalar],
) -> Result<Vec<C::BlstrsAffine>, SetupError>
where
    C: Accelerated,
    C::BlstrsAffine: Default + PartialEq,
{
    let failed = |message: String| SetupError::Accelerator {
        name: accel.name(),
        message,
    };
    let mut jac = vec![C::Jac::default(); scalars.len()];
    C::products(accel, scalars, &mut jac).map_err(failed)?;
    let mut out = vec![C::BlstrsAffine::default(); scalars.len()];
    C::as_blst_mut(&mut out)
        .par_chunks_mut(BATCH)
        .zip(jac.par_chunks(BATCH))
        .zip(scalars.par_chunks(BATCH))
        .for_each(|((o, j), s)| {
            // A zero scalar's product is the identity, which the batch
            // conversion does not take: such a batch goes point by point.
            match s.iter().any(|s| bool::from(s.is_zero())) {
                false => C::batch_to_affine(j, o),
                true => o.iter_mut().zip(j).for_each(|(o, j)| *o = C::to_affine(j)),
            }
        });
    for i in spot_checks(scalars.len()) {
        let mut want = [C::BlstrsAffine::default()];
        mul_many(table, &scalars[i..=i], &mut want);
        if out[i] != want[0] {
            return Err(failed(format!(
                "its product of scalar {i} of a {} chunk of {} differs from this CPU's",
                C::NAME,
                scalars.len()
            )));
        }
    }
    Ok(out)
}
