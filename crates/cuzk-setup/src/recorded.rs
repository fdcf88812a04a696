//! A recorded constraint system ([`cuzk_r1cs::CompiledCs`], the one the
//! daemon synthesizes through) as the matrices of a parameter generator:
//! its shape is read, not counted, and the per-variable evaluations at
//! `tau` are its columns weighted by the Lagrange basis
//! ([`CompiledCs::weighted_columns`], one thread per matrix). Same
//! parameters as from the blank circuit when the recording is of that
//! circuit (`crates/cuzk-bench/tests/recorded_params.rs` compares the bytes), without its two
//! synthesis passes.

use blstrs::Scalar;
use cuzk_r1cs::CompiledCs;

use crate::assembly::Evaluations;
use crate::counting::Shape;
use crate::evaluating::Evaluated;
use crate::stream::Matrices;
use crate::SetupError;

impl Matrices for CompiledCs {
    fn shape(&self) -> Result<Shape, SetupError> {
        let (inputs, aux, constraints) = (
            usize::try_from(self.inputs),
            usize::try_from(self.aux),
            usize::try_from(self.num_constraints()),
        );
        match (inputs, aux, constraints) {
            (Ok(inputs), Ok(aux), Ok(constraints)) => Ok(Shape {
                inputs,
                aux,
                constraints,
            }),
            _ => Err(SetupError::Recorded(format!(
                "{}: counts beyond this machine's usize",
                self.key
            ))),
        }
    }

    fn evaluate(
        &self,
        _shape: &Shape,
        lagrange: &[Scalar],
        on_progress: &(dyn Fn(usize) + Sync),
    ) -> Result<Evaluated, SetupError> {
        let columns = self
            .weighted_columns(lagrange)
            .map_err(|e| SetupError::Recorded(e.to_string()))?;
        // (Zero coefficients were dropped when recording, so `terms` can
        // be below the blank circuit's entry count; the sums are equal.)
        on_progress(self.num_constraints() as usize);
        Ok(Evaluated {
            evaluations: Evaluations {
                at: columns.a,
                bt: columns.b,
                ct: columns.c,
            },
            entries: columns.terms,
        })
    }
}
