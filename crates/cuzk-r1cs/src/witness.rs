//! A partition witness from a compiled constraint system.
//!
//! [`AssignmentCs`] runs a circuit keeping only its assignment: it never
//! calls a linear-combination closure and does no work per constraint.
//! [`synthesize_compiled`] then computes a, b and c from the compiled
//! matrices and takes the densities from them, giving exactly the
//! [`PartitionWitness`] that `cuzk_prover::synthesize` gives (same vectors,
//! same densities), checked to satisfy every constraint.

use std::sync::Arc;
use std::time::Instant;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_prover::{AbcAt, MatricesRef, PartitionWitness, Synthesized};
use ff::Field;

use crate::compiled::{CompiledCs, CompiledError};

/// Why the compiled path gave no witness.
#[derive(Debug, thiserror::Error)]
pub enum CompiledSynthError {
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    #[error(transparent)]
    Compiled(#[from] CompiledError),
    #[error(
        "the circuit is not satisfied: constraint {index} of {total} has A·B ≠ C \
         (wrong or inconsistent vanilla proof or public inputs?)"
    )]
    Unsatisfied { index: usize, total: usize },
}

/// A constraint system that keeps only an assignment: it ignores every
/// constraint, so code that allocates a gadget's variables with their
/// values, without the gadget's constraints, gives it the same result as
/// the gadget. Native witness code is written against this trait and
/// cannot be run into a system that records constraints.
pub trait AssignOnly: ConstraintSystem<Scalar> {}

impl AssignOnly for AssignmentCs {}

/// A constraint system that keeps the assignment and nothing else.
#[derive(Debug, Default)]
pub struct AssignmentCs {
    pub input: Vec<Scalar>,
    pub aux: Vec<Scalar>,
}

impl AssignmentCs {
    /// An empty system with room for `inputs` inputs and `aux` aux values.
    pub fn with_capacity(inputs: usize, aux: usize) -> AssignmentCs {
        let pool = cuzk_prover::pool::pool();
        AssignmentCs {
            input: pool.take(inputs),
            aux: pool.take(aux),
        }
    }
}

impl ConstraintSystem<Scalar> for AssignmentCs {
    fn new() -> Self {
        AssignmentCs::default()
    }

    cuzk_prover::assign_into!(input: input, aux: aux);

    cuzk_prover::ignore_constraints!();

    cuzk_prover::flat_namespaces!();

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        // A sub-circuit's first input is its own ONE.
        self.input
            .extend_from_slice(other.input.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
    }
}

/// Synthesizes `circuit` through the compiled system `cs`: the assignment
/// by running the circuit into an [`AssignmentCs`], then a, b, c from the
/// matrices; an assignment of another shape or one that does not satisfy
/// every constraint is an error, never a witness.
pub fn synthesize_compiled<C: Circuit<Scalar>>(
    circuit: C,
    cs: &CompiledCs,
) -> Result<Synthesized, CompiledSynthError> {
    synthesize_compiled_with(cs, |asg| circuit.synthesize(asg))
}

/// As [`synthesize_compiled`], the assignment made by `assign` (the
/// circuit's gadgets, or native code that allocates the same variables):
/// it is given an [`AssignmentCs`] holding ONE and sized for `cs`.
pub fn synthesize_compiled_with(
    cs: &CompiledCs,
    assign: impl FnOnce(&mut AssignmentCs) -> Result<(), SynthesisError>,
) -> Result<Synthesized, CompiledSynthError> {
    let start = Instant::now();
    let asg = assignment(cs, assign)?;
    evaluated(cs, asg, start)
}

/// As [`synthesize_compiled_with`] when `at` is [`AbcAt::Synthesis`];
/// at [`AbcAt::Backend`] the witness holds the assignment and the
/// matrices only (a, b, c empty): the prover backend evaluates them, and
/// checks A·B = C.
pub fn synthesize_compiled_at(
    cs: &Arc<CompiledCs>,
    at: AbcAt,
    assign: impl FnOnce(&mut AssignmentCs) -> Result<(), SynthesisError>,
) -> Result<Synthesized, CompiledSynthError> {
    let start = Instant::now();
    let asg = assignment(cs, assign)?;
    if at == AbcAt::Synthesis {
        return evaluated(cs, asg, start);
    }
    if asg.input.len() as u64 != cs.inputs || asg.aux.len() as u64 != cs.aux {
        return Err(CompiledError::Shape {
            key: cs.key.clone(),
            inputs: asg.input.len(),
            aux: asg.aux.len(),
            want_inputs: cs.inputs,
            want_aux: cs.aux,
        }
        .into());
    }
    let witness = PartitionWitness {
        input: asg.input,
        aux: asg.aux,
        a_aux_density: cs.a_aux_density.clone(),
        b_input_density: cs.b_input_density.clone(),
        b_aux_density: cs.b_aux_density.clone(),
        matrices: Some(MatricesRef(cs.clone())),
        urgent: false,
        ..Default::default()
    };
    tracing::debug!(
        shape = %cs.key,
        assignment_ms = start.elapsed().as_millis() as u64,
        "compiled synthesis, a/b/c left to the backend"
    );
    Ok(Synthesized {
        witness,
        elapsed: start.elapsed(),
    })
}

/// The assignment, made by `assign` into a system holding ONE.
fn assignment(
    cs: &CompiledCs,
    assign: impl FnOnce(&mut AssignmentCs) -> Result<(), SynthesisError>,
) -> Result<AssignmentCs, CompiledSynthError> {
    let mut asg = AssignmentCs::with_capacity(cs.inputs as usize, cs.aux as usize);
    asg.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    assign(&mut asg)?;
    Ok(asg)
}

/// The witness with a, b, c evaluated from `cs` at `asg` (and checked).
fn evaluated(
    cs: &CompiledCs,
    asg: AssignmentCs,
    start: Instant,
) -> Result<Synthesized, CompiledSynthError> {
    let assigned = start.elapsed();
    let abc = cs.evaluate(&asg.input, &asg.aux)?;
    let evaluated = start.elapsed();
    let first_unsatisfied = abc.first_unsatisfied;
    let witness = PartitionWitness {
        a: abc.a,
        b: abc.b,
        c: abc.c,
        input: asg.input,
        aux: asg.aux,
        a_aux_density: cs.a_aux_density.clone(),
        b_input_density: cs.b_input_density.clone(),
        b_aux_density: cs.b_aux_density.clone(),
        matrices: None,
        urgent: false,
    };
    if let Some(index) = first_unsatisfied {
        let total = witness.num_constraints();
        witness.recycle();
        return Err(CompiledSynthError::Unsatisfied { index, total });
    }
    tracing::debug!(
        shape = %cs.key,
        assignment_ms = assigned.as_millis() as u64,
        abc_and_check_ms = (evaluated - assigned).as_millis() as u64,
        "compiled synthesis"
    );
    Ok(Synthesized {
        witness,
        elapsed: start.elapsed(),
    })
}
