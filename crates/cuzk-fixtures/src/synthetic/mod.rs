//! Synthetic sectors: the inputs of one proof of each kind at any sector
//! size, without sealing.
//!
//! A circuit opens only a few thousand leaves of each tree, so a sector is
//! made real wherever a proof looks and cheap everywhere else: sparse trees
//! for PoRep's TreeC / TreeR, one tree per sector for PoSt's TreeR whose
//! unopened subtrees stand as distinct pseudorandom nodes, periodic data for
//! TreeD and for SnapDeals ([`tree`]). Every value is pseudorandom from the seed
//! ([`prf`]), so the witnesses see the mix of zeros, ones and full field
//! elements a real sector gives them. Each kind's vanilla proofs are checked
//! with filecoin-proofs' own vanilla verifier before they are written
//! ([`porep`], [`post`], [`snap`]).

pub mod porep;
pub mod post;
pub mod prf;
pub mod snap;
pub mod tree;

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use filecoin_proofs_api::SectorId;
use serde::{de::DeserializeOwned, Serialize};

use crate::manifest::{
    DeadlineFixture, Manifest, PoRepFixture, PoStFixture, SnapFixture, MANIFEST_VERSION,
};
use crate::{write, Progress, SectorSize};
use cuzk_core::kinds::{
    post_proof_to_wire, prover_id_from_miner, seal_proof_to_wire, update_proof_to_wire,
};
use prf::Prf;

/// Bumped when the construction changes, so kept steps and sets of an older
/// one are not reused (the version is in the step files' names and the
/// manifest).
pub(crate) const GENERATOR_VERSION: u32 = 3;

/// The miner every fixture proves for.
const MINER_ID: u64 = 1000;
/// Sector numbers: the PoRep, the SnapDeals update, the WinningPoSt sector,
/// then the WindowPoSt deadline's sectors.
const POREP_SECTOR: u64 = 1;
const SNAP_SECTOR: u64 = 2;
const WINNING_SECTOR: u64 = 3;
const FIRST_WINDOW_SECTOR: u64 = 100;

/// Makes every input of a synthetic fixture set of `size` in `dir` (no
/// parameters) and returns its manifest, written last. Each kind is a step
/// whose result is kept in `dir/.steps`, so an interrupted run resumes with
/// the kinds not yet made.
pub(crate) fn make_inputs(
    dir: &Path,
    size: SectorSize,
    seed: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Manifest> {
    let prover_id = prover_id_from_miner(MINER_ID);
    let big = size >= SectorSize::S32GiB;
    let mut steps = Steps {
        dir,
        seed,
        progress,
    };

    let porep = steps.run(
        "porep",
        "synthetic PoRep C1 output",
        if big { 10 } else { 1 },
        &mut |_| {
            let prf = Prf::new(seed, "porep");
            let seal = porep::make(
                size.seal_proof(),
                prover_id,
                SectorId::from(POREP_SECTOR),
                &prf,
            )?;
            write(dir, "porep-c1.json", &serde_json::to_vec(&seal.c1)?)?;
            Ok(PoRepFixture {
                registered_proof: seal_proof_to_wire(size.seal_proof()),
                sector_number: POREP_SECTOR,
                c1_file: "porep-c1.json".into(),
                comm_r: seal.comm_r,
                comm_d: seal.comm_d,
                ticket: seal.ticket,
                seed: seal.seed,
            })
        },
    )?;

    let winning = steps.run(
        "winning",
        "synthetic WinningPoSt vanilla proofs",
        1,
        &mut |_| {
            let prf = Prf::new(seed, "winning");
            let randomness = prf.bytes("randomness", 0, 0);
            let sectors = [SectorId::from(WINNING_SECTOR)];
            let post = post::make(
                size.winning_proof(),
                &sectors,
                prover_id,
                &randomness,
                &prf,
                &mut |_, _| {},
            )?;
            Ok(PoStFixture {
                registered_proof: post_proof_to_wire(size.winning_proof()),
                sector_numbers: vec![WINNING_SECTOR],
                comm_r: post.comm_rs[0],
                comm_rs: post.comm_rs.clone(),
                randomness,
                partition_index: 0,
                vanilla_files: save_all(dir, "winning-vanilla", &post.vanilla)?,
            })
        },
    )?;

    // One deadline of a full partition plus one sector: the WindowPoSt
    // fixture is its first partition, and the second (one sector) lets tests
    // prove a partition other than 0.
    let window_type = size.window_proof();
    let per_partition = window_type.sector_count();
    let label = format!(
        "synthetic WindowPoSt vanilla proofs ({} sectors)",
        per_partition + 1
    );
    let (window, deadline) =
        steps.run("window", &label, if big { 60 } else { 1 }, &mut |advance| {
            let prf = Prf::new(seed, "window");
            let randomness = prf.bytes("randomness", 0, 0);
            let numbers: Vec<u64> = (FIRST_WINDOW_SECTOR..).take(per_partition + 1).collect();
            let sectors: Vec<SectorId> = numbers.iter().map(|&n| SectorId::from(n)).collect();
            let post = post::make(window_type, &sectors, prover_id, &randomness, &prf, advance)?;
            let wire = post_proof_to_wire(window_type);
            let files = save_all(dir, &format!("deadline-{wire}-vanilla"), &post.vanilla)?;
            let partitions: Vec<Vec<String>> =
                files.chunks(per_partition).map(<[_]>::to_vec).collect();
            let window = PoStFixture {
                registered_proof: wire,
                sector_numbers: numbers[..per_partition].to_vec(),
                comm_r: post.comm_rs[0],
                comm_rs: post.comm_rs[..per_partition].to_vec(),
                randomness,
                partition_index: 0,
                vanilla_files: partitions[0].clone(),
            };
            let deadline = DeadlineFixture {
                registered_proof: wire,
                comm_r: post.comm_rs[0],
                comm_rs: post.comm_rs.clone(),
                randomness,
                sector_numbers: numbers,
                partitions,
            };
            Ok((window, deadline))
        })?;

    let snap = steps.run(
        "snap",
        "synthetic SnapDeals partition proofs",
        if big { 30 } else { 1 },
        &mut |advance| {
            let update = snap::make(size.update_proof(), &Prf::new(seed, "snap"), advance)?;
            Ok(SnapFixture {
                registered_proof: update_proof_to_wire(size.update_proof()),
                sector_number: SNAP_SECTOR,
                comm_r_old: update.comm_r_old,
                comm_r_new: update.comm_r_new,
                comm_d_new: update.comm_d_new,
                vanilla_files: save_all(dir, "snap-vanilla", &update.vanilla)?,
            })
        },
    )?;

    let manifest = Manifest {
        version: MANIFEST_VERSION,
        sector_size: size.bytes(),
        miner_id: MINER_ID,
        synthetic: Some(seed),
        generator: GENERATOR_VERSION,
        porep,
        winning_post: winning,
        window_post: window,
        window_deadlines: vec![deadline],
        snap,
    };
    write(dir, "manifest.json", &serde_json::to_vec_pretty(&manifest)?)?;
    Ok(manifest)
}

/// The steps of one set: each one's result is kept as JSON in
/// `dir/.steps/v<version>-<seed>-<key>.json` and reused while the files it
/// names exist.
struct Steps<'a> {
    dir: &'a Path,
    seed: u64,
    progress: &'a mut dyn FnMut(Progress),
}

/// A step's result: fixture entries naming the files the step wrote.
trait StepOutput: Serialize + DeserializeOwned {
    fn files(&self) -> Vec<&str>;
}

impl StepOutput for PoRepFixture {
    fn files(&self) -> Vec<&str> {
        vec![&self.c1_file]
    }
}

impl StepOutput for PoStFixture {
    fn files(&self) -> Vec<&str> {
        self.vanilla_files.iter().map(String::as_str).collect()
    }
}

impl StepOutput for SnapFixture {
    fn files(&self) -> Vec<&str> {
        self.vanilla_files.iter().map(String::as_str).collect()
    }
}

impl StepOutput for (PoStFixture, DeadlineFixture) {
    fn files(&self) -> Vec<&str> {
        let mut files = self.0.files();
        files.extend(self.1.partitions.iter().flatten().map(String::as_str));
        files
    }
}

/// A step's work: given a callback for `done` of `total` units.
type Step<'a, T> = dyn FnMut(&mut dyn FnMut(u64, u64)) -> Result<T> + 'a;

impl Steps<'_> {
    /// Reuses step `key`'s kept result, or runs `make` (which may report
    /// `done` of `total` units through its argument) and keeps its result.
    fn run<T: StepOutput>(
        &mut self,
        key: &str,
        name: &str,
        estimate_secs: u64,
        make: &mut Step<'_, T>,
    ) -> Result<T> {
        let steps = self.dir.join(".steps");
        let file = format!("v{GENERATOR_VERSION}-{}-{key}.json", self.seed);
        let kept = std::fs::read(steps.join(&file))
            .ok()
            .and_then(|b| serde_json::from_slice::<T>(&b).ok())
            .filter(|t| t.files().iter().all(|f| self.dir.join(f).is_file()));
        if let Some(t) = kept {
            (self.progress)(Progress::Reused { step: name.into() });
            return Ok(t);
        }
        (self.progress)(Progress::Started {
            step: name.into(),
            estimate_secs,
        });
        let t0 = Instant::now();
        let progress = &mut *self.progress;
        let out = make(&mut |done, total| {
            progress(Progress::Advanced {
                step: name.into(),
                done,
                total,
            })
        })?;
        std::fs::create_dir_all(&steps)?;
        write(&steps, &file, &serde_json::to_vec(&out)?)?;
        (self.progress)(Progress::Done {
            step: name.into(),
            secs: t0.elapsed().as_secs_f64(),
        });
        Ok(out)
    }
}

/// Writes `prefix-<i>.bin` for every blob; returns the names.
pub(crate) fn save_all(dir: &Path, prefix: &str, blobs: &[Vec<u8>]) -> Result<Vec<String>> {
    blobs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let name = format!("{prefix}-{i}.bin");
            write(dir, &name, b)?;
            Ok(name)
        })
        .collect()
}
