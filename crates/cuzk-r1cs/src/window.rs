//! Sub-circuits assigned in parallel, each into its own range.
//!
//! A partition is mostly one sub-circuit repeated (a PoRep challenge, a
//! PoSt sector) with the same number of variables each time, and the
//! repetitions depend only on what was allocated before the first one. So
//! once one repetition has run and its counts are known, the others can
//! run at the same time, each into a [`WindowCs`] over its own range of
//! the assignment, with the variable indices sequential synthesis would
//! have given them: the assignment is exactly the sequential one.

use std::mem::MaybeUninit;

use bellpepper_core::{ConstraintSystem, Index, SynthesisError, Variable};
use blstrs::Scalar;
use rayon::prelude::*;

use crate::witness::{AssignOnly, AssignmentCs};

/// An assignment-only system over one range of a partition's aux values
/// and inputs, the range's first index given.
pub struct WindowCs<'a> {
    aux: &'a mut [MaybeUninit<Scalar>],
    aux_base: usize,
    aux_len: usize,
    input: &'a mut [MaybeUninit<Scalar>],
    input_base: usize,
    input_len: usize,
}

impl AssignOnly for WindowCs<'_> {}

impl ConstraintSystem<Scalar> for WindowCs<'_> {
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let slot = self
            .aux
            .get_mut(self.aux_len)
            .ok_or(SynthesisError::Unsatisfiable)?;
        slot.write(f()?);
        self.aux_len += 1;
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_base + self.aux_len - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let slot = self
            .input
            .get_mut(self.input_len)
            .ok_or(SynthesisError::Unsatisfiable)?;
        slot.write(f()?);
        self.input_len += 1;
        Ok(Variable::new_unchecked(Index::Input(
            self.input_base + self.input_len - 1,
        )))
    }

    cuzk_prover::ignore_constraints!();

    cuzk_prover::flat_namespaces!();
}

impl AssignmentCs {
    /// Aux values and inputs assigned so far.
    pub fn counts(&self) -> (usize, usize) {
        (self.aux.len(), self.input.len())
    }

    /// Runs `assign` for every item, in parallel, as if one after another
    /// from here: item `i` gets the range of `aux_each` aux values and
    /// `inputs_each` inputs it would have had, and must fill exactly that.
    /// An item that allocates more or fewer is an error and the system is
    /// left as it was.
    pub fn assign_parallel<T: Sync>(
        &mut self,
        items: &[T],
        (aux_each, inputs_each): (usize, usize),
        assign: impl Fn(&mut WindowCs<'_>, &T) -> Result<(), SynthesisError> + Sync,
    ) -> Result<(), SynthesisError> {
        let (aux_start, input_start) = self.counts();
        let n = items.len();
        let (aux_total, input_total) = (n * aux_each, n * inputs_each);
        self.aux.reserve(aux_total);
        self.input.reserve(input_total);
        let mut aux = &mut self.aux.spare_capacity_mut()[..aux_total];
        let mut input = &mut self.input.spare_capacity_mut()[..input_total];
        let mut windows = Vec::with_capacity(n);
        for i in 0..n {
            let (a, rest_a) = std::mem::take(&mut aux).split_at_mut(aux_each);
            let (b, rest_b) = std::mem::take(&mut input).split_at_mut(inputs_each);
            (aux, input) = (rest_a, rest_b);
            windows.push(WindowCs {
                aux: a,
                aux_base: aux_start + i * aux_each,
                aux_len: 0,
                input: b,
                input_base: input_start + i * inputs_each,
                input_len: 0,
            });
        }
        windows
            .par_iter_mut()
            .zip(items)
            .try_for_each(|(cs, item)| {
                assign(cs, item)?;
                if (cs.aux_len, cs.input_len) == (aux_each, inputs_each) {
                    Ok(())
                } else {
                    Err(SynthesisError::Unsatisfiable)
                }
            })?;
        drop(windows);
        // SAFETY: every window wrote each of its slots (checked above), and
        // the windows tile the first `aux_total` / `input_total` spare
        // slots.
        unsafe {
            self.aux.set_len(aux_start + aux_total);
            self.input.set_len(input_start + input_total);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::num::AllocatedNum;

    /// A sub-circuit: two aux values derived from a shared one, one input.
    fn sub<CS: ConstraintSystem<Scalar>>(
        cs: &mut CS,
        shared: &AllocatedNum<Scalar>,
        x: u64,
    ) -> Result<(), SynthesisError> {
        let a = AllocatedNum::alloc(&mut *cs, || Ok(Scalar::from(x)))?;
        let b = a.mul(&mut *cs, shared)?;
        b.inputize(&mut *cs)
    }

    fn setup() -> (AssignmentCs, AllocatedNum<Scalar>) {
        let mut cs = AssignmentCs::default();
        cs.alloc_input(|| "one", || Ok(Scalar::from(1u64))).unwrap();
        let shared = AllocatedNum::alloc(&mut cs, || Ok(Scalar::from(3u64))).unwrap();
        (cs, shared)
    }

    #[test]
    fn parallel_assignment_equals_sequential() {
        let items: Vec<u64> = (10..30).collect();
        let (mut seq, shared) = setup();
        for x in &items {
            sub(&mut seq, &shared, *x).unwrap();
        }
        let (mut par, shared) = setup();
        sub(&mut par, &shared, items[0]).unwrap();
        let each = (par.counts().0 - 1, par.counts().1 - 1);
        par.assign_parallel(&items[1..], each, |cs, x| sub(cs, &shared, *x))
            .unwrap();
        assert_eq!(par.aux, seq.aux);
        assert_eq!(par.input, seq.input);
    }

    #[test]
    fn a_window_of_the_wrong_size_is_an_error_and_changes_nothing() {
        let (mut cs, shared) = setup();
        let before = (cs.aux.clone(), cs.input.clone());
        for each in [(1, 1), (3, 1), (2, 0), (2, 2)] {
            let r = cs.assign_parallel(&[1u64, 2, 3], each, |cs, x| sub(cs, &shared, *x));
            assert!(r.is_err(), "{each:?}");
            assert_eq!((cs.aux.clone(), cs.input.clone()), before);
        }
    }
}
