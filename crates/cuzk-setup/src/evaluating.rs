//! The second pass over a blank circuit: per-variable evaluations at `tau`
//! without storing the matrices.
//!
//! [`EvaluatingCs`] knows the circuit's [`Shape`] from the first pass and the
//! Lagrange basis at `tau`. Each `enforce` builds the constraint's three
//! linear combinations and adds `coeff * L_j(tau)` into the accumulators of
//! their variables at once, so memory is three scalars per variable plus the
//! basis, whatever the number of matrix entries. Variables are numbered as
//! bellperson numbers them (inputs first, then aux variables), and the
//! input constraints `input_i * 0 = 0` are appended after synthesis, so the
//! result equals [`Assembly::evaluate`](crate::assembly::Assembly::evaluate).

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::assembly::Evaluations;
use crate::counting::Shape;
use crate::SetupError;

/// Constraints between two progress reports.
const REPORT_EVERY: usize = 1 << 16;

/// The result of the evaluating pass.
pub struct Evaluated {
    /// `a_i(tau)`, `b_i(tau)`, `c_i(tau)` per variable, inputs first.
    pub evaluations: Evaluations,
    /// Non-zero entries of the A, B and C matrices together (terms of the
    /// linear combinations).
    pub entries: usize,
}

/// Synthesizes `circuit` into per-variable evaluations at `tau`, given its
/// `shape` (from [`Shape::of`]) and `lagrange[j] = L_j(tau)` for every
/// constraint `j`. `on_progress(done)` is called every few thousand
/// constraints. A circuit that synthesizes to another shape than `shape`
/// is an error.
pub fn evaluate<C: Circuit<Scalar>>(
    circuit: C,
    shape: &Shape,
    lagrange: &[Scalar],
    on_progress: &(dyn Fn(usize) + Sync),
) -> Result<Evaluated, SetupError> {
    let mut cs = EvaluatingCs::new(shape, lagrange, on_progress);
    cs.alloc_input(|| "", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    let inputs = cs.inputs;
    for i in 0..inputs {
        cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    let second = Shape {
        inputs: cs.inputs,
        aux: cs.aux,
        constraints: cs.constraints,
    };
    if cs.outside || second != *shape {
        return Err(SetupError::ShapeChanged {
            first: *shape,
            second,
        });
    }
    on_progress(cs.constraints);
    Ok(Evaluated {
        evaluations: Evaluations {
            at: cs.at,
            bt: cs.bt,
            ct: cs.ct,
        },
        entries: cs.entries,
    })
}

/// A constraint system accumulating evaluations at `tau` per variable.
pub struct EvaluatingCs<'a> {
    /// Inputs of the whole circuit (from the first pass): aux variable `i`
    /// is accumulated at `num_inputs + i`.
    num_inputs: usize,
    lagrange: &'a [Scalar],
    at: Vec<Scalar>,
    bt: Vec<Scalar>,
    ct: Vec<Scalar>,
    inputs: usize,
    aux: usize,
    constraints: usize,
    entries: usize,
    /// Set when a variable or constraint falls outside the first pass' shape.
    outside: bool,
    minus_one: Scalar,
    on_progress: &'a (dyn Fn(usize) + Sync),
}

impl<'a> EvaluatingCs<'a> {
    /// Zeroed accumulators for `shape`'s variables.
    pub fn new(
        shape: &Shape,
        lagrange: &'a [Scalar],
        on_progress: &'a (dyn Fn(usize) + Sync),
    ) -> Self {
        let nv = shape.variables();
        EvaluatingCs {
            num_inputs: shape.inputs,
            lagrange,
            at: vec![Scalar::ZERO; nv],
            bt: vec![Scalar::ZERO; nv],
            ct: vec![Scalar::ZERO; nv],
            inputs: 0,
            aux: 0,
            constraints: 0,
            entries: 0,
            outside: false,
            minus_one: -Scalar::ONE,
            on_progress,
        }
    }

    /// Adds `coeff * l` into `acc` for every term of `lc`.
    fn accumulate(
        acc: &mut [Scalar],
        lc: &LinearCombination<Scalar>,
        l: &Scalar,
        num_inputs: usize,
        minus_one: &Scalar,
        outside: &mut bool,
    ) -> usize {
        let mut terms = 0;
        for (var, coeff) in lc.iter() {
            let idx = match var.get_unchecked() {
                Index::Input(i) if i < num_inputs => i,
                Index::Aux(i) => num_inputs.saturating_add(i),
                Index::Input(_) => usize::MAX,
            };
            let Some(slot) = acc.get_mut(idx) else {
                *outside = true;
                continue;
            };
            if *coeff == Scalar::ONE {
                *slot += l;
            } else if coeff == minus_one {
                *slot -= l;
            } else {
                *slot += *coeff * l;
            }
            terms += 1;
        }
        terms
    }
}

impl ConstraintSystem<Scalar> for EvaluatingCs<'_> {
    cuzk_prover::flat_namespaces!();

    fn is_extensible() -> bool {
        // Like bellperson's generator: synthesis is strictly sequential.
        false
    }

    cuzk_prover::count_into!(input: inputs, aux: aux);

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let j = self.constraints;
        self.constraints += 1;
        if self.constraints % REPORT_EVERY == 0 {
            (self.on_progress)(self.constraints);
        }
        let Some(l) = self.lagrange.get(j) else {
            self.outside = true;
            return;
        };
        let (ni, m1) = (self.num_inputs, &self.minus_one);
        let out = &mut self.outside;
        let lca = a(LinearCombination::zero());
        self.entries += Self::accumulate(&mut self.at, &lca, l, ni, m1, out);
        drop(lca);
        let lcb = b(LinearCombination::zero());
        self.entries += Self::accumulate(&mut self.bt, &lcb, l, ni, m1, out);
        drop(lcb);
        let lcc = c(LinearCombination::zero());
        self.entries += Self::accumulate(&mut self.ct, &lcc, l, ni, m1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::Assembly;
    use bellpepper_core::SynthesisError;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Inputs allocated between aux variables, coefficients of one, minus
    /// one, zero and others, a variable repeated in one combination, and an
    /// optional extra variable in the second synthesis.
    #[derive(Clone)]
    struct Mixed {
        rounds: usize,
        grow_on_second: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    }

    impl Circuit<Scalar> for Mixed {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let one = CS::one();
            let mut prev = cs.alloc(|| "x", || Ok(Scalar::ONE))?;
            for r in 0..self.rounds {
                let k = Scalar::from(r as u64 + 2);
                let x = cs.alloc(|| "a", || Ok(Scalar::ONE))?;
                let y = if r % 3 == 0 {
                    cs.alloc_input(|| "in", || Ok(Scalar::ONE))?
                } else {
                    cs.alloc(|| "b", || Ok(Scalar::ONE))?
                };
                cs.enforce(
                    || "c",
                    |lc| lc + (k, x) - prev + y,
                    |lc| lc + one + (Scalar::ZERO, y) + x + x,
                    |lc| lc - y + (-k, prev),
                );
                prev = y;
            }
            if let Some(flag) = self.grow_on_second {
                if flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    let z = cs.alloc(|| "z", || Ok(Scalar::ONE))?;
                    cs.enforce(|| "z", |lc| lc + z, |lc| lc + z, |lc| lc + z);
                }
            }
            Ok(())
        }
    }

    #[test]
    fn equals_assembly_evaluate() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for rounds in [0, 1, 7, 40] {
            let circuit = Mixed {
                rounds,
                grow_on_second: None,
            };
            let shape = Shape::of(circuit.clone()).expect("count");
            let asm = Assembly::synthesize(circuit.clone()).expect("assembly");
            assert_eq!(
                (shape.inputs, shape.aux, shape.constraints),
                (asm.num_inputs(), asm.num_aux(), asm.num_constraints()),
                "rounds {rounds}"
            );
            let entries = asm.num_entries();
            // Any vector in the role of the basis: the sums must agree.
            let basis: Vec<Scalar> = (0..shape.constraints)
                .map(|_| Scalar::random(&mut rng))
                .collect();
            let reports = std::sync::Mutex::new(Vec::new());
            let on = |d: usize| reports.lock().expect("lock").push(d);
            let ours = evaluate(circuit, &shape, &basis, &on).expect("evaluate");
            let theirs = asm.evaluate(&basis);
            assert_eq!(ours.entries, entries);
            assert!(ours.evaluations.at == theirs.at, "a, rounds {rounds}");
            assert!(ours.evaluations.bt == theirs.bt, "b, rounds {rounds}");
            assert!(ours.evaluations.ct == theirs.ct, "c, rounds {rounds}");
            assert_eq!(
                reports.into_inner().expect("lock").last(),
                Some(&shape.constraints)
            );
            if rounds > 0 {
                assert!(theirs.ct.iter().any(|c| !bool::from(c.is_zero())));
            }
        }
    }

    #[test]
    fn a_changing_shape_is_an_error() {
        let circuit = Mixed {
            rounds: 3,
            grow_on_second: Some(Default::default()),
        };
        let shape = Shape::of(circuit.clone()).expect("count");
        let basis = vec![Scalar::ONE; shape.constraints + 8];
        let err = evaluate(circuit, &shape, &basis, &|_| {})
            .err()
            .expect("second synthesis is larger");
        assert!(
            matches!(err, SetupError::ShapeChanged { first, second }
                if first == shape && second.aux == shape.aux + 1),
            "{err}"
        );
    }
}
