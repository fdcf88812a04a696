//! The parts of a `bellpepper_core::ConstraintSystem<Scalar>` impl that the
//! flat systems of this workspace (witness, assignment, check, count,
//! recording and setup systems) write alike, as macros to use inside such
//! an impl: namespaces ignored with the system its own root
//! ([`flat_namespaces!`]), constraints ignored ([`ignore_constraints!`]),
//! values pushed onto two vectors ([`assign_into!`]) or variables only
//! counted ([`count_into!`]).

/// What the macros name, for their expansions in other crates.
#[doc(hidden)]
pub mod reexport {
    pub use bellpepper_core::{Index, LinearCombination, SynthesisError, Variable};
    pub use blstrs::Scalar;
}

/// `type Root = Self`, and `push_namespace`, `pop_namespace` and
/// `get_root` of a system that ignores namespaces.
#[macro_export]
macro_rules! flat_namespaces {
    () => {
        type Root = Self;

        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}

/// An `enforce` that keeps nothing and calls no linear-combination
/// closure (assignment-only systems).
#[macro_export]
macro_rules! ignore_constraints {
    () => {
        fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
        where
            A: FnOnce() -> AR,
            AR: Into<String>,
            LA: FnOnce(
                $crate::cs_parts::reexport::LinearCombination<$crate::cs_parts::reexport::Scalar>,
            ) -> $crate::cs_parts::reexport::LinearCombination<
                $crate::cs_parts::reexport::Scalar,
            >,
            LB: FnOnce(
                $crate::cs_parts::reexport::LinearCombination<$crate::cs_parts::reexport::Scalar>,
            ) -> $crate::cs_parts::reexport::LinearCombination<
                $crate::cs_parts::reexport::Scalar,
            >,
            LC: FnOnce(
                $crate::cs_parts::reexport::LinearCombination<$crate::cs_parts::reexport::Scalar>,
            ) -> $crate::cs_parts::reexport::LinearCombination<
                $crate::cs_parts::reexport::Scalar,
            >,
        {
        }
    };
}

/// `alloc` and `alloc_input` that push each value onto the `Vec<Scalar>`
/// fields `self.<aux>` and `self.<input>`: a variable's index is its place.
#[macro_export]
macro_rules! assign_into {
    (input: $($input:ident).+, aux: $($aux:ident).+) => {
        fn alloc<F, A, AR>(
            &mut self,
            _: A,
            f: F,
        ) -> Result<$crate::cs_parts::reexport::Variable, $crate::cs_parts::reexport::SynthesisError>
        where
            F: FnOnce() -> Result<
                $crate::cs_parts::reexport::Scalar,
                $crate::cs_parts::reexport::SynthesisError,
            >,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            let v = &mut self.$($aux).+;
            v.push(f()?);
            Ok($crate::cs_parts::reexport::Variable::new_unchecked(
                $crate::cs_parts::reexport::Index::Aux(v.len() - 1),
            ))
        }

        fn alloc_input<F, A, AR>(
            &mut self,
            _: A,
            f: F,
        ) -> Result<$crate::cs_parts::reexport::Variable, $crate::cs_parts::reexport::SynthesisError>
        where
            F: FnOnce() -> Result<
                $crate::cs_parts::reexport::Scalar,
                $crate::cs_parts::reexport::SynthesisError,
            >,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            let v = &mut self.$($input).+;
            v.push(f()?);
            Ok($crate::cs_parts::reexport::Variable::new_unchecked(
                $crate::cs_parts::reexport::Index::Input(v.len() - 1),
            ))
        }
    };
}

/// `alloc` and `alloc_input` that only count, in the `usize` fields
/// `self.<aux>` and `self.<input>`, never calling the value closures.
#[macro_export]
macro_rules! count_into {
    (input: $($input:ident).+, aux: $($aux:ident).+) => {
        fn alloc<F, A, AR>(
            &mut self,
            _: A,
            _: F,
        ) -> Result<$crate::cs_parts::reexport::Variable, $crate::cs_parts::reexport::SynthesisError>
        where
            F: FnOnce() -> Result<
                $crate::cs_parts::reexport::Scalar,
                $crate::cs_parts::reexport::SynthesisError,
            >,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            self.$($aux).+ += 1;
            Ok($crate::cs_parts::reexport::Variable::new_unchecked(
                $crate::cs_parts::reexport::Index::Aux(self.$($aux).+ - 1),
            ))
        }

        fn alloc_input<F, A, AR>(
            &mut self,
            _: A,
            _: F,
        ) -> Result<$crate::cs_parts::reexport::Variable, $crate::cs_parts::reexport::SynthesisError>
        where
            F: FnOnce() -> Result<
                $crate::cs_parts::reexport::Scalar,
                $crate::cs_parts::reexport::SynthesisError,
            >,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            self.$($input).+ += 1;
            Ok($crate::cs_parts::reexport::Variable::new_unchecked(
                $crate::cs_parts::reexport::Index::Input(self.$($input).+ - 1),
            ))
        }
    };
}
