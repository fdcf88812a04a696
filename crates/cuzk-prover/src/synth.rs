//! Synthesis: running one circuit into a partition witness.
//!
//! [`WitnessCs`] is a `bellpepper_core::ConstraintSystem` that records, per
//! constraint, the evaluations of its A, B and C linear combinations at the
//! assignment, the input and aux assignments, and the A/B density bitmaps —
//! everything the prover backend needs and nothing else (no constraint
//! matrices are kept). Conventions follow bellperson's prover exactly: the
//! ONE input is allocated first, inputs have full density in A because every
//! input gets an `input * 0 = 0` constraint appended after synthesis, and
//! sub-circuits synthesized in parallel are merged with `extend`.

use std::time::{Duration, Instant};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::density::Density;
use crate::matrices::MatricesRef;

/// One partition's witness: what the prover backend consumes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionWitness {
    /// A·z per constraint (input constraints included).
    pub a: Vec<Scalar>,
    /// B·z per constraint.
    pub b: Vec<Scalar>,
    /// C·z per constraint.
    pub c: Vec<Scalar>,
    /// Public inputs; `input[0]` is ONE.
    pub input: Vec<Scalar>,
    /// Private (auxiliary) assignment.
    pub aux: Vec<Scalar>,
    /// Aux variables occurring in some A combination.
    pub a_aux_density: Density,
    /// Inputs occurring in some B combination.
    pub b_input_density: Density,
    /// Aux variables occurring in some B combination.
    pub b_aux_density: Density,
    /// Set when a, b and c were left to the backend ([`crate::AbcAt::Backend`]):
    /// they are empty and these matrices give them.
    pub matrices: Option<MatricesRef>,
    /// The partition is urgent (its job is CRITICAL): a backend that
    /// shares a device between calls runs its kernels before those of
    /// others waiting. Synthesis leaves it unset; the engine sets it.
    pub urgent: bool,
}

impl PartitionWitness {
    /// Gives the witness's vectors to the [`crate::pool`] for the next
    /// partition.
    pub fn recycle(self) {
        let pool = crate::pool::pool();
        for v in [self.a, self.b, self.c, self.aux, self.input] {
            pool.give(v);
        }
    }

    /// Number of constraints (length of a, b, c, evaluated or not).
    pub fn num_constraints(&self) -> usize {
        match &self.matrices {
            Some(m) if self.a.is_empty() => m.constraints(),
            _ => self.a.len(),
        }
    }

    /// Whether a, b and c are still to be evaluated from the matrices.
    pub fn abc_deferred(&self) -> bool {
        self.matrices.is_some() && self.a.is_empty()
    }

    /// Evaluates a, b and c on the host when they were left to the
    /// backend; nothing otherwise. An unsatisfied constraint is an error.
    pub fn evaluate_abc(&mut self) -> Result<(), crate::error::ProverError> {
        if !self.abc_deferred() {
            return Ok(());
        }
        let m = self.matrices.clone().expect("deferred");
        let [a, b, c] = m.evaluate(&self.input, &self.aux)?;
        (self.a, self.b, self.c) = (a, b, c);
        Ok(())
    }

    /// Bytes of the a/b/c evaluation vectors (freed once the backend has
    /// consumed them).
    pub fn abc_bytes(&self) -> usize {
        3 * self.a.len() * std::mem::size_of::<Scalar>()
    }

    /// Bytes of everything else (assignments and densities).
    pub fn assignment_bytes(&self) -> usize {
        (self.input.len() + self.aux.len()) * std::mem::size_of::<Scalar>()
            + self.a_aux_density.bytes()
            + self.b_input_density.bytes()
            + self.b_aux_density.bytes()
    }

    /// The first constraint with A·B ≠ C, if any.
    pub fn first_unsatisfied(&self) -> Option<usize> {
        (0..self.a.len())
            .into_par_iter()
            .with_min_len(1 << 12)
            .find_first(|&i| !crate::raw::holds(&self.a[i], &self.b[i], &self.c[i]))
    }
}

/// Why synthesis did not give a usable witness.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    #[error(
        "the circuit is not satisfied: constraint {index} of {total} has A·B ≠ C \
         (wrong or inconsistent vanilla proof or public inputs?)"
    )]
    Unsatisfied { index: usize, total: usize },
}

/// The recording constraint system.
#[derive(Debug, Default)]
pub struct WitnessCs {
    w: PartitionWitness,
}

impl WitnessCs {
    /// `lc` at the assignment, marking the variables it uses in the given
    /// density bitmaps.
    pub(crate) fn eval(
        lc: &LinearCombination<Scalar>,
        input: &[Scalar],
        aux: &[Scalar],
        mut input_density: Option<&mut Density>,
        mut aux_density: Option<&mut Density>,
    ) -> Scalar {
        let mut acc = Scalar::ZERO;
        for (&i, coeff) in lc.iter_inputs() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            acc += if *coeff == Scalar::ONE {
                input[i]
            } else {
                input[i] * coeff
            };
            if let Some(d) = input_density.as_deref_mut() {
                d.set(i);
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            acc += if *coeff == Scalar::ONE {
                aux[i]
            } else {
                aux[i] * coeff
            };
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(i);
            }
        }
        acc
    }
}

impl ConstraintSystem<Scalar> for WitnessCs {
    fn new() -> Self {
        WitnessCs::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.aux.push(f()?);
        self.w.a_aux_density.push();
        self.w.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.w.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.input.push(f()?);
        self.w.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(
            self.w.input.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let w = &mut self.w;
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        // Inputs have full density in A (each gets an input·0 = 0 constraint),
        // so only aux density is tracked for A; C has no query of its own.
        let ea = Self::eval(&a, &w.input, &w.aux, None, Some(&mut w.a_aux_density));
        let eb = Self::eval(
            &b,
            &w.input,
            &w.aux,
            Some(&mut w.b_input_density),
            Some(&mut w.b_aux_density),
        );
        let ec = Self::eval(&c, &w.input, &w.aux, None, None);
        w.a.push(ea);
        w.b.push(eb);
        w.c.push(ec);
    }

    crate::flat_namespaces!();

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        let (w, o) = (&mut self.w, &other.w);
        w.a_aux_density.extend(&o.a_aux_density, false);
        w.b_input_density.extend(&o.b_input_density, true);
        w.b_aux_density.extend(&o.b_aux_density, false);
        w.a.extend_from_slice(&o.a);
        w.b.extend_from_slice(&o.b);
        w.c.extend_from_slice(&o.c);
        // A sub-circuit starts with its own temporary ONE input: skip it.
        w.input.extend_from_slice(o.input.get(1..).unwrap_or(&[]));
        w.aux.extend_from_slice(&o.aux);
    }
}

/// Expected sizes of a witness, to allocate its vectors once instead of
/// growing them (which would transiently need up to twice the memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WitnessSize {
    /// Length of a/b/c (the evaluation domain size is enough: the backend
    /// pads to it).
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
}

impl WitnessCs {
    /// An empty system with room for a witness of `size`.
    pub fn with_capacity(size: WitnessSize) -> WitnessCs {
        let mut w = PartitionWitness {
            a: Vec::with_capacity(size.constraints),
            b: Vec::with_capacity(size.constraints),
            c: Vec::with_capacity(size.constraints),
            input: Vec::with_capacity(size.inputs),
            aux: Vec::with_capacity(size.aux),
            ..Default::default()
        };
        w.a_aux_density.reserve(size.aux);
        w.b_aux_density.reserve(size.aux);
        w.b_input_density.reserve(size.inputs);
        WitnessCs { w }
    }
}

/// How long synthesis took, and the witness it made.
pub struct Synthesized {
    pub witness: PartitionWitness,
    pub elapsed: Duration,
}

/// Synthesizes one circuit into a witness and checks that every constraint
/// holds; an unsatisfied circuit is an error, never a witness.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Synthesized, SynthError> {
    synthesize_sized(circuit, None)
}

/// As [`synthesize`], allocating for `size` up front when given.
pub fn synthesize_sized<C: Circuit<Scalar>>(
    circuit: C,
    size: Option<WitnessSize>,
) -> Result<Synthesized, SynthError> {
    let start = Instant::now();
    let mut cs = size.map_or_else(WitnessCs::new, WitnessCs::with_capacity);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.w.input.len() {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    let witness = cs.w;
    if let Some(index) = witness.first_unsatisfied() {
        return Err(SynthError::Unsatisfied {
            index,
            total: witness.num_constraints(),
        });
    }
    Ok(Synthesized {
        witness,
        elapsed: start.elapsed(),
    })
}
