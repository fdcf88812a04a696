//! Checking a circuit without keeping its witness.
//!
//! [`check_satisfied`] runs a circuit into a constraint system that keeps
//! only the assignment and evaluates each constraint's A, B and C as it is
//! enforced, counting the ones with A·B ≠ C: a partition of any size can be
//! checked in the memory of its assignment (no a/b/c vectors, no matrices).
//! [`count`] runs a circuit without evaluating anything (its linear
//! combinations are never built), for the constraint counts of blank
//! circuits. Both follow bellperson's prover: the ONE input first, one
//! `input * 0 = 0` constraint per input appended.

use std::time::{Duration, Instant};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use crate::synth::{SynthError, WitnessCs};

/// What checking one circuit found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitCheck {
    /// Constraints, the input constraints included.
    pub constraints: usize,
    /// Public inputs, ONE included.
    pub inputs: usize,
    pub aux: usize,
    /// Constraints with A·B ≠ C.
    pub unsatisfied: usize,
    /// The first of them.
    pub first_unsatisfied: Option<usize>,
    pub elapsed: Duration,
}

/// Constraint, input and aux counts of a circuit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CircuitShape {
    /// Constraints, the input constraints included.
    pub constraints: usize,
    /// Public inputs, ONE included.
    pub inputs: usize,
    pub aux: usize,
}

#[derive(Default)]
struct CheckCs {
    input: Vec<Scalar>,
    aux: Vec<Scalar>,
    constraints: usize,
    unsatisfied: usize,
    first_unsatisfied: Option<usize>,
}

impl ConstraintSystem<Scalar> for CheckCs {
    crate::assign_into!(input: input, aux: aux);

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let eval = |lc: LinearCombination<Scalar>| {
            WitnessCs::eval(&lc, &self.input, &self.aux, None, None)
        };
        let (ea, eb, ec) = (
            eval(a(LinearCombination::zero())),
            eval(b(LinearCombination::zero())),
            eval(c(LinearCombination::zero())),
        );
        if ea * eb != ec {
            self.unsatisfied += 1;
            self.first_unsatisfied.get_or_insert(self.constraints);
        }
        self.constraints += 1;
    }

    crate::flat_namespaces!();
}

/// Synthesizes `circuit` and checks every constraint, keeping only the
/// assignment.
pub fn check_satisfied<C: Circuit<Scalar>>(circuit: C) -> Result<CircuitCheck, SynthError> {
    let start = Instant::now();
    let mut cs = CheckCs::default();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.input.len() {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(CircuitCheck {
        constraints: cs.constraints,
        inputs: cs.input.len(),
        aux: cs.aux.len(),
        unsatisfied: cs.unsatisfied,
        first_unsatisfied: cs.first_unsatisfied,
        elapsed: start.elapsed(),
    })
}

#[derive(Default)]
struct CountCs {
    shape: CircuitShape,
}

impl ConstraintSystem<Scalar> for CountCs {
    crate::count_into!(input: shape.inputs, aux: shape.aux);

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.shape.constraints += 1;
    }

    crate::flat_namespaces!();
}

/// The shape of `circuit` (a blank one is enough): nothing is evaluated.
pub fn count<C: Circuit<Scalar>>(circuit: C) -> Result<CircuitShape, SynthesisError> {
    let mut cs = CountCs::default();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    let mut shape = cs.shape;
    shape.constraints += shape.inputs;
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::num::AllocatedNum;

    /// x * x = y with a claimed y; one public input.
    struct Square {
        x: u64,
        y: u64,
    }

    impl Circuit<Scalar> for Square {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = AllocatedNum::alloc(cs.namespace(|| "x"), || Ok(Scalar::from(self.x)))?;
            let y = AllocatedNum::alloc_input(cs.namespace(|| "y"), || Ok(Scalar::from(self.y)))?;
            cs.enforce(
                || "x*x=y",
                |lc| lc + x.get_variable(),
                |lc| lc + x.get_variable(),
                |lc| lc + y.get_variable(),
            );
            Ok(())
        }
    }

    #[test]
    fn counts_agree_with_the_witness_and_wrong_claims_are_found() {
        let ok = check_satisfied(Square { x: 3, y: 9 }).unwrap();
        let w = crate::synthesize(Square { x: 3, y: 9 }).unwrap().witness;
        assert_eq!(ok.constraints, w.num_constraints());
        assert_eq!((ok.inputs, ok.aux), (w.input.len(), w.aux.len()));
        assert_eq!((ok.unsatisfied, ok.first_unsatisfied), (0, None));
        assert_eq!(
            count(Square { x: 0, y: 0 }).unwrap(),
            CircuitShape {
                constraints: 3,
                inputs: 2,
                aux: 1
            }
        );
        let bad = check_satisfied(Square { x: 3, y: 10 }).unwrap();
        assert_eq!((bad.unsatisfied, bad.first_unsatisfied), (1, Some(0)));
    }
}
