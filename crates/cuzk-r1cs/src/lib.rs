//! cuzk-r1cs: pre-compiled constraint systems.
//!
//! A Filecoin partition circuit has the same A, B and C matrices for every
//! proof of one shape (kind × registered proof); only the assignment
//! changes. This crate records those matrices once ([`record`]) by running
//! the circuit into a [`RecordingCs`], keeps them compactly as a
//! [`CompiledCs`], stores them on disk ([`file`]), and then, per proof,
//! turns an assignment into the a, b, c vectors and densities the prover
//! backends consume ([`witness`]) without building one linear combination.
//!
//! Compactness comes from the circuits' structure: a partition is the same
//! sub-circuit repeated (per challenge, per sector) with its variables
//! shifted by a constant. Constraints are grouped into *segments* (one per
//! top-level namespace or extended sub-circuit), each encoded relative to
//! where it starts, and equal segments are stored once with a list of the
//! places (*instances*) where they occur.

pub mod compiled;
mod encode;
pub mod file;
pub mod record;
pub mod witness;

pub use compiled::{CompiledCs, CompiledStats};
pub use file::{load, load_or_record, save, FileError};
pub use record::{record, RecordingCs};
pub use witness::{synthesize_compiled, AssignmentCs, CompiledSynthError};

/// Asks the kernel to back `v`'s allocation with transparent huge pages
/// (Linux with THP in `madvise` mode; elsewhere a no-op). A partition's
/// vectors are gigabytes written once and read at scattered places: 4 KiB
/// pages cost a fault each on first touch and a TLB miss on most reads.
pub fn advise_huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < 4 * HUGE {
            return;
        }
        let start = v.as_mut_ptr() as usize;
        let aligned = start.div_ceil(HUGE) * HUGE;
        let end = (start + bytes) / HUGE * HUGE;
        if end > aligned {
            // SAFETY: the range lies inside `v`'s own allocation; madvise
            // only changes how the kernel backs it, never its contents.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
}
