//! The SRS manager: which circuits' parameters are resident, and in which tier.
//!
//! - **hot**: loaded into this process (decoded points, or a memory-mapped
//!   warm file) and charged to the memory budget at its size;
//! - **warm**: not resident, but a warm file (points already in memory
//!   layout) waits in `srs.warm_dir`, so loading it is an mmap;
//! - **cold**: only the `.params` file; loading decodes it.
//!
//! An SRS whose size and one partition's memory together exceed the whole
//! budget could never be hot: with `srs.warm_dir` set it is **paged**
//! instead — its warm file written section by section from the `.params`
//! file (never held whole in memory) and mapped, charged nothing, its
//! pages left to the kernel's page cache (reclaimable, so no OOM; the cost
//! is disk reads while proving). Without `srs.warm_dir` such a job fails
//! with an error that says so.
//!
//! An SRS loads on first use ([`SrsManager::acquire`]) or on request
//! (`PreloadSRS`); jobs hold it through an [`SrsLease`] (the in-use count).
//! `EvictSRS` drops an idle one and refuses one in use. Under memory pressure
//! the least recently used idle SRS, idle for at least `eviction_min_idle`,
//! is evicted to make room.
//!
//! Above the hot tier sits the **device tier** ([`crate::device_tier`]):
//! what a prover backend made of a hot SRS on its device (for the CUDA
//! backend, its points in VRAM), keyed by circuit id and backend, and
//! dropped with the host copy ([`SrsManager::on_device`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cuzk_prover::srs::{
    write_warm, write_warm_streaming, ParamsFile, SectionCounts, Srs, SubgroupCheck, WarmSrs,
};
use cuzk_prover::{ProverBackend, SrsRef, WitnessSize};

use crate::device_tier::{DeviceLease, DeviceTier};
use tracing::{info, warn};

use crate::budget::{Claim, MemoryBudget, Reservation};
use crate::kinds::ProofType;
use crate::params::{param_files, ParamFilesError};

/// SRS points, decoded or mapped.
pub enum SrsData {
    Decoded(Srs),
    /// A warm file mapped and charged at its size (kept resident).
    Mapped(WarmSrs),
    /// A warm file mapped for an SRS larger than the budget: not charged,
    /// left to the page cache.
    Paged(WarmSrs),
}

impl SrsData {
    pub fn as_srs_ref(&self) -> SrsRef<'_> {
        match self {
            SrsData::Decoded(s) => s.as_srs_ref(),
            SrsData::Mapped(w) | SrsData::Paged(w) => w.as_srs_ref(),
        }
    }

    /// Bytes of points, decoded or mapped.
    pub fn bytes(&self) -> u64 {
        match self {
            SrsData::Decoded(s) => s.bytes(),
            SrsData::Mapped(w) | SrsData::Paged(w) => w.bytes(),
        }
    }

    /// Bytes charged to the memory budget.
    pub fn charge(&self) -> u64 {
        match self {
            SrsData::Paged(_) => 0,
            other => other.bytes(),
        }
    }
}

/// Why a loader could not size or load an SRS.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Params(#[from] ParamFilesError),
    #[error(transparent)]
    File(#[from] cuzk_prover::srs::SrsError),
    #[error("paging an SRS needs a warm file directory (srs.warm_dir)")]
    NoWarmDir,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where SRS come from.
pub trait SrsLoader: Send + Sync {
    /// Section sizes without loading the points.
    fn counts(&self, proof: ProofType) -> Result<SectionCounts, LoadError>;
    /// Bytes the SRS will occupy when loaded.
    fn size(&self, proof: ProofType) -> Result<u64, LoadError>;
    /// Loads the points.
    fn load(&self, proof: ProofType) -> Result<SrsData, LoadError>;
    /// Maps the points from a warm file made without holding them in
    /// memory ([`SrsData::Paged`]); `Err` when this loader cannot.
    fn load_paged(&self, _proof: ProofType) -> Result<SrsData, LoadError> {
        Err(LoadError::NoWarmDir)
    }
    /// Whether [`SrsLoader::load_paged`] can work.
    fn can_page(&self) -> bool {
        false
    }
    /// Whether a warm file exists for the circuit.
    fn has_warm(&self, _proof: ProofType) -> bool {
        false
    }
}

/// Loads from the parameter cache, through warm files when configured.
pub struct ParamsLoader {
    check: SubgroupCheck,
    warm_dir: Option<PathBuf>,
}

impl ParamsLoader {
    pub fn new(check_subgroup: bool, warm_dir: Option<PathBuf>) -> ParamsLoader {
        ParamsLoader {
            check: if check_subgroup {
                SubgroupCheck::Full
            } else {
                SubgroupCheck::None
            },
            warm_dir,
        }
    }

    fn warm_path(&self, proof: ProofType) -> Option<PathBuf> {
        let dir = self.warm_dir.as_ref()?;
        let files = param_files(proof).ok()?;
        let name = files.params.file_name()?.to_string_lossy().into_owned();
        Some(dir.join(format!("{name}.warm")))
    }

    fn open(&self, proof: ProofType) -> Result<ParamsFile, LoadError> {
        let files = param_files(proof)?;
        Ok(ParamsFile::open(&files.params)?)
    }
}

impl SrsLoader for ParamsLoader {
    fn counts(&self, proof: ProofType) -> Result<SectionCounts, LoadError> {
        Ok(self.open(proof)?.counts())
    }

    fn size(&self, proof: ProofType) -> Result<u64, LoadError> {
        let decoded = Srs::bytes_for(&self.counts(proof)?);
        // A warm file is mapped whole; it may be a little larger.
        let warm = self
            .warm_path(proof)
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        Ok(decoded.max(warm))
    }

    fn load(&self, proof: ProofType) -> Result<SrsData, LoadError> {
        let file = self.open(proof)?;
        if let Some(path) = self.warm_path(proof) {
            if path.is_file() {
                match WarmSrs::open_expecting(&path, &file.vk_fingerprint()) {
                    Ok(w) => return Ok(SrsData::Mapped(w)),
                    Err(e) => {
                        warn!(path = %path.display(), "warm SRS unusable, decoding .params: {e}")
                    }
                }
            }
        }
        let srs = file.decode(self.check)?;
        if let Some(path) = self.warm_path(proof) {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            // Next load of this circuit maps instead of decoding.
            if let Err(e) = write_warm(&srs, &path) {
                warn!(path = %path.display(), "cannot write the warm SRS: {e}");
            }
        }
        Ok(SrsData::Decoded(srs))
    }

    fn has_warm(&self, proof: ProofType) -> bool {
        self.warm_path(proof).is_some_and(|p| p.is_file())
    }

    fn load_paged(&self, proof: ProofType) -> Result<SrsData, LoadError> {
        let path = self.warm_path(proof).ok_or(LoadError::NoWarmDir)?;
        let file = self.open(proof)?;
        let fingerprint = file.vk_fingerprint();
        if let Ok(w) = WarmSrs::open_expecting(&path, &fingerprint) {
            return Ok(SrsData::Paged(w));
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| LoadError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        info!(path = %path.display(), "writing the warm SRS section by section");
        write_warm_streaming(&file, &path, self.check)?;
        Ok(SrsData::Paged(WarmSrs::open_expecting(
            &path,
            &fingerprint,
        )?))
    }

    fn can_page(&self) -> bool {
        self.warm_dir.is_some()
    }
}

/// The three tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Hot,
    Warm,
    Cold,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }
}

/// One circuit's SRS, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrsEntry {
    pub circuit_id: String,
    pub tier: Tier,
    /// Resident bytes (hot), else the size it would take.
    pub bytes: u64,
    /// Jobs holding it now.
    pub in_use: u32,
    /// Seconds since it was last used (None: never).
    pub idle_secs: Option<u64>,
    pub loads: u32,
    /// Backends whose device holds a copy (device tier), with its bytes
    /// and the sections on the device.
    pub on_devices: Vec<crate::device_tier::DeviceCopyInfo>,
}

struct Hot {
    data: Arc<SrsData>,
    _charge: Reservation,
}

struct Entry {
    proof: ProofType,
    hot: Option<Hot>,
    in_use: u32,
    last_use: Option<Instant>,
    loads: u32,
    /// Held while loading, so one circuit loads once.
    load_lock: Arc<Mutex<()>>,
}

/// Why an SRS could not be acquired, preloaded or evicted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SrsError {
    #[error(
        "unknown circuit id {0:?} (expected e.g. porep-32g, snap-32g, wpost-32g, winning-32g)"
    )]
    UnknownCircuit(String),
    #[error("SRS {circuit_id} is in use by {in_use} job(s) and cannot be evicted")]
    InUse { circuit_id: String, in_use: u32 },
    #[error("SRS {circuit_id}: {message}")]
    Load { circuit_id: String, message: String },
    #[error("SRS {circuit_id} on {backend}: {message}")]
    Device {
        circuit_id: String,
        backend: String,
        message: String,
    },
    #[error("SRS {circuit_id} ({bytes} bytes) does not fit in the memory budget now")]
    NoRoom { circuit_id: String, bytes: u64 },
    #[error(
        "SRS {circuit_id} ({bytes} bytes) and a partition ({partition} bytes) exceed the whole \
         memory budget ({budget} bytes); set srs.warm_dir to serve it memory-mapped"
    )]
    TooLarge {
        circuit_id: String,
        bytes: u64,
        partition: u64,
        budget: u64,
    },
}

/// A job's hold on a hot SRS.
pub struct SrsLease {
    data: Arc<SrsData>,
    circuit_id: String,
    manager: Arc<SrsManager>,
}

impl SrsLease {
    pub fn data(&self) -> &SrsData {
        &self.data
    }

    /// The circuit whose SRS this is.
    pub fn circuit_id(&self) -> &str {
        &self.circuit_id
    }
}

impl Drop for SrsLease {
    fn drop(&mut self) {
        let mut entries = self.manager.lock();
        if let Some(e) = entries.get_mut(&self.circuit_id) {
            e.in_use = e.in_use.saturating_sub(1);
            e.last_use = Some(Instant::now());
        }
    }
}

/// The resident SRS of every circuit, charged to the memory budget.
pub struct SrsManager {
    loader: Arc<dyn SrsLoader>,
    budget: Arc<MemoryBudget>,
    min_idle: Duration,
    entries: Mutex<HashMap<String, Entry>>,
    /// The device tier, keyed by circuit id.
    device: DeviceTier,
}

impl Drop for SrsManager {
    /// The device copies go before the points they were made from (a
    /// backend may have page-locked the host copy, which must be unlocked
    /// before it is freed).
    fn drop(&mut self) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            self.device.forget(&id);
        }
    }
}

impl SrsManager {
    pub fn new(
        loader: Arc<dyn SrsLoader>,
        budget: Arc<MemoryBudget>,
        min_idle: Duration,
    ) -> Arc<SrsManager> {
        Arc::new(SrsManager {
            loader,
            budget,
            min_idle,
            entries: Mutex::new(HashMap::new()),
            device: DeviceTier::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn entry(entries: &mut HashMap<String, Entry>, proof: ProofType) -> &mut Entry {
        entries.entry(proof.circuit_id()).or_insert_with(|| Entry {
            proof,
            hot: None,
            in_use: 0,
            last_use: None,
            loads: 0,
            load_lock: Arc::new(Mutex::new(())),
        })
    }

    /// Section counts of a circuit's SRS (from the file header).
    pub fn counts(&self, proof: ProofType) -> Result<SectionCounts, LoadError> {
        self.loader.counts(proof)
    }

    /// The hot SRS of `proof`'s circuit, loading it if needed (evicting idle
    /// ones under memory pressure, waiting up to `wait` for room). Returns
    /// the lease and the time spent loading (zero if it was hot).
    pub fn acquire(
        self: &Arc<Self>,
        proof: ProofType,
        wait: Duration,
        give_up: &dyn Fn() -> bool,
    ) -> Result<(SrsLease, Duration), SrsError> {
        match self.lease_with(proof, 0, Claim::Normal, wait, give_up)? {
            Some((lease, _, took)) => Ok((lease, took)),
            None => Err(SrsError::NoRoom {
                circuit_id: proof.circuit_id(),
                bytes: self.loader.size(proof).unwrap_or(0),
            }),
        }
    }

    /// Leases `proof`'s SRS and reserves `extra` bytes with it: both or
    /// neither. Nothing is held while waiting for room, so workers needing
    /// different circuits (or partitions needing the SRS they wait for)
    /// cannot block each other. A cold SRS is loaded, its bytes reserved in
    /// the same step as `extra`. Returns the lease, the `extra` reservation
    /// and the load time; `Ok(None)` when there was no room within `wait`.
    /// A [`Claim::Critical`] lease may use the budget's critical reserve.
    pub fn lease_with(
        self: &Arc<Self>,
        proof: ProofType,
        extra: u64,
        claim: Claim,
        wait: Duration,
        give_up: &dyn Fn() -> bool,
    ) -> Result<Option<(SrsLease, Reservation, Duration)>, SrsError> {
        let id = proof.circuit_id();
        let err = |message: String| SrsError::Load {
            circuit_id: id.clone(),
            message,
        };
        let t = Instant::now();
        let (hot_before, load_lock) = {
            let mut entries = self.lock();
            let e = Self::entry(&mut entries, proof);
            (e.hot.is_some(), e.load_lock.clone())
        };
        if !hot_before {
            // A load in progress ends first (holding nothing while waiting):
            // then this call finds the SRS hot instead of charging it twice.
            drop(load_lock.lock().unwrap_or_else(|p| p.into_inner()));
        }
        let was_hot = self.lock().get(&id).is_some_and(|e| e.hot.is_some());
        let mut srs_bytes = if was_hot {
            0
        } else {
            self.loader.size(proof).map_err(|e| err(e.to_string()))?
        };
        // Too large ever to be hot beside a partition: paged, or refused.
        let limit = self.budget.limit_for(claim);
        let paged = srs_bytes.saturating_add(extra) > limit;
        if paged && !self.loader.can_page() {
            return Err(SrsError::TooLarge {
                circuit_id: id,
                bytes: srs_bytes,
                partition: extra,
                budget: limit,
            });
        }
        if paged {
            warn!(
                circuit = %id,
                bytes = srs_bytes,
                budget = limit,
                "SRS larger than the memory budget: serving it memory-mapped (page cache, disk reads while proving)"
            );
            srs_bytes = 0;
        }
        let need = extra + srs_bytes;
        let mut reservation = match self
            .budget
            .try_reserve_as(need, claim)
            .map_err(|e| err(e.to_string()))?
        {
            Some(r) => r,
            None => {
                self.evict_idle(need, limit, Some(&id));
                match self
                    .budget
                    .reserve_within_as(need, claim, wait, give_up)
                    .map_err(|e| err(e.to_string()))?
                {
                    Some(r) => r,
                    None => return Ok(None),
                }
            }
        };
        let load_lock = {
            let mut entries = self.lock();
            let e = Self::entry(&mut entries, proof);
            if let Some(hot) = &e.hot {
                e.in_use += 1;
                reservation.release(srs_bytes);
                return Ok(Some((
                    self.lease(&id, hot.data.clone()),
                    reservation,
                    Duration::ZERO,
                )));
            }
            if was_hot {
                // Evicted since we looked: the reservation lacks its bytes.
                return Ok(None);
            }
            e.load_lock.clone()
        };
        let _loading = load_lock.lock().unwrap_or_else(|p| p.into_inner());
        {
            // Someone else may have loaded it while we waited.
            let mut entries = self.lock();
            let e = Self::entry(&mut entries, proof);
            if let Some(hot) = &e.hot {
                e.in_use += 1;
                reservation.release(srs_bytes);
                return Ok(Some((
                    self.lease(&id, hot.data.clone()),
                    reservation,
                    Duration::ZERO,
                )));
            }
        }
        let mut charge = reservation.split(srs_bytes);
        let data = if paged {
            self.loader.load_paged(proof)
        } else {
            self.loader.load(proof)
        };
        let data = Arc::new(data.map_err(|e| err(e.to_string()))?);
        if data.charge() > charge.bytes() {
            // The loader under-estimated: charge the rest or refuse.
            let more = data.charge() - charge.bytes();
            match self.budget.try_reserve_as(more, claim) {
                Ok(Some(r)) => charge.absorb(r),
                _ => {
                    return Err(err(format!(
                        "loaded {} bytes where {} were expected, and the budget has no room for the rest",
                        data.charge(),
                        charge.bytes()
                    )))
                }
            }
        } else {
            charge.release(charge.bytes() - data.charge());
        }
        let took = t.elapsed();
        info!(circuit = %id, bytes = data.bytes(), ms = took.as_millis() as u64, "SRS loaded (hot)");
        let mut entries = self.lock();
        let e = Self::entry(&mut entries, proof);
        e.hot = Some(Hot {
            data: data.clone(),
            _charge: charge,
        });
        e.loads += 1;
        e.in_use += 1;
        drop(entries);
        Ok(Some((self.lease(&id, data), reservation, took)))
    }

    fn lease(self: &Arc<Self>, id: &str, data: Arc<SrsData>) -> SrsLease {
        SrsLease {
            data,
            circuit_id: id.to_string(),
            manager: self.clone(),
        }
    }

    /// Evicts idle SRS, least recently used first, until `bytes` more would
    /// fit in the budget or none is left to evict. Returns the bytes freed.
    pub fn evict_idle_for(&self, bytes: u64) -> u64 {
        self.evict_idle(bytes, self.budget.limit_for(Claim::Normal), None)
    }

    /// As [`Self::evict_idle_for`], until `bytes` fit under `limit`, sparing
    /// the circuit `keep`.
    fn evict_idle(&self, bytes: u64, limit: u64, keep: Option<&str>) -> u64 {
        let mut gone = Vec::new();
        let mut entries = self.lock();
        let mut idle: Vec<(Option<Instant>, String)> = entries
            .iter()
            .filter(|(id, e)| {
                keep != Some(id.as_str())
                    && e.hot.is_some()
                    && e.in_use == 0
                    && e.last_use.is_none_or(|t| t.elapsed() >= self.min_idle)
            })
            .map(|(id, e)| (e.last_use, id.clone()))
            .collect();
        idle.sort();
        let mut freed = 0;
        // The points stay allocated until their device copies are gone (a
        // backend may have page-locked them); the budget's charge goes at
        // once.
        let mut points = Vec::new();
        for (_, id) in idle {
            if self.budget.used() + bytes <= limit {
                break;
            }
            let Some(e) = entries.get_mut(&id) else {
                continue;
            };
            if let Some(Hot { data, _charge }) = e.hot.take() {
                gone.push(id.clone());
                let b = data.charge();
                freed += b;
                drop(_charge);
                points.push(data);
                info!(circuit = %id, bytes = b, "SRS evicted under memory pressure");
            }
        }
        drop(entries);
        // Their device copies go too, the table unlocked, then the points.
        for id in gone {
            self.device.forget(&id);
        }
        drop(points);
        freed
    }

    /// Loads a circuit's SRS now. Returns whether it was already hot and the
    /// load time.
    pub fn preload(self: &Arc<Self>, circuit_id: &str) -> Result<(bool, Duration), SrsError> {
        let proof = ProofType::from_circuit_id(circuit_id)
            .ok_or_else(|| SrsError::UnknownCircuit(circuit_id.to_string()))?;
        let (lease, took) = self.acquire(proof, Duration::ZERO, &|| false)?;
        drop(lease);
        Ok((took.is_zero(), took))
    }

    /// Drops a hot SRS that no job holds. Returns whether it was loaded and
    /// the bytes freed.
    pub fn evict(&self, circuit_id: &str) -> Result<(bool, u64), SrsError> {
        if ProofType::from_circuit_id(circuit_id).is_none() {
            return Err(SrsError::UnknownCircuit(circuit_id.to_string()));
        }
        let mut entries = self.lock();
        let Some(e) = entries.get_mut(circuit_id) else {
            return Ok((false, 0));
        };
        if e.in_use > 0 {
            return Err(SrsError::InUse {
                circuit_id: circuit_id.to_string(),
                in_use: e.in_use,
            });
        }
        let hot = e.hot.take();
        let out = match &hot {
            Some(hot) => {
                let b = hot.data.charge();
                info!(circuit = %circuit_id, bytes = b, "SRS evicted on request");
                (true, b)
            }
            None => (false, 0),
        };
        drop(entries);
        // The device copies first (a backend may have page-locked the
        // points), then the points.
        self.device.forget(circuit_id);
        drop(hot);
        Ok(out)
    }

    /// The device copy of `lease`'s SRS on backend `slot` (its index among
    /// the engine's backends), made ready by `backend` for partitions of
    /// `size` if the device tier has none yet; `Ok` with no copy: prove
    /// from host memory. The copy lives until the host copy is evicted (or
    /// the device needs the room for another circuit while it is idle).
    pub fn on_device(
        &self,
        lease: &SrsLease,
        slot: usize,
        backend: &dyn ProverBackend,
        size: &WitnessSize,
    ) -> Result<DeviceLease, SrsError> {
        self.device
            .on_device(
                &lease.circuit_id,
                &lease.data.as_srs_ref(),
                slot,
                backend,
                size,
            )
            .map_err(|e| SrsError::Device {
                circuit_id: lease.circuit_id.clone(),
                backend: backend.name(),
                message: e.to_string(),
            })
    }

    /// Every circuit seen so far, by circuit id.
    pub fn entries(&self) -> Vec<SrsEntry> {
        let entries = self.lock();
        let mut out: Vec<SrsEntry> = entries
            .iter()
            .map(|(id, e)| {
                let (tier, bytes) = match &e.hot {
                    Some(h) => (Tier::Hot, h.data.bytes()),
                    None => (
                        if self.loader.has_warm(e.proof) {
                            Tier::Warm
                        } else {
                            Tier::Cold
                        },
                        self.loader.size(e.proof).unwrap_or(0),
                    ),
                };
                SrsEntry {
                    circuit_id: id.clone(),
                    tier,
                    bytes,
                    in_use: e.in_use,
                    idle_secs: e.last_use.map(|t| t.elapsed().as_secs()),
                    loads: e.loads,
                    on_devices: self.device.ready_on(id),
                }
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }

    /// Bytes of hot SRS charged to the budget.
    pub fn hot_bytes(&self) -> u64 {
        self.lock()
            .values()
            .filter_map(|e| e.hot.as_ref().map(|h| h.data.charge()))
            .sum()
    }
}
