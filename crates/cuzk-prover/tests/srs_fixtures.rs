//! `srs` against the real (insecure, locally generated) fixture parameters:
//! `$CUZK_FIXTURES_DIR/params`, else `~/.cache/cuzk/fixtures-2KiB/params`
//! (made by `cuzk-bench gen-fixtures`). Missing fixtures fail the tests.
//!
//! `cargo test --release --test srs_fixtures -- --ignored --nocapture
//! load_times` prints load times of every parameter file.

use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk_prover::srs::{read_vk, write_warm, ParamsFile, Srs, SrsError, SubgroupCheck, WarmSrs};

/// `unwrap` that panics with the error's message (path, section, index).
trait OkOrPanic<T> {
    fn ok_or_panic(self) -> T;
}

impl<T> OkOrPanic<T> for Result<T, SrsError> {
    #[track_caller]
    fn ok_or_panic(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

fn params_dir() -> PathBuf {
    let dir = cuzk_test_support::fixture_params_dir();
    assert!(
        dir.is_dir(),
        "fixture parameters not found in {}: run `cuzk-bench gen-fixtures` \
         or set CUZK_FIXTURES_DIR",
        dir.display()
    );
    dir
}

/// Every `.params` file of the fixtures whose name contains `part`, sorted.
fn params_files(part: &str) -> Vec<PathBuf> {
    let dir = params_dir();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".params") && name.contains(part)
        })
        .collect();
    files.sort();
    files
}

/// The WindowPoSt and WinningPoSt parameters (the two small ones).
fn post_params() -> Vec<PathBuf> {
    let files = params_files("proof-of-spacetime-fallback");
    assert_eq!(
        files.len(),
        2,
        "expected the WindowPoSt and WinningPoSt parameters in {}",
        params_dir().display()
    );
    files
}

fn bellperson_read(path: &Path, checked: bool) -> Parameters<Bls12> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Parameters::read(BufReader::with_capacity(1 << 20, file), checked)
        .unwrap_or_else(|e| panic!("bellperson reading {}: {e}", path.display()))
}

fn assert_same(ours: &Srs, theirs: &Parameters<Bls12>) {
    let vk = &theirs.vk;
    assert_eq!(ours.vk.alpha_g1, vk.alpha_g1);
    assert_eq!(ours.vk.beta_g1, vk.beta_g1);
    assert_eq!(ours.vk.beta_g2, vk.beta_g2);
    assert_eq!(ours.vk.gamma_g2, vk.gamma_g2);
    assert_eq!(ours.vk.delta_g1, vk.delta_g1);
    assert_eq!(ours.vk.delta_g2, vk.delta_g2);
    assert!(ours.vk.ic == vk.ic, "ic differs");
    assert!(ours.h == *theirs.h, "h differs");
    assert!(ours.l == *theirs.l, "l differs");
    assert!(ours.a == *theirs.a, "a differs");
    assert!(ours.b_g1 == *theirs.b_g1, "b_g1 differs");
    assert!(ours.b_g2 == *theirs.b_g2, "b_g2 differs");
}

fn vk_path(params: &Path) -> PathBuf {
    params.with_extension("vk")
}

#[test]
fn every_params_file_indexes_and_matches_its_vk_file() {
    let files = params_files("");
    assert_eq!(
        files.len(),
        4,
        "expected 4 parameter files in {}",
        params_dir().display()
    );
    for path in files {
        let file = ParamsFile::open(&path).ok_or_panic();
        let c = file.counts();
        assert!(
            c.h > 0 && c.l > 0 && c.a > 0 && c.b_g1 > 0 && c.b_g2 > 0 && c.ic > 0,
            "{c:?}"
        );
        let vk_file = fs::read(vk_path(&path)).expect("the matching .vk file");
        assert_eq!(file.vk_bytes(), &vk_file[..], "{}", path.display());
        let vk = read_vk(&vk_path(&path)).ok_or_panic();
        assert_eq!(file.decode_vk().ok_or_panic(), vk);
    }
}

#[test]
fn post_params_decode_like_bellperson() {
    for path in post_params() {
        let file = ParamsFile::open(&path).ok_or_panic();
        let checked = file.decode(SubgroupCheck::Full).ok_or_panic();
        assert_same(&checked, &bellperson_read(&path, true));
        let unchecked = file.decode(SubgroupCheck::None).ok_or_panic();
        assert!(
            unchecked == checked,
            "{}: checked and unchecked decodes differ",
            path.display()
        );
    }
}

#[test]
fn post_params_warm_round_trip() {
    let dir = std::env::temp_dir().join(format!("cuzk-srs-fixtures-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    for (i, path) in post_params().into_iter().enumerate() {
        let file = ParamsFile::open(&path).ok_or_panic();
        let srs = file.decode(SubgroupCheck::None).ok_or_panic();
        let warm_path = dir.join(format!("{i}.warm"));
        write_warm(&srs, &warm_path).ok_or_panic();
        let warm = WarmSrs::open_expecting(&warm_path, &file.vk_fingerprint()).ok_or_panic();
        warm.verify(SubgroupCheck::Full).ok_or_panic();
        assert!(
            warm.to_srs() == srs,
            "{}: warm copy differs",
            path.display()
        );
    }
    let _ = fs::remove_dir_all(&dir);
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// Load times of every fixture file (page cache warm). Knobs, as checked
/// decoding is slow: `CUZK_SRS_BENCH_SKIP_BELLPERSON` skips bellperson's
/// single-threaded readers; `CUZK_SRS_BENCH_CHECKED_MAX_MB=N` skips checked
/// decodes (ours and bellperson's) of files over N MB.
#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn load_times() {
    let skip_bellperson = std::env::var_os("CUZK_SRS_BENCH_SKIP_BELLPERSON").is_some();
    let checked_max = std::env::var("CUZK_SRS_BENCH_CHECKED_MAX_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(u64::MAX, |mb| mb * 1_000_000);
    let dir = std::env::temp_dir().join(format!("cuzk-srs-bench-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    println!("threads: {}", rayon::current_num_threads());
    for path in params_files("") {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let checked = size <= checked_max;
        let _ = fs::read(&path); // the page cache warm for every reader
        let t = Instant::now();
        let file = ParamsFile::open(&path).ok_or_panic();
        let open = ms(t);
        let t = Instant::now();
        let srs = file.decode(SubgroupCheck::None).ok_or_panic();
        let unchecked = ms(t);
        let t = Instant::now();
        let full = checked.then(|| drop(file.decode(SubgroupCheck::Full).ok_or_panic()));
        let full = full.map_or(f64::NAN, |_| ms(t));
        let (mut bp_unchecked, mut bp_checked) = (f64::NAN, f64::NAN);
        if !skip_bellperson {
            let t = Instant::now();
            drop(bellperson_read(&path, false));
            bp_unchecked = ms(t);
            if checked {
                let t = Instant::now();
                drop(bellperson_read(&path, true));
                bp_checked = ms(t);
            }
        }
        let warm_path = dir.join("bench.warm");
        let t = Instant::now();
        write_warm(&srs, &warm_path).ok_or_panic();
        let write = ms(t);
        let t = Instant::now();
        let warm = WarmSrs::open(&warm_path).ok_or_panic();
        let warm_open = ms(t);
        let t = Instant::now();
        warm.verify(SubgroupCheck::None).ok_or_panic();
        let digest = ms(t);
        println!("{name}: {:.1} MB, {:?}", size as f64 / 1e6, file.counts());
        println!(
            "  index {open:.2} ms | ours: unchecked {unchecked:.0} ms, checked {full:.0} ms | \
             bellperson: unchecked {bp_unchecked:.0} ms, checked {bp_checked:.0} ms"
        );
        println!(
            "  write_warm {write:.0} ms | warm open {warm_open:.2} ms | \
             warm digest check {digest:.0} ms | hot size {} MB",
            srs.bytes() / 1_000_000
        );
        drop(warm);
        let _ = fs::remove_file(&warm_path);
    }
    let _ = fs::remove_dir_all(&dir);
}
