//! The matrices' columns weighted by a vector over the rows: for every
//! variable `v`, `Σ_j A[j][v]·w_j` (and the same for B and C). With `w_j`
//! the Lagrange basis at a point `tau`, these are the per-variable
//! evaluations `a_v(tau)`, `b_v(tau)`, `c_v(tau)` a Groth16 parameter
//! generator needs, read from a recorded system instead of synthesizing
//! the blank circuit again (for a 32 GiB WindowPoSt that pass takes
//! minutes on one core).

use blstrs::Scalar;
use ff::Field;

use crate::compiled::{CompiledCs, CompiledError};
use crate::encode::Var;

/// Per-variable weighted column sums, inputs first (ONE at 0), then the
/// aux variables.
pub struct Columns {
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    /// Terms read, the input constraints' included.
    pub terms: usize,
}

impl CompiledCs {
    /// The columns of A, B and C weighted by `weights` (one per
    /// constraint, the input constraints `input_i · 0 = 0` last, as
    /// [`CompiledCs::evaluate`] orders them; more weights than constraints
    /// are ignored). One thread per matrix.
    pub fn weighted_columns(&self, weights: &[Scalar]) -> Result<Columns, CompiledError> {
        let n = self.num_constraints();
        if (weights.len() as u64) < n {
            return Err(CompiledError::Malformed(format!(
                "{} weights for {n} constraints",
                weights.len()
            )));
        }
        let one = Scalar::ONE;
        let minus_one = -Scalar::ONE;
        let vars = (self.inputs + self.aux) as usize;
        let column = |matrix: usize| {
            let mut acc = vec![Scalar::ZERO; vars];
            let mut terms = 0usize;
            self.for_each_term(|row, m, var, k| {
                if m != matrix {
                    return;
                }
                terms += 1;
                let slot = match var {
                    Var::Input(i) => i as usize,
                    Var::Aux(j) => (self.inputs + j) as usize,
                };
                let (w, c) = (&weights[row as usize], &self.coeffs[k]);
                if *c == one {
                    acc[slot] += w;
                } else if *c == minus_one {
                    acc[slot] -= w;
                } else {
                    acc[slot] += *c * w;
                }
            });
            (acc, terms)
        };
        let ((mut a, ta), ((b, tb), (c, tc))) =
            rayon::join(|| column(0), || rayon::join(|| column(1), || column(2)));
        // The input constraints: input_i in A, nothing in B and C.
        for (i, slot) in a.iter_mut().take(self.inputs as usize).enumerate() {
            *slot += weights[(self.rows + i as u64) as usize];
        }
        Ok(Columns {
            a,
            b,
            c,
            terms: ta + tb + tc + self.inputs as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
    use blstrs::Scalar;
    use ff::Field;

    /// x·y = z with a repeated term and a coefficient, twice over.
    struct Small;

    impl Circuit<Scalar> for Small {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(5)))?;
            let z = cs.alloc(|| "z", || Ok(Scalar::from(15)))?;
            cs.enforce(|| "xy", |lc| lc + x, |lc| lc + y, |lc| lc + z);
            cs.enforce(
                || "2x - y",
                |lc| lc + (Scalar::from(2), x) - y + CS::one(),
                |lc| lc + CS::one(),
                |_| LinearCombination::zero() + (Scalar::from(2), x) - y + CS::one(),
            );
            Ok(())
        }
    }

    #[test]
    fn columns_weigh_every_term_and_the_input_rows() {
        let cs = crate::record("small", Small).expect("recorded");
        assert_eq!((cs.inputs, cs.aux, cs.rows), (2, 2, 2));
        let w: Vec<Scalar> = (1..=5).map(|i| Scalar::from(10u64.pow(i))).collect();
        let col = cs.weighted_columns(&w).expect("columns");
        // Rows 0, 1 recorded; rows 2, 3 the input constraints of ONE and x.
        let s = |v: u64| Scalar::from(v);
        // ONE: A row 1 (+1), B row 1, C row 1; A row 2 (input row).
        assert_eq!(col.a[0], s(100) + s(1000));
        assert_eq!(col.b[0], s(100));
        assert_eq!(col.c[0], s(100));
        // x: A row 0, 2·row 1, input row 3; C 2·row 1.
        assert_eq!(col.a[1], s(10) + s(200) + s(10_000));
        assert_eq!(col.c[1], s(200));
        // y (aux 0): B row 0, −A row 1, −C row 1.
        assert_eq!(col.b[2], s(10));
        assert_eq!(col.a[2], -s(100));
        assert_eq!(col.c[2], -s(100));
        // z (aux 1): C row 0.
        assert_eq!(col.c[3], s(10));
        assert_eq!(col.a[3], Scalar::ZERO);
        assert!(cs.weighted_columns(&w[..3]).is_err());
    }
}
