//! [`CompiledCs`] as the matrices a prover backend evaluates a, b and c
//! from ([`ConstraintMatrices`]): on the host through
//! [`CompiledCs::evaluate`], on a device through [`FlatMatrices`], every
//! instance's rows cut into chunks that start where a row starts.

use blstrs::Scalar;
use cuzk_prover::{ConstraintMatrices, FlatChunk, FlatMatrices, ProverError};

use crate::compiled::CompiledCs;
use crate::encode::get_fast;

impl ConstraintMatrices for CompiledCs {
    fn key(&self) -> &str {
        &self.key
    }

    fn constraints(&self) -> usize {
        self.num_constraints() as usize
    }

    fn evaluate(&self, input: &[Scalar], aux: &[Scalar]) -> Result<[Vec<Scalar>; 3], ProverError> {
        let abc = CompiledCs::evaluate(self, input, aux)
            .map_err(|e| ProverError::Input(e.to_string()))?;
        if let Some(index) = abc.first_unsatisfied {
            let total = abc.a.len();
            for v in [abc.a, abc.b, abc.c] {
                cuzk_prover::pool::pool().give(v);
            }
            return Err(ProverError::Input(format!(
                "the circuit is not satisfied: constraint {index} of {total} has A·B ≠ C"
            )));
        }
        Ok([abc.a, abc.b, abc.c])
    }

    fn flat(&self, chunk_rows: u32) -> FlatMatrices {
        let chunk_rows = u64::from(chunk_rows.max(1));
        // Each stored segment once: its bytes' offset in the flat form
        // and where each chunk of its rows starts (byte position, cursor
        // relative to the instance).
        let mut bytes = Vec::new();
        let mut starts = Vec::with_capacity(self.segments.len());
        for seg in &self.segments {
            let base = bytes.len() as u64;
            bytes.extend_from_slice(&seg.bytes);
            starts.push((base, chunk_starts(&seg.bytes, seg.rows, chunk_rows)));
        }
        let mut chunks = Vec::new();
        for inst in &self.instances {
            let (base, ref st) = starts[inst.segment as usize];
            let rows = self.segments[inst.segment as usize].rows;
            for (i, &(pos, cursor)) in st.iter().enumerate() {
                let first = i as u64 * chunk_rows;
                chunks.push(FlatChunk {
                    row: inst.row_base + first,
                    pos: base + pos,
                    cursor: inst.aux_base + cursor,
                    input_base: inst.input_base,
                    rows: (rows - first).min(chunk_rows) as u32,
                    _pad: 0,
                });
            }
        }
        FlatMatrices {
            rows: self.rows,
            inputs: self.inputs,
            aux: self.aux,
            bytes,
            chunks,
            coeffs: self.coeffs.clone(),
        }
    }
}

/// Byte position and relative cursor before every `chunk_rows`-th row of
/// a (validated) segment encoding of `rows` rows.
fn chunk_starts(bytes: &[u8], rows: u64, chunk_rows: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(rows.div_ceil(chunk_rows) as usize);
    let (mut pos, mut cursor) = (0usize, 0u64);
    for r in 0..rows {
        if r % chunk_rows == 0 {
            out.push((pos as u64, cursor));
        }
        cursor += get_fast(bytes, &mut pos);
        let n: u64 = (0..3).map(|_| get_fast(bytes, &mut pos)).sum();
        for _ in 0..2 * n {
            get_fast(bytes, &mut pos);
        }
    }
    out
}

#[cfg(test)]
mod tests;
