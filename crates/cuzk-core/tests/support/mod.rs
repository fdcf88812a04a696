//! A scripted proof system, backend and SRS loader for engine tests: every
//! interleaving is forced with gates, nothing is really proved, so the tests
//! run in milliseconds.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use blstrs::{G1Affine, G2Affine, Scalar};
use cuzk_circuits::{CircuitError, PartitionSource};
use cuzk_core::budget::MemoryBudget;
use cuzk_core::config::EngineConfig;
use cuzk_core::engine::{EngineParts, ProofSystem};
use cuzk_core::srs_manager::{LoadError, SrsData, SrsLoader, SrsManager};
use cuzk_core::{AwaitOutcome, Engine, JobOutcome, Priority, ProofInput, ProofRequest, ProofType};
use cuzk_prover::srs::{SectionCounts, Srs, VerifyingKeyPoints};
use cuzk_prover::{
    PartitionWitness, Proof, ProveStats, ProverBackend, ProverError, SrsRef, Synthesized,
    WitnessSize,
};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, SectorId};
use group::prime::PrimeCurveAffine;

/// What the scripted pieces do for a job, keyed by its marker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Script {
    Prove,
    FailProve,
    Panic,
    BadProof,
    FailSynthesis,
}

/// A gate threads wait at while it is closed.
#[derive(Default)]
pub struct Gate {
    closed: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    pub fn closed() -> Gate {
        Gate {
            closed: Mutex::new(true),
            cv: Condvar::new(),
        }
    }
    pub fn open(&self) {
        *self.closed.lock().unwrap() = false;
        self.cv.notify_all();
    }
    pub fn close(&self) {
        *self.closed.lock().unwrap() = true;
    }
    fn pass(&self) {
        let g = self.closed.lock().unwrap();
        drop(self.cv.wait_while(g, |c| *c).unwrap());
    }
}

/// Shared script, logs and gates.
#[derive(Default)]
pub struct Scripted {
    pub scripts: Mutex<HashMap<u8, Script>>,
    /// (marker, partition) in the order proving started.
    pub proved: Mutex<Vec<(u8, usize)>>,
    /// Markers of the partitions handed to the backend marked urgent.
    pub urgent: Mutex<Vec<u8>>,
    /// (marker, partition) in the order synthesis started.
    pub synthesized: Mutex<Vec<(u8, usize)>>,
    /// Markers in the order their jobs were verified (i.e. completed).
    pub verified: Mutex<Vec<u8>>,
    pub prove_gate: Gate,
    pub synth_gate: Gate,
    pub verify_gate: Gate,
    pub entered: Condvar,
    /// Simulated time per prove.
    pub prove_time: Mutex<Duration>,
    /// Jobs (markers) whose partitions stay in the prover until released.
    pub held: Mutex<std::collections::HashSet<u8>>,
    pub released: Condvar,
}

pub type Shared = Arc<Scripted>;

pub fn shared() -> Shared {
    Arc::new(Scripted::default())
}

impl Scripted {
    pub fn script(&self, marker: u8, s: Script) {
        self.scripts.lock().unwrap().insert(marker, s);
    }
    fn get(&self, marker: u8) -> Script {
        self.scripts
            .lock()
            .unwrap()
            .get(&marker)
            .copied()
            .unwrap_or(Script::Prove)
    }
    /// Keeps job `marker`'s partitions in the prover until [`Self::release`].
    pub fn hold(&self, marker: u8) {
        self.held.lock().unwrap().insert(marker);
    }
    pub fn release(&self, marker: u8) {
        self.held.lock().unwrap().remove(&marker);
        self.released.notify_all();
    }
    fn wait_released(&self, marker: u8) {
        let g = self.held.lock().unwrap();
        drop(
            self.released
                .wait_while(g, |h| h.contains(&marker))
                .unwrap(),
        );
    }
    pub fn proved(&self) -> Vec<(u8, usize)> {
        self.proved.lock().unwrap().clone()
    }
    pub fn proved_markers(&self) -> Vec<u8> {
        self.proved().into_iter().map(|(m, _)| m).collect()
    }
    pub fn urgent_markers(&self) -> Vec<u8> {
        self.urgent.lock().unwrap().clone()
    }
    /// Blocks until some partition of job `marker` has started proving;
    /// returns the first one's index.
    pub fn wait_first_proving(&self, marker: u8) -> usize {
        let g = self.proved.lock().unwrap();
        let (g, t) = self
            .entered
            .wait_timeout_while(g, Duration::from_secs(20), |v| {
                !v.iter().any(|&(m, _)| m == marker)
            })
            .unwrap();
        assert!(
            !t.timed_out(),
            "no partition of job {marker} started proving"
        );
        g.iter()
            .find(|&&(m, _)| m == marker)
            .map(|&(_, k)| k)
            .unwrap_or(0)
    }
    /// Blocks until (marker, partition) has started proving.
    pub fn wait_proving(&self, marker: u8, k: usize) {
        let g = self.proved.lock().unwrap();
        let (_g, t) = self
            .entered
            .wait_timeout_while(g, Duration::from_secs(20), |v| !v.contains(&(marker, k)))
            .unwrap();
        assert!(
            !t.timed_out(),
            "partition {k} of job {marker} never started proving"
        );
    }
}

pub fn marker(req: &ProofRequest) -> (u8, usize) {
    match &req.input {
        ProofInput::WindowPost { randomness, .. } => (randomness[0], randomness[1].max(1) as usize),
        _ => (0, 1),
    }
}

struct FakeSource {
    shared: Shared,
    marker: u8,
    partitions: usize,
}

impl PartitionSource for FakeSource {
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn shape(&self) -> &str {
        "fake"
    }
    // No matrices: the engine synthesizes these the old way.
    fn record(&self, _: usize) -> Result<cuzk_r1cs::CompiledCs, CircuitError> {
        Err(CircuitError::Record("not in tests".into()))
    }
    fn synthesize_compiled(
        &self,
        _: usize,
        _: &std::sync::Arc<cuzk_r1cs::CompiledCs>,
        _: cuzk_prover::AbcAt,
    ) -> Result<Synthesized, CircuitError> {
        Err(CircuitError::Record("not in tests".into()))
    }
    fn synthesize_sized(
        &self,
        k: usize,
        _: Option<WitnessSize>,
    ) -> Result<Synthesized, CircuitError> {
        self.shared
            .synthesized
            .lock()
            .unwrap()
            .push((self.marker, k));
        self.shared.synth_gate.pass();
        if self.shared.get(self.marker) == Script::FailSynthesis {
            return Err(CircuitError::Build(format!(
                "scripted synthesis failure of {}",
                self.marker
            )));
        }
        Ok(Synthesized {
            witness: PartitionWitness {
                input: vec![Scalar::from(self.marker as u64), Scalar::from(k as u64)],
                ..Default::default()
            },
            elapsed: Duration::ZERO,
        })
    }
    fn check(&self, _: usize) -> Result<cuzk_prover::check::CircuitCheck, CircuitError> {
        Err(CircuitError::Build("not in tests".into()))
    }
}

pub struct FakeSystem(pub Shared);

impl ProofSystem for FakeSystem {
    fn source(
        &self,
        req: &ProofRequest,
    ) -> Result<Box<dyn PartitionSource>, cuzk_core::ProofSystemError> {
        let (marker, partitions) = marker(req);
        Ok(Box::new(FakeSource {
            shared: self.0.clone(),
            marker,
            partitions,
        }))
    }
    fn verify(
        &self,
        req: &ProofRequest,
        proof: &[u8],
    ) -> Result<bool, cuzk_core::ProofSystemError> {
        let (marker, partitions) = marker(req);
        self.0.verified.lock().unwrap().push(marker);
        self.0.entered.notify_all();
        self.0.verify_gate.pass();
        // A BadProof job's backend returns identity points: reject them.
        Ok(proof.len() == 192 * partitions && self.0.get(marker) != Script::BadProof)
    }
}

pub struct FakeBackend(pub Shared);

impl ProverBackend for FakeBackend {
    fn name(&self) -> String {
        "scripted".into()
    }
    fn host_bytes(&self, size: &cuzk_prover::WitnessSize) -> cuzk_prover::HostBytes {
        cuzk_prover::CpuBackend.host_bytes(size)
    }
    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        _srs: &SrsRef<'_>,
        r: &[Scalar],
        _s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        let w = &witnesses[0];
        let (marker, k) = witness_marker(w);
        self.0.proved.lock().unwrap().push((marker, k));
        if w.urgent {
            self.0.urgent.lock().unwrap().push(marker);
        }
        self.0.entered.notify_all();
        abc_freed(0);
        self.0.prove_gate.pass();
        self.0.wait_released(marker);
        std::thread::sleep(*self.0.prove_time.lock().unwrap());
        let _ = r;
        match self.0.get(marker) {
            Script::FailProve => Err(ProverError::Backend(format!(
                "scripted failure of {marker}"
            ))),
            Script::Panic => panic!("scripted panic of {marker}"),
            Script::BadProof => Ok((
                vec![Proof {
                    a: G1Affine::identity(),
                    b: G2Affine::identity(),
                    c: G1Affine::identity(),
                }],
                ProveStats::default(),
            )),
            _ => Ok((vec![good_proof()], ProveStats::default())),
        }
    }
}

/// The (marker, partition) a fake witness carries in its first inputs.
pub fn witness_marker(w: &PartitionWitness) -> (u8, usize) {
    (
        w.input[0].to_bytes_le()[0],
        w.input[1].to_bytes_le()[0] as usize,
    )
}

/// The proof the fake system accepts.
pub fn good_proof() -> Proof {
    Proof {
        a: G1Affine::generator(),
        b: G2Affine::generator(),
        c: G1Affine::generator(),
    }
}

/// An SRS of `points` G1 points per section (so it has a real size).
pub struct FakeLoader {
    pub points: usize,
    pub loads: Mutex<u32>,
}

/// Partition shape every fake circuit reports: domain 2^10.
/// Host bytes of one scripted partition of an SRS of `points` points:
/// (a/b/c, the rest), as the engine reserves them.
pub fn fake_partition_bytes(points: usize) -> (u64, u64) {
    let size = cuzk_core::engine::partition_size(&fake_counts(points));
    let b = cuzk_prover::CpuBackend.host_bytes(&size);
    (b.abc, b.rest)
}

/// Sizes of the scripted SRS and of one scripted partition.
pub fn fake_sizes() -> (u64, u64) {
    let srs = FakeLoader {
        points: 100,
        loads: Default::default(),
    }
    .srs()
    .bytes();
    let (abc, rest) = fake_partition_bytes(100);
    (srs, abc + rest)
}

pub fn fake_counts(points: usize) -> SectionCounts {
    SectionCounts {
        h: 1023,
        l: 1000,
        a: points,
        b_g1: points,
        b_g2: points,
        ic: 3,
    }
}

impl SrsLoader for FakeLoader {
    fn counts(&self, _: ProofType) -> Result<SectionCounts, LoadError> {
        Ok(fake_counts(self.points))
    }
    fn size(&self, _: ProofType) -> Result<u64, LoadError> {
        Ok(self.srs().bytes())
    }
    fn load(&self, _: ProofType) -> Result<SrsData, LoadError> {
        *self.loads.lock().unwrap() += 1;
        Ok(SrsData::Decoded(self.srs()))
    }
}

impl FakeLoader {
    pub fn srs(&self) -> Srs {
        let g1 = G1Affine::generator();
        let g2 = G2Affine::generator();
        Srs {
            vk: VerifyingKeyPoints {
                alpha_g1: g1,
                beta_g1: g1,
                beta_g2: g2,
                gamma_g2: g2,
                delta_g1: g1,
                delta_g2: g2,
                ic: vec![g1; 3],
            },
            h: vec![g1; self.points],
            l: vec![g1; self.points],
            a: vec![g1; self.points],
            b_g1: vec![g1; self.points],
            b_g2: vec![g2; self.points],
        }
    }
}

/// The outcome of job `job_id` (it must end within 30 s).
pub async fn done(engine: &Engine, job_id: &str) -> Arc<JobOutcome> {
    match engine
        .await_job(job_id, Some(Duration::from_secs(30)))
        .await
        .unwrap()
    {
        AwaitOutcome::Done(o) => o,
        AwaitOutcome::Timeout => panic!("job {job_id} did not finish"),
    }
}

/// Waits until `n` synthesized partitions wait for a prover.
pub async fn wait_ready(e: &Engine, n: u32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while e.status().ready_partitions < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{n} partitions never became ready"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A scripted engine with a budget of `budget` bytes.
pub fn engine_with(shared: &Shared, config: EngineConfig, budget: u64) -> Engine {
    engine_on(shared, config, MemoryBudget::new(budget))
}

/// A scripted device: proves as [`FakeBackend`] until it is made to fail,
/// then fails every call as a lost device would.
pub struct FakeDevice {
    pub shared: Shared,
    pub name: String,
    pub failing: std::sync::atomic::AtomicBool,
    /// Calls still to fail as a device out of memory does.
    pub short_of_memory: std::sync::atomic::AtomicUsize,
    /// (marker, partition) of every call, in order.
    pub calls: Mutex<Vec<(u8, usize)>>,
}

impl FakeDevice {
    pub fn new(shared: &Shared, name: &str) -> Arc<FakeDevice> {
        Arc::new(FakeDevice {
            shared: shared.clone(),
            name: name.into(),
            failing: Default::default(),
            short_of_memory: Default::default(),
            calls: Mutex::new(Vec::new()),
        })
    }
    /// The device is lost: every later call fails, and so does every call
    /// in progress (held at the prove gate) when it returns.
    pub fn fail(&self) {
        self.failing
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
    pub fn calls(&self) -> Vec<(u8, usize)> {
        self.calls.lock().unwrap().clone()
    }
}

impl ProverBackend for FakeDevice {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn host_bytes(&self, size: &cuzk_prover::WitnessSize) -> cuzk_prover::HostBytes {
        cuzk_prover::CpuBackend.host_bytes(size)
    }
    fn prove_with(
        &self,
        witnesses: &mut [PartitionWitness],
        srs: &SrsRef<'_>,
        r: &[Scalar],
        s: &[Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<Proof>, ProveStats), ProverError> {
        let w = &witnesses[0];
        let call = (
            w.input[0].to_bytes_le()[0],
            w.input[1].to_bytes_le()[0] as usize,
        );
        self.calls.lock().unwrap().push(call);
        let lost = || {
            self.failing
                .load(std::sync::atomic::Ordering::SeqCst)
                .then(|| ProverError::Device(format!("{}: scripted device failure", self.name)))
        };
        if let Some(e) = lost() {
            return Err(e);
        }
        let short = self.short_of_memory.fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |n| n.checked_sub(1),
        );
        if short.is_ok() {
            return Err(ProverError::Memory(format!(
                "{}: scripted, no room",
                self.name
            )));
        }
        let proved = FakeBackend(self.shared.clone()).prove_with(witnesses, srs, r, s, abc_freed);
        match lost() {
            Some(e) => Err(e),
            None => proved,
        }
    }
}

/// A scripted engine on `budget`.
pub fn engine_on(shared: &Shared, config: EngineConfig, budget: Arc<MemoryBudget>) -> Engine {
    let backend: Arc<dyn ProverBackend> = Arc::new(FakeBackend(shared.clone()));
    engine_on_devices(shared, config, budget, vec![backend])
}

/// A scripted engine on `budget` with one backend per device.
pub fn engine_on_devices(
    shared: &Shared,
    config: EngineConfig,
    budget: Arc<MemoryBudget>,
    backends: Vec<Arc<dyn ProverBackend>>,
) -> Engine {
    let (config, parts) = scripted_parts(shared, config, budget, backends);
    Engine::start(config, parts)
}

/// A scripted engine (one scripted device, 1 GiB budget) on the journal
/// `opened`: it journals what `Engine::submit` accepts.
pub fn journaled_engine(
    shared: &Shared,
    config: EngineConfig,
    opened: cuzk_core::journal::Opened,
) -> Engine {
    let backend: Arc<dyn ProverBackend> = Arc::new(FakeBackend(shared.clone()));
    journaled_engine_on(shared, config, opened, vec![backend])
}

/// As [`journaled_engine`], with one backend per device.
pub fn journaled_engine_on(
    shared: &Shared,
    config: EngineConfig,
    opened: cuzk_core::journal::Opened,
    backends: Vec<Arc<dyn ProverBackend>>,
) -> Engine {
    let budget = MemoryBudget::new(1 << 30);
    let (config, parts) = scripted_parts(shared, config, budget, backends);
    Engine::start_journaled(config, parts, opened)
}

fn scripted_parts(
    shared: &Shared,
    config: EngineConfig,
    budget: Arc<MemoryBudget>,
    backends: Vec<Arc<dyn ProverBackend>>,
) -> (EngineConfig, EngineParts) {
    let loader = Arc::new(FakeLoader {
        points: 100,
        loads: Mutex::new(0),
    });
    let srs = SrsManager::new(loader, budget.clone(), Duration::ZERO);
    // The fake witnesses are a few bytes; tests assert exact budget use, so
    // nothing is kept for reuse (the pool has its own tests).
    let config = EngineConfig {
        witness_pool: cuzk_core::config::Amount::Bytes(bytesize::ByteSize::b(0)),
        ..config
    };
    let parts = EngineParts {
        system: Arc::new(FakeSystem(shared.clone())),
        backends,
        srs,
        budget: budget.clone(),
        r1cs: Arc::new(cuzk_core::r1cs_manager::ConstraintSystems::new(
            None, budget,
        )),
    };
    (config, parts)
}

pub fn engine(shared: &Shared, workers: usize) -> Engine {
    engine_with(
        shared,
        EngineConfig {
            gpu_workers_per_device: workers.into(),
            // Queue order alone (the workers kept for CRITICAL work have
            // their own tests).
            critical_workers: 0,
            ..Default::default()
        },
        1 << 30,
    )
}

/// A checked-looking request of a kind; randomness[0] is the marker and
/// randomness[1] the partition count.
pub fn request_of(
    proof_type: ProofType,
    marker: u8,
    partitions: u8,
    priority: Priority,
    request_id: Option<&str>,
) -> ProofRequest {
    let mut randomness = [0u8; 32];
    randomness[0] = marker;
    randomness[1] = partitions;
    ProofRequest {
        request_id: request_id.map(str::to_string),
        priority,
        proof_type,
        input: ProofInput::WindowPost {
            randomness,
            prover_id: [0; 32],
            partition_index: 0,
            vanilla_proofs: vec![vec![1, 2, 3]],
            sectors: vec![(SectorId::from(1), [0; 32])],
        },
        vanilla_bytes: 3,
        digest: randomness,
    }
}

pub fn window() -> ProofType {
    ProofType::Window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2)
}

pub fn winning() -> ProofType {
    ProofType::Winning(RegisteredPoStProof::StackedDrgWinning2KiBV1)
}

pub fn porep() -> ProofType {
    ProofType::Seal(RegisteredSealProof::StackedDrg2KiBV1_1)
}

/// A one-partition WindowPoSt request.
pub fn request(marker: u8, priority: Priority, request_id: Option<&str>) -> ProofRequest {
    request_of(window(), marker, 1, priority, request_id)
}
