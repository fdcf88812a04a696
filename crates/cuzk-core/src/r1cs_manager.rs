//! Resident compiled constraint systems, one per circuit shape.
//!
//! The first partition of a shape (kind × registered proof) records its
//! constraint matrices (or loads them from `<params cache>/r1cs`, where a
//! recorded shape is kept); every later partition of that shape reuses the
//! resident copy. Partitions of one shape arriving together wait for one
//! recording. A resident system is charged to the memory budget; when the
//! budget has no room for it, or anything about it fails, the partition is
//! synthesized the old way (linear combinations built per constraint), so
//! the compiled path can make a job faster but never fail it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cuzk_circuits::PartitionSource;
use cuzk_r1cs::CompiledCs;
use tracing::{info, warn};

use crate::budget::{MemoryBudget, Reservation};

/// One resident system, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstraintSystemEntry {
    /// Kind and registered proof, e.g. `porep-StackedDrg32GiBV1_1`.
    pub shape: String,
    /// Memory held (charged to the budget).
    pub bytes: u64,
    pub constraints: u64,
    /// Partitions synthesized through it.
    pub uses: u64,
}

struct Resident {
    cs: Arc<CompiledCs>,
    _charge: Reservation,
    uses: u64,
}

/// A shape's slot: `None` until recorded; `Some(None)` when it could not
/// be made resident (the old path is used for it from then on).
type Slot = Arc<Mutex<Option<Option<Resident>>>>;

/// The resident systems.
pub struct ConstraintSystems {
    dir: Option<PathBuf>,
    budget: Arc<MemoryBudget>,
    slots: Mutex<BTreeMap<String, Slot>>,
}

/// The key of a shape's system, in its file's name and its header: the
/// shape and the cuzk version that recorded it (a new version records
/// again, in case its circuits changed). Tools that record a system for
/// the daemon to find name it with this key.
pub fn file_key(shape: &str) -> String {
    format!("{shape}-cuzk{}", env!("CARGO_PKG_VERSION"))
}

/// Where recorded systems are kept for a parameter directory (the daemon's
/// params cache, or a tool's): its `r1cs` subdirectory.
pub fn dir_for(params_dir: &std::path::Path) -> PathBuf {
    params_dir.join("r1cs")
}

/// The key and file of `shape`'s recorded system for the parameter
/// directory `params_dir`: where a daemon on that directory keeps it, and
/// where tools that record or read one for it look.
pub fn recorded_file(params_dir: &std::path::Path, shape: &str) -> (String, PathBuf) {
    let key = file_key(shape);
    let file = cuzk_r1cs::file::path_for(&dir_for(params_dir), &key);
    (key, file)
}

/// Partition `k` through the compiled system `cs`; `None` when the system
/// does not fit the circuit and `at` leaves a, b and c to synthesis, so
/// the old way can take over (logged here).
pub fn synthesize_through(
    source: &dyn PartitionSource,
    k: usize,
    cs: &Arc<CompiledCs>,
    at: cuzk_prover::AbcAt,
) -> Option<Result<cuzk_prover::Synthesized, cuzk_circuits::CircuitError>> {
    use cuzk_circuits::CircuitError;
    match source.synthesize_compiled(k, cs, at) {
        Err(CircuitError::Compiled {
            source: cuzk_r1cs::CompiledSynthError::Compiled(e),
            ..
        }) if at == cuzk_prover::AbcAt::Synthesis => {
            warn!("compiled constraint system unusable, synthesizing the old way: {e}");
            None
        }
        r => Some(r),
    }
}

impl ConstraintSystems {
    /// Systems kept in `dir` when given (else recorded in memory only),
    /// charged to `budget`.
    pub fn new(dir: Option<PathBuf>, budget: Arc<MemoryBudget>) -> ConstraintSystems {
        ConstraintSystems {
            dir,
            budget,
            slots: Mutex::new(BTreeMap::new()),
        }
    }

    fn slot(&self, shape: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.entry(shape.to_string()).or_default().clone()
    }

    /// The resident system of `source`'s shape, recorded from partition
    /// `k` (or loaded) the first time; `None` when it cannot be resident.
    pub fn get(&self, source: &dyn PartitionSource, k: usize) -> Option<Arc<CompiledCs>> {
        let slot = self.slot(source.shape());
        let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(self.make_resident(source, k));
        }
        let resident = guard.as_mut().and_then(Option::as_mut)?;
        resident.uses += 1;
        Some(resident.cs.clone())
    }

    /// Makes `source`'s shape resident now if its system was recorded
    /// before (its file is in the directory: a read of seconds, never a
    /// recording), so that the shape's first partitions, like every later
    /// one, can leave a, b and c to a backend that evaluates them; whether
    /// the system is resident afterwards. With a directory it waits for a
    /// partition recording or loading the shape (as
    /// [`ConstraintSystems::get`] would); without one it only looks. A
    /// file that does not load is left to `get`, which records the system
    /// again.
    pub fn load_recorded(&self, source: &dyn PartitionSource) -> bool {
        let shape = source.shape();
        let Some(dir) = &self.dir else {
            return self.is_resident(shape);
        };
        let key = file_key(shape);
        let file = cuzk_r1cs::file::path_for(dir, &key);
        let slot = self.slot(shape);
        let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() && file.is_file() {
            let t = Instant::now();
            match cuzk_r1cs::file::load(&file, &key) {
                Ok(cs) => *guard = Some(self.charge(shape, cs, false, t)),
                Err(e) => warn!(shape, "the recorded constraint system did not load: {e}"),
            }
        }
        matches!(*guard, Some(Some(_)))
    }

    fn make_resident(&self, source: &dyn PartitionSource, k: usize) -> Option<Resident> {
        let shape = source.shape();
        let key = file_key(shape);
        let t = Instant::now();
        let record = || {
            source.record(k).map(|mut cs| {
                cs.key = key.clone();
                cs
            })
        };
        let made = match &self.dir {
            Some(dir) => cuzk_r1cs::load_or_record(dir, &key, record),
            None => record().map(|cs| (cs, true)),
        };
        match made {
            Ok((cs, recorded)) => self.charge(shape, cs, recorded, t),
            Err(e) => {
                warn!(
                    shape,
                    "no compiled constraint system, synthesizing the old way: {e}"
                );
                None
            }
        }
    }

    /// `cs` made resident, charged to the budget (`None` when it has no
    /// room); `t`: when recording or loading it began.
    fn charge(&self, shape: &str, cs: CompiledCs, recorded: bool, t: Instant) -> Option<Resident> {
        let stats = cs.stats();
        let charge = match self.budget.try_reserve(stats.bytes) {
            Ok(Some(r)) => r,
            _ => {
                warn!(
                    shape,
                    bytes = stats.bytes,
                    "no budget room for the constraint system, synthesizing the old way"
                );
                return None;
            }
        };
        info!(
            shape,
            recorded,
            ms = t.elapsed().as_millis() as u64,
            bytes = stats.bytes,
            constraints = stats.constraints,
            segments = stats.segments,
            instances = stats.instances,
            "constraint system resident"
        );
        Some(Resident {
            cs: Arc::new(cs),
            _charge: charge,
            uses: 0,
        })
    }

    /// Whether `shape`'s system is resident now (a slot being recorded is
    /// not waited for: it counts as not resident).
    pub fn is_resident(&self, shape: &str) -> bool {
        let slot = self.slot(shape);
        let resident = match slot.try_lock() {
            Ok(g) => matches!(*g, Some(Some(_))),
            Err(_) => false,
        };
        resident
    }

    /// Every resident system.
    pub fn entries(&self) -> Vec<ConstraintSystemEntry> {
        let slots: Vec<(String, Slot)> = {
            let s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            s.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        slots
            .into_iter()
            .filter_map(|(shape, slot)| {
                // A slot being recorded is skipped rather than waited for.
                let g = slot.try_lock().ok()?;
                let r = g.as_ref()?.as_ref()?;
                Some(ConstraintSystemEntry {
                    shape,
                    bytes: r.cs.bytes(),
                    constraints: r.cs.num_constraints(),
                    uses: r.uses,
                })
            })
            .collect()
    }
}

/// For tools proving one partition outside a daemon (cuzk-lab, cuzk-peer):
/// partition `k`'s witness, a, b and c evaluated on the host, through its
/// shape's system kept beside the parameters in `params_dir` ([`dir_for`];
/// loaded, or recorded there first: that takes as long as the old way) as
/// a daemon on the same parameters synthesizes it; the old way when there
/// can be no such system or it does not fit. Says which path it took
/// (`compiled` or `gadgets`).
pub fn synthesize_on_host(
    params_dir: &std::path::Path,
    source: &dyn PartitionSource,
    k: usize,
) -> Result<(cuzk_prover::PartitionWitness, &'static str), cuzk_circuits::CircuitError> {
    let systems = ConstraintSystems::new(Some(dir_for(params_dir)), MemoryBudget::new(u64::MAX));
    let at = cuzk_prover::AbcAt::Synthesis;
    if let Some(r) = systems
        .get(source, k)
        .and_then(|cs| synthesize_through(source, k, &cs, at))
    {
        return Ok((r?.witness, "compiled"));
    }
    Ok((source.synthesize(k)?.witness, "gadgets"))
}
