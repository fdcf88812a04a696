//! Recording a circuit's constraints: [`RecordingCs`] and [`record`].
//!
//! The recording constraint system builds each constraint's linear
//! combinations (never the assignment: value closures are not called, so a
//! blank circuit records as well as a real one) and encodes them into the
//! open segment. A segment opens at each top-level namespace (depth 0 → 1)
//! or, at depth 0, at the first allocation or constraint outside one, and
//! closes when the namespace does. A closed segment is interned: equal
//! bytes are stored once. Sub-circuits synthesized on their own systems
//! and then `extend`ed (as storage-proofs does for PoSt) are re-encoded
//! into the parent with their variables shifted, which keeps equal
//! sectors equal.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use cuzk_prover::Density;
use ff::Field;

use crate::compiled::{Checkpoint, CompiledCs, Instance, Segment, CHECKPOINT_ROWS};
use crate::encode::{self, put, Var};

/// Records `circuit` (after the ONE input, as bellperson's prover does)
/// into the compiled constraint system named `key`.
pub fn record<C: Circuit<Scalar>>(key: &str, circuit: C) -> Result<CompiledCs, SynthesisError> {
    let mut cs = RecordingCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok(cs.finish(key))
}

/// The segment being written.
struct Open {
    aux_base: u64,
    input_base: u64,
    row_base: u64,
    rows: u64,
    prev_cursor: u64,
    bytes: Vec<u8>,
    checkpoints: Vec<Checkpoint>,
}

/// A constraint system that records its constraints as segments.
pub struct RecordingCs {
    inputs: u64,
    aux: u64,
    rows: u64,
    depth: usize,
    open: Option<Open>,
    coeffs: Vec<Scalar>,
    coeff_ids: HashMap<[u8; 32], u64>,
    segments: Vec<Segment>,
    by_hash: HashMap<u64, Vec<u32>>,
    instances: Vec<Instance>,
}

impl RecordingCs {
    fn open_segment(&mut self) {
        self.close_segment();
        self.open = Some(Open {
            aux_base: self.aux,
            input_base: self.inputs,
            row_base: self.rows,
            rows: 0,
            prev_cursor: 0,
            bytes: Vec::new(),
            checkpoints: Vec::new(),
        });
    }

    fn close_segment(&mut self) {
        let Some(o) = self.open.take() else { return };
        let seg = Segment {
            rows: o.rows,
            aux: self.aux - o.aux_base,
            inputs: self.inputs - o.input_base,
            bytes: o.bytes,
            checkpoints: o.checkpoints,
        };
        if seg.rows == 0 && seg.aux == 0 && seg.inputs == 0 {
            return;
        }
        let segment = self.intern(seg);
        self.instances.push(Instance {
            segment,
            aux_base: o.aux_base,
            input_base: o.input_base,
            row_base: o.row_base,
        });
    }

    fn intern(&mut self, seg: Segment) -> u32 {
        let mut h = DefaultHasher::new();
        (seg.rows, seg.aux, seg.inputs, &seg.bytes).hash(&mut h);
        let ids = self.by_hash.entry(h.finish()).or_default();
        if let Some(&id) = ids.iter().find(|&&id| self.segments[id as usize] == seg) {
            return id;
        }
        let id = self.segments.len() as u32;
        ids.push(id);
        self.segments.push(seg);
        id
    }

    fn coeff_id(&mut self, c: &Scalar) -> u64 {
        let key = c.to_bytes_le();
        if let Some(&id) = self.coeff_ids.get(&key) {
            return id;
        }
        let id = self.coeffs.len() as u64;
        self.coeffs.push(*c);
        self.coeff_ids.insert(key, id);
        id
    }

    fn ensure_open(&mut self) {
        if self.open.is_none() {
            self.open_segment();
        }
    }

    /// Appends one row whose terms are `lcs` (A, B, C), enforced when the
    /// system had `self.aux` aux variables.
    fn push_row(&mut self, lcs: [&[(Var, Scalar)]; 3]) {
        self.ensure_open();
        let cursor_abs = self.aux;
        let mut ids = [Vec::new(), Vec::new(), Vec::new()];
        for (m, lc) in lcs.iter().enumerate() {
            ids[m] = lc.iter().map(|(_, c)| self.coeff_id(c)).collect();
        }
        let o = self.open.as_mut().expect("a segment is open");
        let cursor = cursor_abs - o.aux_base;
        if o.rows % CHECKPOINT_ROWS == 0 {
            o.checkpoints.push(Checkpoint {
                pos: o.bytes.len() as u64,
                cursor: o.prev_cursor,
            });
        }
        put(&mut o.bytes, cursor - o.prev_cursor);
        o.prev_cursor = cursor;
        for lc in lcs {
            put(&mut o.bytes, lc.len() as u64);
        }
        for (lc, ids) in lcs.iter().zip(&ids) {
            for ((v, _), id) in lc.iter().zip(ids) {
                let code = match *v {
                    Var::Aux(j) if j >= o.aux_base => (cursor_abs - j) << 2 | encode::AUX_REL,
                    Var::Aux(j) => j << 2 | encode::AUX_ABS,
                    Var::Input(i) if i != 0 && i >= o.input_base => {
                        (i - o.input_base) << 2 | encode::IN_REL
                    }
                    Var::Input(i) => i << 2 | encode::IN_ABS,
                };
                put(&mut o.bytes, code);
                put(&mut o.bytes, *id);
            }
        }
        o.rows += 1;
        self.rows += 1;
    }

    /// The recorded system, its densities computed.
    pub fn finish(mut self, key: &str) -> CompiledCs {
        self.close_segment();
        let mut cs = CompiledCs {
            key: key.to_string(),
            inputs: self.inputs,
            aux: self.aux,
            rows: self.rows,
            coeffs: self.coeffs,
            segments: self.segments,
            instances: self.instances,
            a_aux_density: Density::new(),
            b_input_density: Density::new(),
            b_aux_density: Density::new(),
        };
        cs.compute_densities();
        cs
    }

    /// `other`'s rows as this system's, `other`'s variables shifted past
    /// this system's (its ONE input is this system's ONE).
    fn append(&mut self, other: &RecordingCs) {
        self.close_segment();
        let (aux0, in0, rows0) = (self.aux, self.inputs, self.rows);
        let map = |v: Var| match v {
            Var::Aux(j) => Var::Aux(aux0 + j),
            Var::Input(0) => Var::Input(0),
            Var::Input(i) => Var::Input(in0 + i - 1),
        };
        // A segment `other` still has open (allocations after its last
        // namespace) counts as one more instance.
        let trailing = other.open.as_ref().map(|o| {
            let seg = Segment {
                rows: o.rows,
                aux: other.aux - o.aux_base,
                inputs: other.inputs - o.input_base,
                bytes: o.bytes.clone(),
                checkpoints: o.checkpoints.clone(),
            };
            let inst = Instance {
                segment: u32::MAX,
                aux_base: o.aux_base,
                input_base: o.input_base,
                row_base: o.row_base,
            };
            (seg, inst)
        });
        let listed = other
            .instances
            .iter()
            .map(|i| (&other.segments[i.segment as usize], i));
        for (seg, inst) in listed.chain(trailing.as_ref().map(|(s, i)| (s, i))) {
            // Rebase onto this system; the rows are re-encoded below.
            self.aux = aux0 + inst.aux_base;
            self.inputs = in0 + inst.input_base - 1;
            self.rows = rows0 + inst.row_base;
            self.open_segment();
            let (bytes, mut pos, mut cursor) = (&seg.bytes[..], 0usize, inst.aux_base);
            for _ in 0..seg.rows {
                cursor += encode::get_fast(bytes, &mut pos);
                self.aux = aux0 + cursor;
                let counts = [(); 3].map(|_| encode::get_fast(bytes, &mut pos));
                let lcs = counts.map(|n| {
                    (0..n)
                        .map(|_| {
                            let code = encode::get_fast(bytes, &mut pos);
                            let k = encode::get_fast(bytes, &mut pos) as usize;
                            (
                                map(encode::var(code, cursor, inst.input_base)),
                                other.coeffs[k],
                            )
                        })
                        .collect::<Vec<_>>()
                });
                self.push_row([&lcs[0], &lcs[1], &lcs[2]]);
            }
            self.aux = aux0 + inst.aux_base + seg.aux;
            self.inputs = in0 + inst.input_base - 1 + seg.inputs;
            self.close_segment();
        }
        self.aux = aux0 + other.aux;
        self.inputs = in0 + other.inputs.saturating_sub(1);
        self.rows = rows0 + other.rows;
    }
}

/// `lc`'s terms with nonzero coefficients, inputs first.
fn terms(lc: &LinearCombination<Scalar>) -> Vec<(Var, Scalar)> {
    let inputs = lc.iter_inputs().map(|(&i, c)| (Var::Input(i as u64), *c));
    let aux = lc.iter_aux().map(|(&j, c)| (Var::Aux(j as u64), *c));
    inputs
        .chain(aux)
        .filter(|(_, c)| !bool::from(c.is_zero()))
        .collect()
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn new() -> Self {
        RecordingCs {
            inputs: 0,
            aux: 0,
            rows: 0,
            depth: 0,
            open: None,
            coeffs: Vec::new(),
            coeff_ids: HashMap::new(),
            segments: Vec::new(),
            by_hash: HashMap::new(),
            instances: Vec::new(),
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.ensure_open();
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux as usize - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        // The first input is the system's ONE, which no segment owns.
        if self.inputs > 0 {
            self.ensure_open();
        }
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(
            self.inputs as usize - 1,
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
        let a = terms(&a(LinearCombination::zero()));
        let b = terms(&b(LinearCombination::zero()));
        let c = terms(&c(LinearCombination::zero()));
        self.push_row([&a, &b, &c]);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0 {
            self.open_segment();
        }
        self.depth += 1;
    }

    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self.depth == 0 {
            self.close_segment();
        }
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        self.append(other);
    }
}
