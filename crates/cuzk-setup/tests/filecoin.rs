//! The 2 KiB Filecoin circuits: file names as filecoin-proofs names them,
//! parameters equal to bellperson's (the small PoSt circuits only; the
//! big ones are in the ignored fixture test and the `compare` example), and
//! files readable by bellperson and cuzk-prover.

use std::path::Path;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk_prover::srs::{write_params, write_vk, ParamsFile, SubgroupCheck};
use cuzk_setup::{
    bellperson_params, generate_filecoin, generate_in_memory, param_file_names, FilecoinCircuit,
    SetupError,
};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

const WINDOW: FilecoinCircuit =
    FilecoinCircuit::Window(RegisteredPoStProof::StackedDrgWindow2KiBV1_2);
const WINNING: FilecoinCircuit =
    FilecoinCircuit::Winning(RegisteredPoStProof::StackedDrgWinning2KiBV1);
const SNAP: FilecoinCircuit = FilecoinCircuit::Update(RegisteredUpdateProof::StackedDrg2KiBV1);
const POREP: FilecoinCircuit = FilecoinCircuit::Seal(RegisteredSealProof::StackedDrg2KiBV1_1);

fn file_name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(String::from)
        .unwrap_or_default()
}

#[test]
fn file_names_match_filecoin_proofs() {
    let dir = Path::new("/nonexistent");
    for (c, theirs) in [
        (
            WINDOW,
            RegisteredPoStProof::StackedDrgWindow2KiBV1_2.cache_params_path(),
        ),
        (
            WINNING,
            RegisteredPoStProof::StackedDrgWinning2KiBV1.cache_params_path(),
        ),
        (
            POREP,
            RegisteredSealProof::StackedDrg2KiBV1_1.cache_params_path(),
        ),
    ] {
        let (id, params, vk) = param_file_names(c, dir).expect("names");
        let theirs = theirs.expect("filecoin-proofs' path");
        assert_eq!(file_name(&params), file_name(&theirs), "{c}");
        assert_eq!(file_name(&vk), format!("v28-{id}.vk"));
        assert_eq!(params.parent(), Some(dir));
    }
    // SnapDeals: the update circuit's identifier, not the PoRep one that
    // RegisteredUpdateProof::cache_params_path() names.
    let (id, _, _) = param_file_names(SNAP, dir).expect("names");
    assert!(id.starts_with("empty-sector-update-"), "{id}");
    let porep = RegisteredUpdateProof::StackedDrg2KiBV1
        .cache_params_path()
        .expect("path");
    assert_ne!(file_name(&porep), format!("v28-{id}.params"));
}

#[test]
fn every_registered_sector_size_has_four_circuits() {
    assert_eq!(
        FilecoinCircuit::all_for_sector_size(2048).expect("2 KiB"),
        FilecoinCircuit::all_2kib()
    );
    for size in [8u64 << 20, 512 << 20, 32 << 30, 64 << 30] {
        let circuits = FilecoinCircuit::all_for_sector_size(size).expect("registered size");
        let mut ids = Vec::new();
        for c in circuits {
            assert_eq!(c.sector_size(), size, "{c}");
            ids.push(c.identifier().expect("identifier"));
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 4, "{size}: four distinct parameter files");
    }
    for bad in [0u64, 4096, 1 << 30] {
        assert!(matches!(
            FilecoinCircuit::all_for_sector_size(bad),
            Err(SetupError::UnsupportedSectorSize(b)) if b == bad
        ));
    }
}

#[test]
fn post_kind_is_checked() {
    let err = FilecoinCircuit::Winning(RegisteredPoStProof::StackedDrgWindow2KiBV1_2)
        .identifier()
        .expect_err("a window proof is no winning circuit");
    assert!(matches!(err, SetupError::WrongProofKind(_)), "{err}");
}

fn bellperson_bytes(params: &Parameters<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    params.write(&mut v).expect("write to Vec");
    v
}

fn check_post(circuit: FilecoinCircuit, seed: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = generate_filecoin(circuit, dir.path(), seed, false).expect("generate");
    let stats = files.stats.clone().expect("generated, not reused");
    let ours = std::fs::read(&files.params).expect("read params");

    // Equal to bellperson's generator with the same RNG, byte for byte.
    let (theirs, timing) = bellperson_params(circuit, seed).expect("bellperson");
    let file = ParamsFile::open(&files.params).expect("ParamsFile");
    let c = file.counts();
    assert_eq!(
        (c.ic, c.h, c.l, c.a, c.b_g1, c.b_g2),
        (
            theirs.vk.ic.len(),
            theirs.h.len(),
            theirs.l.len(),
            theirs.a.len(),
            theirs.b_g1.len(),
            theirs.b_g2.len()
        ),
        "{circuit}: section counts"
    );
    assert!(ours == bellperson_bytes(&theirs), "{circuit}: bytes differ");
    eprintln!(
        "{circuit}: ours {:.1?} (CPU {:.1?}), bellperson {:.1?} (CPU {:.1?})",
        stats.total, stats.cpu, timing.wall, timing.cpu
    );

    // Readable by bellperson (checked) and by cuzk-prover (fully checked);
    // the .vk is the verifying key of the .params.
    Parameters::<Bls12>::read(std::fs::File::open(&files.params).expect("open"), true)
        .expect("bellperson reads our file");
    file.decode(SubgroupCheck::Full).expect("decode");
    assert_eq!(
        std::fs::read(&files.vk).expect("read vk"),
        file.vk_bytes(),
        "{circuit}: .vk"
    );
    assert!(std::fs::read_dir(dir.path())
        .expect("list")
        .all(|e| !file_name(&e.expect("entry").path()).contains(".tmp")));
}

#[test]
fn window_post_equals_bellperson() {
    check_post(WINDOW, 11);
}

#[test]
fn winning_post_equals_bellperson() {
    check_post(WINNING, 12);
}

#[test]
fn existing_files_are_kept_unless_incomplete_or_forced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = generate_filecoin(WINDOW, dir.path(), 1, false).expect("generate");
    assert!(first.stats.is_some());
    let bytes = std::fs::read(&first.params).expect("read");

    // Complete files are kept, whatever the seed.
    let again = generate_filecoin(WINDOW, dir.path(), 2, false).expect("keep");
    assert!(again.stats.is_none());
    assert_eq!(again.params, first.params);

    // A .vk that does not match the .params: regenerated.
    std::fs::write(&first.vk, b"garbage").expect("corrupt vk");
    assert!(generate_filecoin(WINDOW, dir.path(), 1, false)
        .expect("regenerate")
        .stats
        .is_some());
    assert_eq!(std::fs::read(&first.params).expect("read"), bytes);

    // A truncated .params: regenerated.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&first.params)
        .expect("open");
    f.set_len(bytes.len() as u64 - 96).expect("truncate");
    drop(f);
    assert!(generate_filecoin(WINDOW, dir.path(), 1, false)
        .expect("regenerate")
        .stats
        .is_some());
    assert_eq!(std::fs::read(&first.params).expect("read"), bytes);

    // Forced with another seed: other parameters.
    assert!(generate_filecoin(WINDOW, dir.path(), 2, true)
        .expect("force")
        .stats
        .is_some());
    assert_ne!(std::fs::read(&first.params).expect("read"), bytes);
}

/// The streaming generator (what `generate_filecoin` runs) writes the bytes
/// the in-memory generator's `Srs` serializes to, for all four 2 KiB
/// circuits (about a minute on 2 cores).
#[test]
fn streamed_files_equal_the_in_memory_generator() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (circuit, seed) in [(WINDOW, 31), (WINNING, 32), (SNAP, 33), (POREP, 34)] {
        let files = generate_filecoin(circuit, dir.path(), seed, false).expect("stream");
        let streamed = files.stats.expect("generated");
        let (srs, in_memory) = generate_in_memory(circuit, seed).expect("in memory");
        let (params, vk) = (dir.path().join("ref.params"), dir.path().join("ref.vk"));
        write_params(&srs, &params).expect("write params");
        write_vk(&srs.vk, &vk).expect("write vk");
        assert!(
            std::fs::read(&files.params).expect("streamed")
                == std::fs::read(&params).expect("reference"),
            "{circuit}: .params differ"
        );
        assert!(
            std::fs::read(&files.vk).expect("streamed") == std::fs::read(&vk).expect("reference"),
            "{circuit}: .vk differ"
        );
        assert_eq!(
            (streamed.constraints, streamed.inputs, streamed.aux),
            (in_memory.constraints, in_memory.inputs, in_memory.aux),
            "{circuit}"
        );
        assert_eq!(
            streamed.matrix_entries, in_memory.matrix_entries,
            "{circuit}"
        );
        let shape = circuit.shape().expect("shape");
        assert_eq!(
            (shape.constraints, shape.inputs, shape.aux),
            (streamed.constraints, streamed.inputs, streamed.aux),
            "{circuit}: counting pass"
        );
        assert_eq!(shape.domain_size(), Some(1 << streamed.domain_log));
        let len = std::fs::metadata(&files.params).expect("stat").len();
        assert_eq!(streamed.params_bytes, len, "{circuit}");
        // The bound is exact but for the a and b points left out.
        let c = ParamsFile::open(&files.params).expect("open").counts();
        let nv = shape.inputs + shape.aux;
        let missing = (nv - c.a) * 96 + (nv - c.b_g1) * 288;
        assert_eq!(shape.params_bytes_max() - len, missing as u64, "{circuit}");
        assert_eq!(
            (streamed.g1_muls, streamed.g2_muls),
            (in_memory.g1_muls, in_memory.g2_muls),
            "{circuit}"
        );
        eprintln!(
            "{circuit}: streamed {:.1?} (CPU {:.1?}), in memory {:.1?} (CPU {:.1?})",
            streamed.total, streamed.cpu, in_memory.total, in_memory.cpu
        );
    }
}

/// The parameters cuzk-fixtures made with filecoin-proofs' generator
/// (`~/.cache/cuzk/fixtures-2KiB/params`, seeds `0xc0_2c00_0000 + n`) are
/// reproduced byte for byte, PoRep and SnapDeals included (about two
/// minutes on 2 cores). Skipped when the fixtures are absent.
#[test]
#[ignore = "slow: generates all four 2 KiB circuits, needs the fixture files"]
fn reproduces_fixture_files() {
    let fixtures = cuzk_test_support::fixture_params_dir();
    if !fixtures.is_dir() {
        eprintln!("{} absent: skipped", fixtures.display());
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for (circuit, n) in [(WINDOW, 4), (WINNING, 3), (SNAP, 2), (POREP, 1)] {
        let files =
            generate_filecoin(circuit, dir.path(), 0xc0_2c00_0000 + n, true).expect("generate");
        for ours in [&files.params, &files.vk] {
            let theirs = fixtures.join(file_name(ours));
            if !theirs.is_file() {
                eprintln!("{} absent: skipped", theirs.display());
                continue;
            }
            assert!(
                std::fs::read(ours).expect("ours") == std::fs::read(&theirs).expect("theirs"),
                "{circuit}: {} differs",
                theirs.display()
            );
        }
        std::fs::remove_file(&files.params).expect("clean up");
    }
}
