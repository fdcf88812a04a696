//! Synthesis of a blank circuit into its QAP matrices, and their evaluation
//! at `tau`.
//!
//! [`Assembly`] is bellperson's `KeypairAssembly` with flat storage: every
//! non-zero entry of the A, B and C matrices is one `(coefficient,
//! constraint, variable)` record, appended in synthesis order, instead of a
//! vector per variable. Variables are numbered as bellperson numbers them:
//! input `0` is the constant one, allocated before synthesis, and after
//! synthesis one constraint `input_i * 0 = 0` per input is appended so the
//! IC query is fully dense. [`Assembly::evaluate`] then sums, per variable,
//! its coefficients times the Lagrange basis at `tau`: `a_i(tau)`,
//! `b_i(tau)`, `c_i(tau)`, inputs first, then aux variables.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::SetupError;

/// Marks an input variable in [`Entry::var`].
const INPUT_BIT: u32 = 1 << 31;

/// One non-zero matrix entry.
#[derive(Clone, Copy)]
struct Entry {
    coeff: Scalar,
    constraint: u32,
    /// Aux index, or input index with [`INPUT_BIT`] set.
    var: u32,
}

/// A circuit synthesized without an assignment.
#[derive(Default)]
pub struct Assembly {
    num_inputs: usize,
    num_aux: usize,
    num_constraints: usize,
    a: Vec<Entry>,
    b: Vec<Entry>,
    c: Vec<Entry>,
    /// Set when an index no longer fits the entry format.
    overflow: bool,
}

/// Per-variable evaluations of the QAP polynomials at `tau`, inputs first.
pub struct Evaluations {
    pub at: Vec<Scalar>,
    pub bt: Vec<Scalar>,
    pub ct: Vec<Scalar>,
}

impl Assembly {
    /// Synthesizes `circuit` exactly as bellperson's generator does,
    /// including the input constraints appended at the end.
    pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Assembly, SetupError> {
        let mut cs = Assembly::default();
        cs.alloc_input(|| "", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        for i in 0..cs.num_inputs {
            cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        if cs.overflow {
            return Err(SetupError::TooLarge {
                constraints: cs.num_constraints,
                variables: cs.num_inputs + cs.num_aux,
            });
        }
        Ok(cs)
    }

    /// Public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Private (aux) variables.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Constraints, the input constraints included.
    pub fn num_constraints(&self) -> usize {
        self.num_constraints
    }

    /// Non-zero entries of A, B and C together.
    pub fn num_entries(&self) -> usize {
        self.a.len() + self.b.len() + self.c.len()
    }

    /// `a_i(tau)`, `b_i(tau)`, `c_i(tau)` for every variable, given the
    /// Lagrange basis at `tau` (`lagrange[j] = L_j(tau)` for each constraint
    /// `j`). Consumes the matrices.
    pub fn evaluate(self, lagrange: &[Scalar]) -> Evaluations {
        assert!(lagrange.len() >= self.num_constraints);
        let (ni, nv) = (self.num_inputs, self.num_inputs + self.num_aux);
        let eval = |entries: Vec<Entry>| -> Vec<Scalar> {
            let mut out = vec![Scalar::ZERO; nv];
            for e in entries {
                let idx = if e.var & INPUT_BIT != 0 {
                    (e.var & !INPUT_BIT) as usize
                } else {
                    ni + e.var as usize
                };
                let l = &lagrange[e.constraint as usize];
                if e.coeff == Scalar::ONE {
                    out[idx] += l;
                } else {
                    out[idx] += e.coeff * l;
                }
            }
            out
        };
        let (a, b, c) = (self.a, self.b, self.c);
        let (at, (bt, ct)) = rayon::join(|| eval(a), || rayon::join(|| eval(b), || eval(c)));
        Evaluations { at, bt, ct }
    }

    fn push(
        entries: &mut Vec<Entry>,
        lc: LinearCombination<Scalar>,
        constraint: u32,
        overflow: &mut bool,
    ) {
        for (var, coeff) in lc.iter() {
            let (index, tag) = match var {
                Variable(Index::Input(i)) => (i, INPUT_BIT),
                Variable(Index::Aux(i)) => (i, 0),
            };
            match u32::try_from(index) {
                Ok(i) if i & INPUT_BIT == 0 => entries.push(Entry {
                    coeff: *coeff,
                    constraint,
                    var: i | tag,
                }),
                _ => *overflow = true,
            }
        }
    }
}

impl ConstraintSystem<Scalar> for Assembly {
    cuzk_prover::flat_namespaces!();

    fn new() -> Self {
        Self::default()
    }

    fn is_extensible() -> bool {
        // Like bellperson's generator: synthesis is strictly sequential.
        false
    }

    cuzk_prover::count_into!(input: num_inputs, aux: num_aux);

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let Ok(constraint) = u32::try_from(self.num_constraints) else {
            self.overflow = true;
            return;
        };
        let mut overflow = false;
        Self::push(
            &mut self.a,
            a(LinearCombination::zero()),
            constraint,
            &mut overflow,
        );
        Self::push(
            &mut self.b,
            b(LinearCombination::zero()),
            constraint,
            &mut overflow,
        );
        Self::push(
            &mut self.c,
            c(LinearCombination::zero()),
            constraint,
            &mut overflow,
        );
        self.overflow |= overflow;
        self.num_constraints += 1;
    }
}
