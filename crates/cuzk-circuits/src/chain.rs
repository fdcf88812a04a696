//! A synthetic circuit of any size, for tests and benchmarks of the prover
//! backends: a chain of squarings with a boolean per step, so the witness
//! has the mix of arbitrary, 0 and 1 scalars that Filecoin circuits have.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};

/// x_{i+1} = x_i² + i for `steps` steps, x_0 and the last value public,
/// plus a boolean side variable per step (b_i = parity of x_i).
///
/// Two constraints per step and one for the output: `steps` =
/// 2^(k−1) − 4 gives a circuit just under 2^k constraints
/// ([`Chain::for_log`]).
#[derive(Clone, Debug)]
pub struct Chain {
    /// x_0 (None for a blank circuit, as parameter generation wants).
    pub x: Option<Scalar>,
    pub steps: usize,
    /// Assigns step i's result plus one (a circuit that is not satisfied,
    /// for tests of the refusal paths); None: a satisfied chain.
    pub break_at: Option<usize>,
}

impl Chain {
    /// A chain just under 2^`log` constraints (`log` ≥ 3).
    pub fn for_log(log: u32, x: Option<Scalar>) -> Chain {
        Chain {
            x,
            steps: (1usize << log.saturating_sub(1)).saturating_sub(4).max(1),
            break_at: None,
        }
    }

    /// The public inputs a proof of this chain is verified with (without
    /// the leading ONE): x_0 and the last value. None for a blank chain.
    pub fn public_inputs(&self) -> Option<Vec<Scalar>> {
        let x0 = self.x?;
        let mut v = x0;
        for i in 0..self.steps {
            v = v.square() + Scalar::from(i as u64);
        }
        Some(vec![x0, v])
    }
}

impl Circuit<Scalar> for Chain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut val = self.x;
        let mut cur = cs.alloc_input(|| "x0", || val.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.steps {
            let next_val = val.map(|v| v.square() + Scalar::from(i as u64));
            let assigned = match self.break_at {
                Some(b) if b == i => next_val.map(|v| v + Scalar::ONE),
                _ => next_val,
            };
            let next = cs.alloc(
                || format!("x{}", i + 1),
                || assigned.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("step {i}"),
                |lc| lc + cur,
                |lc| lc + cur,
                |lc| lc + next - (Scalar::from(i as u64), CS::one()),
            );
            let bit = val.map(|v| {
                if v.is_odd().into() {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                }
            });
            let b = cs.alloc(
                || format!("b{i}"),
                || bit.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("bool {i}"),
                |lc| lc + b,
                |lc| lc + CS::one() - b,
                |lc| lc,
            );
            cur = next;
            val = next_val;
        }
        let out = cs.alloc_input(|| "out", || val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "out", |lc| lc + cur, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_public_inputs_match_the_synthesized_witness() {
        let x = Scalar::from(12345u64);
        let chain = Chain::for_log(10, Some(x));
        let public = chain.public_inputs().expect("assigned");
        let w = cuzk_prover::synthesize(chain).expect("synthesis").witness;
        let n = w.num_constraints();
        assert!(n > 1 << 9 && n <= 1 << 10, "{n} constraints");
        assert_eq!(w.input[0], Scalar::ONE);
        assert_eq!(&w.input[1..], &public[..]);
        // One x and one boolean per step.
        assert_eq!(w.aux.len(), 2 * Chain::for_log(10, None).steps);
        assert!(w.aux.contains(&Scalar::ONE));
        assert!(w.aux.contains(&Scalar::ZERO));
        assert_eq!(Chain::for_log(10, None).public_inputs(), None);
    }
}
