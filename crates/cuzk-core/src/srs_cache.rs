//! Decoded SRS, loaded on first use and kept resident.
//!
//! One entry per circuit (registered proof → parameter file); concurrent
//! first uses of the same circuit load it once. A failed load is not
//! remembered, so parameters that appear later are picked up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk_prover::srs::{ParamsFile, Srs, SubgroupCheck};
use tracing::info;

use crate::kinds::ProofType;
use crate::params::param_files;

/// One resident SRS, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrsEntry {
    pub circuit_id: String,
    pub bytes: u64,
    /// Jobs holding it right now.
    pub in_use: u32,
}

type Slot = Arc<Mutex<Option<Arc<Srs>>>>;

/// The resident SRS of every circuit used so far.
pub struct SrsCache {
    check: SubgroupCheck,
    slots: Mutex<HashMap<String, Slot>>,
}

impl SrsCache {
    /// `check_subgroup`: verify every point is in the prime-order subgroup
    /// when decoding (slower; parameter files are checksummed when fetched).
    pub fn new(check_subgroup: bool) -> SrsCache {
        SrsCache {
            check: if check_subgroup {
                SubgroupCheck::Full
            } else {
                SubgroupCheck::None
            },
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The SRS of `proof`'s circuit and the time spent loading it now
    /// (zero when it was resident).
    pub fn get(&self, proof: ProofType) -> Result<(Arc<Srs>, Duration), String> {
        let id = proof.circuit_id();
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id.clone())
            .or_default()
            .clone();
        let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(srs) = guard.as_ref() {
            return Ok((srs.clone(), Duration::ZERO));
        }
        let t = Instant::now();
        let files = param_files(proof)?;
        let srs = ParamsFile::open(&files.params)
            .and_then(|f| f.decode(self.check))
            .map_err(|e| format!("loading the SRS of {id}: {e}"))?;
        let srs = Arc::new(srs);
        let took = t.elapsed();
        info!(circuit = %id, bytes = srs.bytes(), ms = took.as_millis() as u64, "SRS loaded");
        *guard = Some(srs.clone());
        Ok((srs, took))
    }

    /// Resident entries, sorted by circuit id.
    pub fn entries(&self) -> Vec<SrsEntry> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<SrsEntry> = slots
            .iter()
            .filter_map(|(id, slot)| {
                let guard = slot.try_lock().ok()?;
                let srs = guard.as_ref()?;
                Some(SrsEntry {
                    circuit_id: id.clone(),
                    bytes: srs.bytes(),
                    in_use: (Arc::strong_count(srs) - 1) as u32,
                })
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }
}
