//! The flat form, read by a host model of the device kernel
//! (`cuzk-cuda/cuda/abc_eval.cuh`) that follows only the documented
//! encoding, gives the same a, b, c as the host evaluation.

use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_prover::{ConstraintMatrices, FlatMatrices};
use ff::Field;

use crate::compiled::CHECKPOINT_ROWS;
use crate::encode::get_fast;
use crate::record;

/// A chain of products with inputs, constants and a subtraction per step.
struct Chain(u64);

impl Circuit<Scalar> for Chain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = AllocatedNum::alloc(cs.namespace(|| "x0"), || Ok(Scalar::from(3u64)))?;
        for i in 0..self.0 {
            let mut cs = cs.namespace(|| format!("step {i}"));
            let k = Scalar::from(i + 2);
            let y = AllocatedNum::alloc(cs.namespace(|| "y"), || {
                Ok(x.get_value().unwrap_or(Scalar::ZERO)
                    * (x.get_value().unwrap_or(Scalar::ZERO) + k))
            })?;
            // x · (x + k·ONE) = y
            cs.enforce(
                || "step",
                |lc| lc + x.get_variable(),
                |lc| lc + x.get_variable() + (k, CS::one()),
                |lc| lc + y.get_variable(),
            );
            if i % 97 == 0 {
                y.inputize(cs.namespace(|| "out"))?;
            }
            // z = y − x (a −1 coefficient)
            let z = AllocatedNum::alloc(cs.namespace(|| "z"), || {
                Ok(y.get_value().unwrap_or(Scalar::ZERO) - x.get_value().unwrap_or(Scalar::ZERO))
            })?;
            cs.enforce(
                || "diff",
                |lc| lc + y.get_variable() - x.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + z.get_variable(),
            );
            x = z;
        }
        Ok(())
    }
}

/// A row's linear combination, as the kernel computes it.
fn lc(
    f: &FlatMatrices,
    pos: &mut usize,
    n: u64,
    cursor: u64,
    base: u64,
    z: (&[Scalar], &[Scalar]),
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for _ in 0..n {
        let code = get_fast(&f.bytes, pos);
        let k = get_fast(&f.bytes, pos) as usize;
        let v = code >> 2;
        let x = match code & 3 {
            0 => z.1[(cursor - v) as usize],
            1 => z.1[v as usize],
            2 => z.0[(base + v) as usize],
            _ => z.0[v as usize],
        };
        acc += f.coeffs[k] * x;
    }
    acc
}

fn model(f: &FlatMatrices, input: &[Scalar], aux: &[Scalar]) -> [Vec<Scalar>; 3] {
    let n = f.constraints() as usize;
    let mut out = [
        vec![Scalar::ONE; n],
        vec![Scalar::ONE; n],
        vec![Scalar::ONE; n],
    ];
    for ch in &f.chunks {
        let (mut pos, mut cursor) = (ch.pos as usize, ch.cursor);
        for r in 0..ch.rows as u64 {
            cursor += get_fast(&f.bytes, &mut pos);
            let counts: Vec<u64> = (0..3).map(|_| get_fast(&f.bytes, &mut pos)).collect();
            for (m, &k) in counts.iter().enumerate() {
                out[m][(ch.row + r) as usize] =
                    lc(f, &mut pos, k, cursor, ch.input_base, (input, aux));
            }
        }
    }
    for (i, x) in input.iter().enumerate() {
        let row = f.rows as usize + i;
        (out[0][row], out[1][row], out[2][row]) = (*x, Scalar::ZERO, Scalar::ZERO);
    }
    out
}

#[test]
fn the_flat_form_evaluates_to_the_host_abc() {
    let cs = record("chain", Chain(700)).expect("record");
    let asg = crate::synthesize_compiled(Chain(700), &cs)
        .expect("synthesize")
        .witness;
    let host = ConstraintMatrices::evaluate(&cs, &asg.input, &asg.aux).expect("satisfied");
    for chunk_rows in [1, 7, 256, 1 << 20] {
        let f = cs.flat(chunk_rows);
        // The chunks tile the recorded rows in order.
        let mut next = 0;
        for ch in &f.chunks {
            assert_eq!(ch.row, next);
            assert!(ch.rows >= 1 && ch.rows <= chunk_rows);
            next += u64::from(ch.rows);
        }
        assert_eq!(next, f.rows);
        let [a, b, c] = model(&f, &asg.input, &asg.aux);
        assert_eq!(a, host[0], "a, chunks of {chunk_rows}");
        assert_eq!(b, host[1], "b, chunks of {chunk_rows}");
        assert_eq!(c, host[2], "c, chunks of {chunk_rows}");
    }
}

#[test]
fn chunks_of_checkpoint_size_start_at_the_checkpoints() {
    let cs = record("chain", Chain(CHECKPOINT_ROWS / 2 + 100)).expect("record");
    let f = cs.flat(CHECKPOINT_ROWS as u32);
    let mut want = Vec::new();
    let mut base = 0;
    let mut bases = Vec::new();
    for seg in &cs.segments {
        bases.push(base);
        base += seg.bytes.len() as u64;
    }
    for inst in &cs.instances {
        let seg = &cs.segments[inst.segment as usize];
        for cp in &seg.checkpoints {
            want.push((
                bases[inst.segment as usize] + cp.pos,
                inst.aux_base + cp.cursor,
            ));
        }
    }
    let got: Vec<_> = f.chunks.iter().map(|c| (c.pos, c.cursor)).collect();
    assert_eq!(got, want);
}

#[test]
fn an_unsatisfied_assignment_is_an_error_naming_the_row() {
    let cs = record("chain", Chain(50)).expect("record");
    let mut asg = crate::synthesize_compiled(Chain(50), &cs)
        .expect("synthesize")
        .witness;
    asg.aux[5] += Scalar::ONE;
    let err = ConstraintMatrices::evaluate(&cs, &asg.input, &asg.aux).unwrap_err();
    assert!(
        err.to_string().contains("not satisfied: constraint"),
        "{err}"
    );
}
