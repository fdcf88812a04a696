//! cuzk-fixtures: everything needed to prove locally, made locally.
//!
//! [`ensure`] fills a directory (default `~/.cache/cuzk/fixtures-2KiB`) with
//! insecure Groth16 parameters for the four 2 KiB circuits (made by
//! cuzk-setup's fast generator), two sealed
//! sectors, and the inputs of one proof of each kind: the PoRep C1 output,
//! WinningPoSt and WindowPoSt vanilla proofs, and SnapDeals partition proofs,
//! plus every public input needed to verify the results independently. Steps
//! already done are reused; `manifest.json` is written last and marks a
//! complete set. A lock file serialises concurrent runs (tests, CI jobs).

mod params;
mod sector;

pub use params::seed as params_seed;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use filecoin_proofs_api::{
    post, seal, update, PublicReplicaInfo, RegisteredPoStProof, RegisteredSealProof,
    RegisteredUpdateProof, SectorId,
};
use fs2::FileExt;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use tracing::info;

use cuzk_core::kinds::{
    post_proof_to_wire, prover_id_from_miner, seal_proof_to_wire, update_proof_to_wire,
};
use cuzk_core::request::kind_to_wire;
use cuzk_core::{ProofKind, RawRequest};

/// Environment variable overriding the fixture directory.
pub const FIXTURES_DIR_ENV: &str = "CUZK_FIXTURES_DIR";

/// Manifest format version; bump when the layout changes.
const MANIFEST_VERSION: u32 = 3;

/// The only sector size fixtures are made for (so far).
pub const SECTOR_SIZE: u64 = sector::SECTOR_SIZE;

const SEAL_PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
const WINNING_PROOF: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWinning2KiBV1;
const WINDOW_PROOF: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
/// The older WindowPoSt version; same circuit and parameters as V1_2.
const WINDOW_PROOF_V1: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1;
const UPDATE_PROOF: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;

/// A step of fixture generation, for progress displays.
#[derive(Clone, Debug)]
pub enum Progress {
    /// A step found done and reused.
    Reused {
        step: String,
    },
    /// A step begins; `estimate_secs` is its rough cost on 2 cores.
    Started {
        step: String,
        estimate_secs: u64,
    },
    Done {
        step: String,
        secs: f64,
    },
}

/// The fixture directory used when none is given: `$CUZK_FIXTURES_DIR`, else
/// `$XDG_CACHE_HOME/cuzk/fixtures-2KiB`, else `~/.cache/cuzk/fixtures-2KiB`.
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(FIXTURES_DIR_ENV) {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/tmp"));
    cache.join("cuzk").join("fixtures-2KiB")
}

/// Public inputs and file names of one complete fixture set.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub sector_size: u64,
    pub miner_id: u64,
    pub porep: PoRepFixture,
    pub winning_post: PoStFixture,
    pub window_post: PoStFixture,
    /// WindowPoSt deadlines of several partitions, to prove partitions other
    /// than 0 and check them with `verify_window_post` as a whole: one for
    /// the current proof version (V1_2, whose challenges ignore the
    /// partition index) and one for V1 (whose challenges depend on it).
    pub window_deadlines: Vec<DeadlineFixture>,
    pub snap: SnapFixture,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeadlineFixture {
    pub registered_proof: u64,
    #[serde(with = "hex32")]
    pub comm_r: [u8; 32],
    #[serde(with = "hex32")]
    pub randomness: [u8; 32],
    /// Every sector of the deadline, in challenge order.
    pub sector_numbers: Vec<u64>,
    /// Vanilla proof files of each partition.
    pub partitions: Vec<Vec<String>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoRepFixture {
    pub registered_proof: u64,
    pub sector_number: u64,
    pub c1_file: String,
    #[serde(with = "hex32")]
    pub comm_r: [u8; 32],
    #[serde(with = "hex32")]
    pub comm_d: [u8; 32],
    #[serde(with = "hex32")]
    pub ticket: [u8; 32],
    #[serde(with = "hex32")]
    pub seed: [u8; 32],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoStFixture {
    pub registered_proof: u64,
    pub sector_number: u64,
    #[serde(with = "hex32")]
    pub comm_r: [u8; 32],
    #[serde(with = "hex32")]
    pub randomness: [u8; 32],
    pub partition_index: u32,
    pub vanilla_files: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapFixture {
    pub registered_proof: u64,
    pub sector_number: u64,
    #[serde(with = "hex32")]
    pub comm_r_old: [u8; 32],
    #[serde(with = "hex32")]
    pub comm_r_new: [u8; 32],
    #[serde(with = "hex32")]
    pub comm_d_new: [u8; 32],
    pub vanilla_files: Vec<String>,
}

mod hex32 {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let s = String::deserialize(d)?;
        let v = hex::decode(&s).map_err(D::Error::custom)?;
        v.try_into()
            .map_err(|_| D::Error::custom("expected 32 bytes of hex"))
    }
}

/// A complete fixture set on disk.
#[derive(Clone, Debug)]
pub struct Fixtures {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

/// The parameter cache directory inside a fixture directory.
pub fn params_dir(dir: &Path) -> PathBuf {
    dir.join("params")
}

/// Serialises fixture generation within this process; the lock file does it
/// across processes.
static IN_PROCESS: Mutex<()> = Mutex::new(());

/// Makes (or reuses) a complete fixture set in `dir`.
///
/// Points this process' Groth16 parameter cache at `dir/params`: call it
/// before any engine starts in the same process.
pub fn ensure(dir: &Path, progress: &mut dyn FnMut(Progress)) -> Result<Fixtures> {
    let _guard = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock = File::create(dir.join(".lock"))?;
    lock.lock_exclusive()
        .context("locking the fixture directory")?;

    let params = params_dir(dir);
    fs::create_dir_all(&params)?;
    cuzk_core::params::init_parameter_cache(&params)?;
    set_parent_cache(dir)?;

    params::ensure_params(&params, progress)?;
    let fixtures = match load(dir) {
        Ok(f) => {
            progress(Progress::Reused {
                step: "sectors and vanilla proofs".into(),
            });
            f
        }
        Err(_) => {
            let step = "sectors and vanilla proofs".to_string();
            progress(Progress::Started {
                step: step.clone(),
                estimate_secs: 2,
            });
            let t = Instant::now();
            let f = make_inputs(dir)?;
            progress(Progress::Done {
                step,
                secs: t.elapsed().as_secs_f64(),
            });
            f
        }
    };
    FileExt::unlock(&lock)?;
    Ok(fixtures)
}

/// filecoin-proofs keeps the SDR parent cache in one process-wide place;
/// the fixtures keep theirs with them (unless the caller chose one).
fn set_parent_cache(dir: &Path) -> Result<()> {
    const ENV: &str = "FIL_PROOFS_PARENT_CACHE";
    if std::env::var_os(ENV).is_none() {
        let parents = dir.join("parents");
        fs::create_dir_all(&parents)?;
        std::env::set_var(ENV, parents);
    }
    Ok(())
}

/// Loads a complete fixture set (no generation).
pub fn load(dir: &Path) -> Result<Fixtures> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path).with_context(|| {
        format!(
            "no fixtures at {} (run `cuzk-bench gen-fixtures`)",
            dir.display()
        )
    })?;
    let manifest: Manifest =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if manifest.version != MANIFEST_VERSION {
        bail!(
            "{} is version {}, this build reads version {MANIFEST_VERSION}",
            path.display(),
            manifest.version
        );
    }
    let f = Fixtures {
        dir: dir.to_path_buf(),
        manifest,
    };
    for file in f.all_files() {
        if !dir.join(&file).is_file() {
            bail!("fixture file {} is missing", dir.join(file).display());
        }
    }
    Ok(f)
}

fn make_inputs(dir: &Path) -> Result<Fixtures> {
    let mut rng = ChaCha20Rng::seed_from_u64(0x2c1f_0001);
    let miner_id = 1000;
    let prover_id = prover_id_from_miner(miner_id);
    let work = dir.join("work");

    info!("sealing a 2 KiB sector with random data");
    let data = sector::random_data(&mut rng);
    let sealed = sector::seal_sector(
        SEAL_PROOF,
        &work.join("sector-1"),
        prover_id,
        SectorId::from(1),
        &data,
        &mut rng,
    )?;
    let seed = sector::random_fr_bytes(&mut rng);
    let c1 = sector::commit_phase1(SEAL_PROOF, &sealed, prover_id, seed)?;
    write(dir, "porep-c1.json", &serde_json::to_vec(&c1)?)?;

    let winning_randomness = sector::random_fr_bytes(&mut rng);
    let winning = sector::post_vanilla(WINNING_PROOF, &sealed, prover_id, &winning_randomness)?;
    let window_randomness = sector::random_fr_bytes(&mut rng);
    let window = sector::post_vanilla(WINDOW_PROOF, &sealed, prover_id, &window_randomness)?;

    let deadline_sectors: Vec<SectorId> = (1..=3).map(SectorId::from).collect();
    let mut deadlines = Vec::new();
    for post_type in [WINDOW_PROOF, WINDOW_PROOF_V1] {
        let randomness = sector::random_fr_bytes(&mut rng);
        let partitions = sector::deadline_vanilla(
            post_type,
            &sealed,
            &deadline_sectors,
            prover_id,
            &randomness,
        )?;
        deadlines.push((post_type, randomness, partitions));
    }

    info!("sealing a 2 KiB CC sector and updating it with SnapDeals");
    let cc = sector::seal_sector(
        SEAL_PROOF,
        &work.join("sector-2"),
        prover_id,
        SectorId::from(2),
        &sector::zero_data(),
        &mut rng,
    )?;
    let new_data = sector::random_data(&mut rng);
    let snap = sector::snap_update(
        UPDATE_PROOF,
        SEAL_PROOF,
        &cc,
        &work.join("sector-2-update"),
        &new_data,
    )?;

    let save_all = |prefix: &str, blobs: &[Vec<u8>]| -> Result<Vec<String>> {
        blobs
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let name = format!("{prefix}-{i}.bin");
                write(dir, &name, b)?;
                Ok(name)
            })
            .collect()
    };
    let manifest = Manifest {
        version: MANIFEST_VERSION,
        sector_size: SECTOR_SIZE,
        miner_id,
        porep: PoRepFixture {
            registered_proof: seal_proof_to_wire(SEAL_PROOF),
            sector_number: 1,
            c1_file: "porep-c1.json".into(),
            comm_r: sealed.comm_r,
            comm_d: sealed.comm_d,
            ticket: sealed.ticket,
            seed,
        },
        winning_post: PoStFixture {
            registered_proof: post_proof_to_wire(WINNING_PROOF),
            sector_number: 1,
            comm_r: sealed.comm_r,
            randomness: winning_randomness,
            partition_index: 0,
            vanilla_files: save_all("winning-vanilla", &winning)?,
        },
        window_post: PoStFixture {
            registered_proof: post_proof_to_wire(WINDOW_PROOF),
            sector_number: 1,
            comm_r: sealed.comm_r,
            randomness: window_randomness,
            partition_index: 0,
            vanilla_files: save_all("window-vanilla", &window)?,
        },
        window_deadlines: deadlines
            .iter()
            .map(|(post_type, randomness, partitions)| {
                let wire = post_proof_to_wire(*post_type);
                Ok(DeadlineFixture {
                    registered_proof: wire,
                    comm_r: sealed.comm_r,
                    randomness: *randomness,
                    sector_numbers: deadline_sectors.iter().map(|s| u64::from(*s)).collect(),
                    partitions: partitions
                        .iter()
                        .enumerate()
                        .map(|(k, p)| save_all(&format!("deadline-{wire}-p{k}-vanilla"), p))
                        .collect::<Result<_>>()?,
                })
            })
            .collect::<Result<_>>()?,
        snap: SnapFixture {
            registered_proof: update_proof_to_wire(UPDATE_PROOF),
            sector_number: 2,
            comm_r_old: cc.comm_r,
            comm_r_new: snap.comm_r_new,
            comm_d_new: snap.comm_d_new,
            vanilla_files: save_all("snap-vanilla", &snap.vanilla)?,
        },
    };
    write(dir, "manifest.json", &serde_json::to_vec_pretty(&manifest)?)?;
    // The sealed sectors are only needed to make the vanilla proofs.
    fs::remove_dir_all(&work).ok();
    load(dir)
}

/// Writes a file atomically (temporary name, then rename).
fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, dir.join(name))?;
    Ok(())
}

impl Fixtures {
    /// The parameter cache directory of this set.
    pub fn params_dir(&self) -> PathBuf {
        params_dir(&self.dir)
    }

    fn all_files(&self) -> Vec<String> {
        let m = &self.manifest;
        let mut files = vec![m.porep.c1_file.clone()];
        files.extend(m.winning_post.vanilla_files.iter().cloned());
        files.extend(m.window_post.vanilla_files.iter().cloned());
        files.extend(m.snap.vanilla_files.iter().cloned());
        for d in &m.window_deadlines {
            files.extend(d.partitions.iter().flatten().cloned());
        }
        files
    }

    fn read_all(&self, files: &[String]) -> Result<Vec<Vec<u8>>> {
        files
            .iter()
            .map(|f| fs::read(self.dir.join(f)).with_context(|| format!("reading fixture {f}")))
            .collect()
    }

    /// A complete, valid request for one proof of `kind` (no request_id,
    /// default priority).
    pub fn request(&self, kind: ProofKind) -> Result<RawRequest> {
        let m = &self.manifest;
        let base = RawRequest {
            proof_kind: kind_to_wire(kind),
            sector_size: m.sector_size,
            miner_id: m.miner_id,
            ..Default::default()
        };
        Ok(match kind {
            ProofKind::PoRep => RawRequest {
                registered_proof: m.porep.registered_proof,
                sector_number: m.porep.sector_number,
                vanilla_proof: fs::read(self.dir.join(&m.porep.c1_file))?,
                ..base
            },
            ProofKind::WinningPost | ProofKind::WindowPost => {
                let p = self.post(kind);
                RawRequest {
                    registered_proof: p.registered_proof,
                    sector_number: p.sector_number,
                    randomness: p.randomness.to_vec(),
                    partition_index: p.partition_index,
                    vanilla_proofs: self.read_all(&p.vanilla_files)?,
                    ..base
                }
            }
            ProofKind::SnapDeals => RawRequest {
                registered_proof: m.snap.registered_proof,
                sector_number: m.snap.sector_number,
                comm_r_old: m.snap.comm_r_old.to_vec(),
                comm_r_new: m.snap.comm_r_new.to_vec(),
                comm_d_new: m.snap.comm_d_new.to_vec(),
                vanilla_proofs: self.read_all(&m.snap.vanilla_files)?,
                ..base
            },
        })
    }

    /// A WindowPoSt request for partition `k` of deadline fixture `d`.
    pub fn deadline_request(&self, d: usize, k: usize) -> Result<RawRequest> {
        let dl = self.manifest.window_deadlines.get(d).with_context(|| {
            format!(
                "there are {} deadline fixtures",
                self.manifest.window_deadlines.len()
            )
        })?;
        let files = dl
            .partitions
            .get(k)
            .with_context(|| format!("the deadline has {} partitions", dl.partitions.len()))?;
        Ok(RawRequest {
            proof_kind: kind_to_wire(ProofKind::WindowPost),
            sector_size: self.manifest.sector_size,
            miner_id: self.manifest.miner_id,
            registered_proof: dl.registered_proof,
            randomness: dl.randomness.to_vec(),
            partition_index: k as u32,
            vanilla_proofs: self.read_all(files)?,
            ..Default::default()
        })
    }

    /// Verifies the partition proofs of deadline fixture `d`, in partition
    /// order, with filecoin-proofs-api's `verify_window_post`.
    pub fn verify_deadline(&self, d: usize, partition_proofs: &[Vec<u8>]) -> Result<bool> {
        let dl = self
            .manifest
            .window_deadlines
            .get(d)
            .context("no such deadline fixture")?;
        let post_type = cuzk_core::kinds::post_proof_from_wire(dl.registered_proof)
            .context("bad registered proof in the manifest")?;
        let replicas = dl
            .sector_numbers
            .iter()
            .map(|n| {
                (
                    SectorId::from(*n),
                    PublicReplicaInfo::new(post_type, dl.comm_r),
                )
            })
            .collect();
        let proof: Vec<u8> = partition_proofs.concat();
        post::verify_window_post(
            &dl.randomness,
            &[(post_type, &proof)],
            &replicas,
            prover_id_from_miner(self.manifest.miner_id),
        )
    }

    fn post(&self, kind: ProofKind) -> &PoStFixture {
        if kind == ProofKind::WinningPost {
            &self.manifest.winning_post
        } else {
            &self.manifest.window_post
        }
    }

    /// Verifies a proof of `kind` with filecoin-proofs-api's verifier against
    /// the public inputs recorded when the sectors were sealed, independently
    /// of the daemon's own checks.
    pub fn verify(&self, kind: ProofKind, proof: &[u8]) -> Result<bool> {
        let m = &self.manifest;
        let prover_id = prover_id_from_miner(m.miner_id);
        match kind {
            ProofKind::PoRep => seal::verify_seal(
                SEAL_PROOF,
                m.porep.comm_r,
                m.porep.comm_d,
                prover_id,
                SectorId::from(m.porep.sector_number),
                m.porep.ticket,
                m.porep.seed,
                proof,
            ),
            ProofKind::WinningPost => {
                let p = &m.winning_post;
                let replicas = [(
                    SectorId::from(p.sector_number),
                    PublicReplicaInfo::new(WINNING_PROOF, p.comm_r),
                )]
                .into_iter()
                .collect();
                post::verify_winning_post(&p.randomness, proof, &replicas, prover_id)
            }
            ProofKind::WindowPost => {
                let p = &m.window_post;
                let replicas = [(
                    SectorId::from(p.sector_number),
                    PublicReplicaInfo::new(WINDOW_PROOF, p.comm_r),
                )]
                .into_iter()
                .collect();
                post::verify_window_post(
                    &p.randomness,
                    &[(WINDOW_PROOF, proof)],
                    &replicas,
                    prover_id,
                )
            }
            ProofKind::SnapDeals => update::verify_empty_sector_update_proof(
                UPDATE_PROOF,
                proof,
                m.snap.comm_r_old,
                m.snap.comm_r_new,
                m.snap.comm_d_new,
            ),
        }
    }
}
