//! Tests on small random parameters, checked against bellperson.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("cuzk-srs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn random_srs(seed: u64) -> Srs {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut g1 = |n: usize| -> Vec<G1Affine> {
        (0..n)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect()
    };
    let (ic, h, l, a, b_g1, g1s) = (g1(3), g1(17), g1(9), g1(13), g1(11), g1(3));
    let g2: Vec<G2Affine> = (0..10)
        .map(|_| G2Projective::random(&mut rng).to_affine())
        .collect();
    Srs {
        vk: VerifyingKeyPoints {
            alpha_g1: g1s[0],
            beta_g1: g1s[1],
            beta_g2: g2[0],
            gamma_g2: g2[1],
            delta_g1: g1s[2],
            delta_g2: g2[2],
            ic,
        },
        h,
        l,
        a,
        b_g1,
        b_g2: g2[3..].to_vec(),
    }
}

fn to_bellperson(srs: &Srs) -> Parameters<Bls12> {
    let vk = &srs.vk;
    Parameters {
        vk: VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        },
        h: Arc::new(srs.h.clone()),
        l: Arc::new(srs.l.clone()),
        a: Arc::new(srs.a.clone()),
        b_g1: Arc::new(srs.b_g1.clone()),
        b_g2: Arc::new(srs.b_g2.clone()),
    }
}

fn bellperson_read(path: &Path, checked: bool) -> std::io::Result<Parameters<Bls12>> {
    Parameters::<Bls12>::read(File::open(path)?, checked)
}

/// Byte offset of point `index` of `section` in a `.params` file.
fn point_offset(c: &SectionCounts, section: Section, index: usize) -> usize {
    let counts = [c.ic, c.h, c.l, c.a, c.b_g1, c.b_g2];
    let mut at = 3 * (G1_BYTES + G2_BYTES);
    for (&(s, size), n) in POINT_SECTIONS.iter().zip(counts) {
        at += 4;
        if s == section {
            return at + index * size;
        }
        at += n * size;
    }
    3 * G1_BYTES // not reached for point sections
}

/// A G1 point on the curve but (almost surely) outside the subgroup.
fn g1_outside_subgroup() -> G1Affine {
    (1u64..)
        .find_map(|k| {
            let x = Fp::from(k);
            let y = Option::<Fp>::from((x.square() * x + Fp::from(4)).sqrt())?;
            let p = G1Affine::from_raw_unchecked(x, y, false);
            (!bool::from(p.is_torsion_free())).then_some(p)
        })
        .expect("a point exists")
}

fn g2_outside_subgroup() -> G2Affine {
    let four = Fp2::new(Fp::from(4), Fp::from(4));
    (1u64..)
        .find_map(|k| {
            let x = Fp2::new(Fp::from(k), Fp::ONE);
            let y = Option::<Fp2>::from((x.square() * x + four).sqrt())?;
            let p = G2Affine::from_raw_unchecked(x, y, false);
            (!bool::from(p.is_torsion_free())).then_some(p)
        })
        .expect("a point exists")
}

fn expect_invalid(r: Result<Srs, SrsError>, section: Section, index: usize, reason: PointError) {
    match r {
        Err(SrsError::InvalidPoint {
            section: s,
            index: i,
            reason: r,
            ..
        }) => {
            assert_eq!((s, i, r), (section, index, reason))
        }
        other => panic!("expected invalid {section}[{index}] ({reason}), got {other:?}"),
    }
}

#[test]
fn params_round_trip_matches_bellperson() {
    let dir = TempDir::new("roundtrip");
    let srs = random_srs(1);
    let mut sparse = srs.clone();
    sparse.l.clear();
    sparse.b_g2.clear();
    for (name, srs) in [("full", srs), ("sparse", sparse)] {
        let path = dir.join(&format!("{name}.params"));
        write_params(&srs, &path).unwrap();
        let mut theirs = Vec::new();
        to_bellperson(&srs).write(&mut theirs).unwrap();
        assert_eq!(
            fs::read(&path).unwrap(),
            theirs,
            "byte-identical to bellperson"
        );

        let file = ParamsFile::open(&path).unwrap();
        assert_eq!(file.counts(), srs.counts());
        assert_eq!(file.len(), theirs.len() as u64);
        assert_eq!(file.decode(SubgroupCheck::Full).unwrap(), srs);
        assert_eq!(file.decode(SubgroupCheck::None).unwrap(), srs);
        for checked in [true, false] {
            let bp = bellperson_read(&path, checked).unwrap();
            assert!(bp == to_bellperson(&srs), "bellperson reads our file back");
        }
        assert!(srs.bytes() > (srs.h.len() * 96) as u64);
    }
}

#[test]
fn vk_file_matches_bellperson() {
    let dir = TempDir::new("vk");
    let srs = random_srs(2);
    let (vk_path, params_path) = (dir.join("x.vk"), dir.join("x.params"));
    write_vk(&srs.vk, &vk_path).unwrap();
    write_params(&srs, &params_path).unwrap();
    let mut theirs = Vec::new();
    to_bellperson(&srs).vk.write(&mut theirs).unwrap();
    let ours = fs::read(&vk_path).unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(read_vk(&vk_path).unwrap(), srs.vk);
    assert!(VerifyingKey::<Bls12>::read(&ours[..]).unwrap() == to_bellperson(&srs).vk);
    let file = ParamsFile::open(&params_path).unwrap();
    assert_eq!(file.vk_bytes(), &ours[..]);
    assert_eq!(file.vk_fingerprint(), srs.vk.fingerprint());
    assert_eq!(file.decode_vk().unwrap(), srs.vk);
    fs::write(&vk_path, [&ours[..], &[0]].concat()).unwrap();
    assert!(matches!(
        read_vk(&vk_path),
        Err(SrsError::TrailingBytes { .. })
    ));
}

#[test]
fn truncated_oversized_and_garbage_files_are_refused() {
    let dir = TempDir::new("truncated");
    let srs = random_srs(3);
    let good = dir.join("good.params");
    write_params(&srs, &good).unwrap();
    let bytes = fs::read(&good).unwrap();
    let c = srs.counts();
    let cuts = [
        (0, Section::AlphaG1),
        (100, Section::BetaG1),
        (3 * (G1_BYTES + G2_BYTES) + 2, Section::Ic),
        (point_offset(&c, Section::Ic, 1), Section::Ic),
        (point_offset(&c, Section::H, 0) - 2, Section::H),
        (point_offset(&c, Section::L, 5) + 10, Section::L),
        (point_offset(&c, Section::BG1, 0), Section::BG1),
        (bytes.len() - 1, Section::BG2),
    ];
    let path = dir.join("bad.params");
    for (len, section) in cuts {
        fs::write(&path, &bytes[..len]).unwrap();
        match ParamsFile::open(&path) {
            Err(e @ SrsError::Truncated { section: s, .. }) => {
                assert_eq!(s, section, "cut at {len}: {e}");
                let msg = e.to_string();
                assert!(msg.contains(&format!("`{section}`")) && msg.contains("bad.params"));
            }
            other => panic!("cut at {len}: expected truncation, got {:?}", other.err()),
        }
        assert!(bellperson_read(&path, false).is_err());
    }
    fs::write(&path, [&bytes[..], &[0, 0]].concat()).unwrap();
    let e = ParamsFile::open(&path).err().unwrap();
    assert!(matches!(e, SrsError::TrailingBytes { .. }), "{e}");
    assert!(e.to_string().contains("2 unexpected bytes"), "{e}");

    fs::write(&path, vec![0xab; 100_000]).unwrap();
    let e = ParamsFile::open(&path).err().unwrap();
    assert!(
        matches!(
            e,
            SrsError::Truncated {
                section: Section::Ic,
                ..
            }
        ),
        "{e}"
    );

    let missing = dir.join("missing.params");
    let e = ParamsFile::open(&missing).err().unwrap();
    assert!(matches!(e, SrsError::Io { .. }) && e.to_string().contains("missing.params"));
}

/// Writes `srs` with the encoding at `at` replaced by `enc`, and decodes it
/// with [`SubgroupCheck::Full`] and [`SubgroupCheck::None`], checking that
/// bellperson (checked and unchecked) accepts exactly what we accept.
fn patched(dir: &TempDir, srs: &Srs, at: usize, enc: &[u8]) -> [Result<Srs, SrsError>; 2] {
    let path = dir.join("patched.params");
    write_params(srs, &path).unwrap();
    let mut bytes = fs::read(&path).unwrap();
    bytes[at..at + enc.len()].copy_from_slice(enc);
    fs::write(&path, &bytes).unwrap();
    let file = ParamsFile::open(&path).unwrap();
    let ours = [
        file.decode(SubgroupCheck::Full),
        file.decode(SubgroupCheck::None),
    ];
    // Our acceptance must equal bellperson's in both modes.
    for (r, checked) in ours.iter().zip([true, false]) {
        let theirs = bellperson_read(&path, checked);
        assert_eq!(r.is_ok(), theirs.is_ok(), "checked={checked}: ours {r:?}");
    }
    ours
}

#[test]
fn invalid_points_are_refused_as_bellperson_does() {
    use PointError::*;
    use Section::*;
    let dir = TempDir::new("invalid");
    let srs = random_srs(4);
    let c = srs.counts();
    let at = |s, i| point_offset(&c, s, i);

    let mut enc = srs.l[3].to_uncompressed();
    enc[95] ^= 1;
    let [full, none] = patched(&dir, &srs, at(L, 3), &enc);
    expect_invalid(full, L, 3, NotOnCurve);
    expect_invalid(none, L, 3, NotOnCurve);

    let mut enc = [0xffu8; 96];
    enc[0] = 0x1f; // x >= p, flags clear
    let [full, none] = patched(&dir, &srs, at(H, 16), &enc);
    expect_invalid(full, H, 16, BadEncoding);
    expect_invalid(none, H, 16, BadEncoding);

    let odd = g1_outside_subgroup();
    let [full, none] = patched(&dir, &srs, at(A, 2), &odd.to_uncompressed());
    expect_invalid(full, A, 2, NotInSubgroup);
    assert_eq!(none.unwrap().a[2], odd);

    let odd2 = g2_outside_subgroup();
    let [full, none] = patched(&dir, &srs, at(BG2, 6), &odd2.to_uncompressed());
    expect_invalid(full, BG2, 6, NotInSubgroup);
    assert_eq!(none.unwrap().b_g2[6], odd2);

    // The identity: refused in every section but the six fixed vk points.
    let inf = G1Affine::identity().to_uncompressed();
    let [full, none] = patched(&dir, &srs, at(H, 0), &inf);
    expect_invalid(full, H, 0, Infinity);
    expect_invalid(none, H, 0, Infinity);
    let [full, _] = patched(&dir, &srs, at(Ic, 1), &inf);
    expect_invalid(full, Ic, 1, Infinity);
    let [full, none] = patched(
        &dir,
        &srs,
        at(BG2, 0),
        &G2Affine::identity().to_uncompressed(),
    );
    expect_invalid(full, BG2, 0, Infinity);
    expect_invalid(none, BG2, 0, Infinity);
    let [full, _] = patched(&dir, &srs, 0, &inf);
    assert!(bool::from(full.unwrap().vk.alpha_g1.is_identity()));

    // As in bellperson (blst), a record with the compression flag set is
    // read as a compressed point from its first 48 bytes.
    let mut enc = [0x5au8; 96];
    enc[..48].copy_from_slice(&srs.l[2].to_compressed());
    let [full, none] = patched(&dir, &srs, at(L, 2), &enc);
    assert_eq!(
        (full.unwrap().l[2], none.unwrap().l[2]),
        (srs.l[2], srs.l[2])
    );

    // The vk is always fully checked, whatever the mode.
    let [_, none] = patched(&dir, &srs, G1_BYTES, &odd.to_uncompressed());
    expect_invalid(none, BetaG1, 0, NotInSubgroup);
    let [_, none] = patched(&dir, &srs, at(Ic, 0), &odd.to_uncompressed());
    expect_invalid(none, Ic, 0, NotInSubgroup);
}

#[test]
fn the_lowest_bad_index_is_reported() {
    let p = G1Projective::random(&mut ChaCha8Rng::seed_from_u64(5)).to_affine();
    let n = 3 * DECODE_CHUNK + 7;
    let mut bytes = p.to_uncompressed().repeat(n);
    for bad in [2 * DECODE_CHUNK + 3, DECODE_CHUNK + 1, 3 * DECODE_CHUNK] {
        bytes[bad * G1_BYTES + 95] ^= 1;
    }
    let r = decode_points::<G1Affine>(&bytes, SubgroupCheck::None, false);
    assert_eq!(r.err(), Some((DECODE_CHUNK + 1, PointError::NotOnCurve)));
    bytes[(DECODE_CHUNK + 1) * G1_BYTES + 95] ^= 1;
    let r = decode_points::<G1Affine>(&bytes, SubgroupCheck::Full, false);
    assert_eq!(
        r.err(),
        Some((2 * DECODE_CHUNK + 3, PointError::NotOnCurve))
    );
}

#[test]
fn warm_round_trip() {
    let dir = TempDir::new("warm");
    let srs = random_srs(6);
    let (params, path) = (dir.join("x.params"), dir.join("x.warm"));
    write_params(&srs, &params).unwrap();
    write_warm(&srs, &path).unwrap();
    let warm = WarmSrs::open(&path).unwrap();
    assert_eq!(warm.vk(), &srs.vk);
    assert_eq!(warm.counts(), srs.counts());
    assert_eq!(warm.h(), &srs.h[..]);
    assert_eq!(warm.l(), &srs.l[..]);
    assert_eq!(warm.a(), &srs.a[..]);
    assert_eq!(warm.b_g1(), &srs.b_g1[..]);
    assert_eq!(warm.b_g2(), &srs.b_g2[..]);
    assert_eq!(warm.to_srs(), srs);
    assert_eq!(warm.bytes(), fs::metadata(&path).unwrap().len());
    assert_eq!(
        warm.h().as_ptr() as usize % std::mem::align_of::<G1Affine>(),
        0
    );
    warm.verify(SubgroupCheck::Full).unwrap();
    let fp = ParamsFile::open(&params).unwrap().vk_fingerprint();
    assert_eq!(warm.vk_fingerprint(), fp);
    WarmSrs::open_expecting(&path, &fp).unwrap();

    let mut empty = srs.clone();
    empty.h.clear();
    empty.b_g2.clear();
    write_warm(&empty, &path).unwrap();
    assert_eq!(WarmSrs::open(&path).unwrap().to_srs(), empty);

    // Points are used in place: a bad one is only found by `verify`.
    let mut odd = srs.clone();
    odd.b_g1[4] = g1_outside_subgroup();
    write_warm(&odd, &path).unwrap();
    let warm = WarmSrs::open(&path).unwrap();
    warm.verify(SubgroupCheck::None).unwrap();
    match warm.verify(SubgroupCheck::Full) {
        Err(SrsError::InvalidPoint {
            section: Section::BG1,
            index: 4,
            ..
        }) => {}
        other => panic!("expected b_g1[4] refused, got {other:?}"),
    }
}

#[test]
fn streamed_warm_files_equal_the_decoded_ones() {
    let dir = TempDir::new("warm-stream");
    let srs = random_srs(8);
    let params = dir.join("x.params");
    write_params(&srs, &params).unwrap();
    let file = ParamsFile::open(&params).unwrap();
    let reference = dir.join("ref.warm");
    write_warm(&srs, &reference).unwrap();
    for step in [1, 4, 7, 1 << 19] {
        let streamed = dir.join(&format!("s{step}.warm"));
        super::warm::write_warm_in_small_steps(&file, &streamed, step).unwrap();
        assert_eq!(
            fs::read(&streamed).unwrap(),
            fs::read(&reference).unwrap(),
            "step {step}"
        );
    }
    write_warm_streaming(&file, &dir.join("s.warm"), SubgroupCheck::None).unwrap();
    let warm = WarmSrs::open(&dir.join("s.warm")).unwrap();
    warm.verify(SubgroupCheck::Full).unwrap();
    assert_eq!(warm.to_srs(), srs);
}

#[test]
fn stale_or_corrupt_warm_files_are_refused() {
    let dir = TempDir::new("warm-bad");
    let srs = random_srs(7);
    let good = dir.join("good.warm");
    write_warm(&srs, &good).unwrap();
    let bytes = fs::read(&good).unwrap();

    let other = random_srs(8).vk.fingerprint();
    let e = WarmSrs::open_expecting(&good, &other).err().unwrap();
    assert!(matches!(e, SrsError::StaleWarm { .. }), "{e}");

    let path = dir.join("bad.warm");
    let refused = |bytes: &[u8], why: &str| {
        fs::write(&path, bytes).unwrap();
        match WarmSrs::open(&path) {
            Err(e @ SrsError::BadWarm { .. }) => assert!(e.to_string().contains(why), "{e}"),
            other => panic!("expected refusal ({why}), got {:?}", other.err()),
        }
    };
    let patch = |at: usize, v: u8| {
        let mut b = bytes.clone();
        b[at] ^= v;
        b
    };
    refused(&patch(0, 1), "magic");
    refused(&patch(8, 1), "format version");
    refused(&patch(330, 1), "checksum");
    refused(&patch(warm::WARM_HEADER - 1, 1), "checksum");
    refused(&bytes[..bytes.len() - 1], "header says");
    refused(&bytes[..100], "shorter than its header");
    refused(&[], "shorter than its header");

    // A flipped bit in the points passes `open` (nothing is read) but not
    // `verify`.
    fs::write(&path, patch(bytes.len() - 5, 0x10)).unwrap();
    let warm = WarmSrs::open(&path).unwrap();
    let e = warm.verify(SubgroupCheck::None).err().unwrap();
    assert!(e.to_string().contains("digest"), "{e}");
}
