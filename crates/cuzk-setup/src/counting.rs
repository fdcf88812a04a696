//! The first, cheap pass over a blank circuit: its shape.
//!
//! `cuzk_prover::check::count` runs the circuit into a constraint system
//! that only counts: the linear-combination closures of `enforce` are never
//! called, so no linear combination is built. The [`Shape`] (inputs, aux
//! variables, constraints with bellperson's input constraints) sizes the
//! evaluation domain and the per-variable accumulators of the second pass
//! ([`crate::evaluating`]).

use bellpepper_core::Circuit;
use blstrs::Scalar;

use crate::SetupError;

pub use crate::shape::Shape;

impl Shape {
    /// Counts `circuit`'s variables and constraints without building any
    /// linear combination (`cuzk_prover::check::count`).
    pub fn of<C: Circuit<Scalar>>(circuit: C) -> Result<Shape, SetupError> {
        let c = cuzk_prover::check::count(circuit)?;
        Ok(Shape {
            inputs: c.inputs,
            aux: c.aux,
            constraints: c.constraints,
        })
    }
}
