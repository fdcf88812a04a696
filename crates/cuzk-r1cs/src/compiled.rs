//! [`CompiledCs`]: one circuit shape's constraints, and a, b, c from them.
//!
//! The constraints are a sequence of segment *instances*; an instance says
//! which stored segment occurs there and where its rows, aux variables and
//! inputs start. Evaluation walks every instance in parallel (in chunks of
//! [`CHECKPOINT_ROWS`] rows, each starting at a checkpoint) and writes each
//! row's A·z, B·z and C·z straight into the output vectors. The densities
//! (which variables occur in A and B) depend only on the matrices and are
//! computed once, when the system is recorded or loaded.

use std::mem::MaybeUninit;

use blstrs::Scalar;
use cuzk_prover::{raw, Density};
use ff::Field;
use rayon::prelude::*;

use crate::encode::{self, get_fast, Var};

/// The most rows, aux variables or inputs a system may have (the largest
/// Filecoin circuit has ~2^27 of each).
pub const MAX_COUNT: u64 = 1 << 32;

/// Rows between two checkpoints of a segment (the unit of parallel work).
pub const CHECKPOINT_ROWS: u64 = 1 << 14;

/// Where a chunk of a segment's rows starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Byte offset of the row in the segment's encoding.
    pub pos: u64,
    /// The segment-relative cursor before the row's delta is added.
    pub cursor: u64,
}

/// A run of constraints stored once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub rows: u64,
    /// Aux variables allocated by the segment.
    pub aux: u64,
    /// Inputs allocated by the segment.
    pub inputs: u64,
    pub bytes: Vec<u8>,
    pub checkpoints: Vec<Checkpoint>,
}

/// Where a segment occurs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    pub segment: u32,
    pub aux_base: u64,
    pub input_base: u64,
    pub row_base: u64,
}

/// A circuit shape's constraint matrices.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledCs {
    /// What the matrices are of (kind and registered proof).
    pub key: String,
    /// Inputs, ONE included.
    pub inputs: u64,
    pub aux: u64,
    /// Recorded constraints (the `input · 0 = 0` ones are not stored).
    pub rows: u64,
    pub coeffs: Vec<Scalar>,
    pub segments: Vec<Segment>,
    pub instances: Vec<Instance>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

/// Sizes, for logs and status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompiledStats {
    pub constraints: u64,
    pub inputs: u64,
    pub aux: u64,
    pub segments: usize,
    pub instances: usize,
    pub coefficients: usize,
    /// Memory held.
    pub bytes: u64,
}

/// Why a constraint system cannot be evaluated or is malformed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CompiledError {
    #[error(
        "assignment does not fit the constraint system {key}: {inputs} inputs and {aux} aux \
         variables, expected {want_inputs} and {want_aux}"
    )]
    Shape {
        key: String,
        inputs: usize,
        aux: usize,
        want_inputs: u64,
        want_aux: u64,
    },
    #[error("malformed constraint system: {0}")]
    Malformed(String),
}

/// A coefficient sorted by how cheaply it multiplies.
#[derive(Clone, Copy)]
enum Coeff {
    One,
    MinusOne,
    Other(Scalar),
}

/// The a, b, c vectors of one assignment.
pub struct Abc {
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    /// The first constraint with a·b ≠ c, checked while evaluating.
    pub first_unsatisfied: Option<usize>,
}

impl CompiledCs {
    /// Constraints, the input constraints included.
    pub fn num_constraints(&self) -> u64 {
        self.rows + self.inputs
    }

    pub fn stats(&self) -> CompiledStats {
        CompiledStats {
            constraints: self.num_constraints(),
            inputs: self.inputs,
            aux: self.aux,
            segments: self.segments.len(),
            instances: self.instances.len(),
            coefficients: self.coeffs.len(),
            bytes: self.bytes(),
        }
    }

    /// Bytes of memory held (what the memory budget is charged).
    pub fn bytes(&self) -> u64 {
        let seg: usize = self
            .segments
            .iter()
            .map(|s| s.bytes.len() + s.checkpoints.len() * 16 + 64)
            .sum();
        let dens =
            self.a_aux_density.bytes() + self.b_input_density.bytes() + self.b_aux_density.bytes();
        (seg + dens + self.coeffs.len() * 32 + self.instances.len() * 32) as u64
    }

    fn coeff_kinds(&self) -> Vec<Coeff> {
        self.coeffs
            .iter()
            .map(|c| {
                if *c == Scalar::ONE {
                    Coeff::One
                } else if *c == -Scalar::ONE {
                    Coeff::MinusOne
                } else {
                    Coeff::Other(*c)
                }
            })
            .collect()
    }

    /// A·z, B·z and C·z of every constraint for the assignment `z = (input,
    /// aux)`, the input constraints (`input_i · 0 = 0`) last.
    pub fn evaluate(&self, input: &[Scalar], aux: &[Scalar]) -> Result<Abc, CompiledError> {
        if input.len() as u64 != self.inputs || aux.len() as u64 != self.aux {
            return Err(CompiledError::Shape {
                key: self.key.clone(),
                inputs: input.len(),
                aux: aux.len(),
                want_inputs: self.inputs,
                want_aux: self.aux,
            });
        }
        let n = self.num_constraints() as usize;
        // Room for the backends' padding to the evaluation domain, so the
        // vectors are neither moved there nor too small for the next
        // partition when they come back through the pool.
        let pool = cuzk_prover::pool::pool();
        let room = n.next_power_of_two();
        let (mut a, mut b, mut c) = (pool.take(room), pool.take(room), pool.take(room));
        let first_unsatisfied = self.evaluate_into(
            input,
            aux,
            &mut a.spare_capacity_mut()[..n],
            &mut b.spare_capacity_mut()[..n],
            &mut c.spare_capacity_mut()[..n],
        );
        // SAFETY: `evaluate_into` wrote every one of the first `n` elements
        // of each vector: the chunks tile the recorded rows (checked when
        // the system was recorded or loaded) and the input rows follow.
        unsafe {
            a.set_len(n);
            b.set_len(n);
            c.set_len(n);
        }
        Ok(Abc {
            a,
            b,
            c,
            first_unsatisfied,
        })
    }

    /// Writes a, b, c and returns the first recorded row with a·b ≠ c.
    fn evaluate_into(
        &self,
        input: &[Scalar],
        aux: &[Scalar],
        a: &mut [MaybeUninit<Scalar>],
        b: &mut [MaybeUninit<Scalar>],
        c: &mut [MaybeUninit<Scalar>],
    ) -> Option<usize> {
        let coeffs = self.coeff_kinds();
        let rows = self.rows as usize;
        let (a, a_in) = a.split_at_mut(rows);
        let (b, b_in) = b.split_at_mut(rows);
        let (c, c_in) = c.split_at_mut(rows);
        let mut tasks = Vec::new();
        let (mut a, mut b, mut c) = (a, b, c);
        let mut row = 0;
        for inst in &self.instances {
            let seg = &self.segments[inst.segment as usize];
            for (k, cp) in seg.checkpoints.iter().enumerate() {
                let n = (seg.rows - k as u64 * CHECKPOINT_ROWS).min(CHECKPOINT_ROWS) as usize;
                let (ha, ta) = std::mem::take(&mut a).split_at_mut(n);
                let (hb, tb) = std::mem::take(&mut b).split_at_mut(n);
                let (hc, tc) = std::mem::take(&mut c).split_at_mut(n);
                (a, b, c) = (ta, tb, tc);
                tasks.push((row, seg, inst, *cp, ha, hb, hc));
                row += n;
            }
        }
        let first = tasks
            .into_par_iter()
            .filter_map(|(row, seg, inst, cp, ha, hb, hc)| {
                eval_chunk(seg, inst, cp, input, aux, &coeffs, ha, hb, hc).map(|r| row + r)
            })
            .min();
        // The input rows, input_i · 0 = 0, hold.
        for (i, x) in input.iter().enumerate() {
            a_in[i].write(*x);
            b_in[i].write(Scalar::ZERO);
            c_in[i].write(Scalar::ZERO);
        }
        first
    }

    /// Calls `f(row, matrix, var, coeff_id)` for every term of every
    /// recorded row (`matrix` 0, 1, 2 for A, B, C), in row order.
    pub(crate) fn for_each_term(&self, mut f: impl FnMut(u64, usize, Var, usize)) {
        for inst in &self.instances {
            let seg = &self.segments[inst.segment as usize];
            let (bytes, mut pos, mut cursor) = (&seg.bytes[..], 0usize, inst.aux_base);
            for r in 0..seg.rows {
                cursor += get_fast(bytes, &mut pos);
                let counts = [
                    get_fast(bytes, &mut pos),
                    get_fast(bytes, &mut pos),
                    get_fast(bytes, &mut pos),
                ];
                for (m, n) in counts.into_iter().enumerate() {
                    for _ in 0..n {
                        let code = get_fast(bytes, &mut pos);
                        let k = get_fast(bytes, &mut pos) as usize;
                        f(
                            inst.row_base + r,
                            m,
                            encode::var(code, cursor, inst.input_base),
                            k,
                        );
                    }
                }
            }
        }
    }

    /// Sets the three densities from the matrices.
    pub(crate) fn compute_densities(&mut self) {
        let mut a_aux = Density::zeroed(self.aux as usize);
        let mut b_in = Density::zeroed(self.inputs as usize);
        let mut b_aux = Density::zeroed(self.aux as usize);
        self.for_each_term(|_, m, v, _| match (m, v) {
            (0, Var::Aux(j)) => a_aux.set(j as usize),
            (1, Var::Aux(j)) => b_aux.set(j as usize),
            (1, Var::Input(i)) => b_in.set(i as usize),
            _ => {}
        });
        self.a_aux_density = a_aux;
        self.b_input_density = b_in;
        self.b_aux_density = b_aux;
    }
}

/// Evaluates a chunk of rows; the first of them with a·b ≠ c.
#[allow(clippy::too_many_arguments)]
fn eval_chunk(
    seg: &Segment,
    inst: &Instance,
    cp: Checkpoint,
    input: &[Scalar],
    aux: &[Scalar],
    coeffs: &[Coeff],
    a: &mut [MaybeUninit<Scalar>],
    b: &mut [MaybeUninit<Scalar>],
    c: &mut [MaybeUninit<Scalar>],
) -> Option<usize> {
    let bytes = &seg.bytes[..];
    let mut pos = cp.pos as usize;
    let mut cursor = inst.aux_base + cp.cursor;
    let mut first = None;
    for r in 0..a.len() {
        cursor += get_fast(bytes, &mut pos);
        let na = get_fast(bytes, &mut pos);
        let nb = get_fast(bytes, &mut pos);
        let nc = get_fast(bytes, &mut pos);
        let lc = |pos: &mut usize, n: u64| {
            lc_at(bytes, pos, n, cursor, inst.input_base, input, aux, coeffs)
        };
        let (va, vb, vc) = (lc(&mut pos, na), lc(&mut pos, nb), lc(&mut pos, nc));
        if first.is_none() && !raw::holds(&va, &vb, &vc) {
            first = Some(r);
        }
        a[r].write(va);
        b[r].write(vb);
        c[r].write(vc);
    }
    first
}

/// One linear combination of `n` terms at the assignment.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn lc_at(
    bytes: &[u8],
    pos: &mut usize,
    n: u64,
    cursor: u64,
    input_base: u64,
    input: &[Scalar],
    aux: &[Scalar],
    coeffs: &[Coeff],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for _ in 0..n {
        let code = get_fast(bytes, pos);
        let k = get_fast(bytes, pos) as usize;
        let v = match encode::var(code, cursor, input_base) {
            Var::Aux(j) => &aux[j as usize],
            Var::Input(i) => &input[i as usize],
        };
        match coeffs[k] {
            Coeff::One => acc += v,
            Coeff::MinusOne => acc -= v,
            Coeff::Other(c) => {
                // Mostly bits: c or 0 picked without a branch on the bit,
                // which is as unpredictable as the data.
                if raw::is_one(v) {
                    acc += c;
                } else if !raw::is_zero(v) {
                    acc += c * v;
                }
            }
        }
    }
    acc
}

/// The largest absolute references of a segment, to check against the
/// bases of its instances.
#[derive(Default)]
struct AbsRefs {
    aux: Option<u64>,
    input: Option<u64>,
}

impl CompiledCs {
    /// Checks (before anything is sized by them) that the counts are
    /// bounded by [`MAX_COUNT`], that the encoding is well formed and that every reference
    /// lands inside the assignment, so evaluation cannot index out of
    /// bounds: instances tile the rows, aux variables and inputs in order;
    /// every segment decodes to its row count with its checkpoints; every
    /// relative variable lies inside its segment before the row; every
    /// absolute one before the instance; every coefficient exists.
    pub fn validate(&self) -> Result<(), CompiledError> {
        let bad = |m: String| Err(CompiledError::Malformed(m));
        if [self.rows, self.aux, self.inputs]
            .iter()
            .any(|&n| n > MAX_COUNT)
        {
            return bad(format!("more than {MAX_COUNT} rows or variables"));
        }
        let mut refs = Vec::with_capacity(self.segments.len());
        for (i, s) in self.segments.iter().enumerate() {
            refs.push(
                self.validate_segment(s)
                    .map_err(|m| CompiledError::Malformed(format!("segment {i}: {m}")))?,
            );
        }
        let (mut rows, mut aux, mut inputs) = (0u64, 0u64, 1u64);
        for (i, inst) in self.instances.iter().enumerate() {
            let Some(s) = self.segments.get(inst.segment as usize) else {
                return bad(format!(
                    "instance {i} names segment {} of {}",
                    inst.segment,
                    self.segments.len()
                ));
            };
            if (inst.row_base, inst.aux_base, inst.input_base) != (rows, aux, inputs) {
                return bad(format!(
                    "instance {i} does not start where the previous one ends"
                ));
            }
            let r = &refs[inst.segment as usize];
            if r.aux.is_some_and(|v| v >= aux) || r.input.is_some_and(|v| v != 0 && v >= inputs) {
                return bad(format!("instance {i} refers past its own start"));
            }
            // Bounded by MAX_COUNT each once the totals are checked below;
            // saturating so that a hostile file cannot overflow first.
            rows = rows.saturating_add(s.rows);
            aux = aux.saturating_add(s.aux);
            inputs = inputs.saturating_add(s.inputs);
        }
        if (rows, aux, inputs) != (self.rows, self.aux, self.inputs) {
            return bad(format!(
                "instances cover {rows} rows, {aux} aux, {inputs} inputs; header says {}, {}, {}",
                self.rows, self.aux, self.inputs
            ));
        }
        Ok(())
    }

    fn validate_segment(&self, s: &Segment) -> Result<AbsRefs, String> {
        let (bytes, mut pos, mut cursor) = (&s.bytes[..], 0usize, 0u64);
        let mut refs = AbsRefs::default();
        let next = |pos: &mut usize| encode::get(bytes, pos).ok_or("truncated encoding");
        if s.checkpoints.len() as u64 != s.rows.div_ceil(CHECKPOINT_ROWS) {
            return Err("wrong number of checkpoints".into());
        }
        for r in 0..s.rows {
            if r % CHECKPOINT_ROWS == 0 {
                let cp = s.checkpoints[(r / CHECKPOINT_ROWS) as usize];
                if cp
                    != (Checkpoint {
                        pos: pos as u64,
                        cursor,
                    })
                {
                    return Err(format!("checkpoint at row {r} is off"));
                }
            }
            cursor = cursor
                .checked_add(next(&mut pos)?)
                .filter(|c| *c <= s.aux)
                .ok_or("cursor past the segment")?;
            let counts = [next(&mut pos)?, next(&mut pos)?, next(&mut pos)?];
            for n in counts {
                for _ in 0..n {
                    let (code, k) = (next(&mut pos)?, next(&mut pos)?);
                    if k >= self.coeffs.len() as u64 {
                        return Err(format!("row {r}: coefficient {k} does not exist"));
                    }
                    let v = code >> 2;
                    let ok = match code & 3 {
                        encode::AUX_REL => v >= 1 && v <= cursor,
                        encode::AUX_ABS => {
                            refs.aux = refs.aux.max(Some(v));
                            true
                        }
                        encode::IN_REL => v < s.inputs,
                        _ => {
                            refs.input = refs.input.max(Some(v));
                            true
                        }
                    };
                    if !ok {
                        return Err(format!("row {r}: variable out of the segment"));
                    }
                }
            }
        }
        if pos != bytes.len() {
            return Err("bytes after the last row".into());
        }
        Ok(refs)
    }
}
