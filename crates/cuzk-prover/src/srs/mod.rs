//! The Groth16 SRS ("parameters") over BLS12-381, as the prover uses it.
//!
//! This module owns reading and writing the SRS in two on-disk forms:
//!
//! * **`.params`**, bellperson's format (the Filecoin parameter cache): the
//!   verifying key (alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2,
//!   then a big-endian `u32` count and that many `ic` points), followed by the
//!   sections h, l, a, b_g1 (G1) and b_g2 (G2), each a big-endian `u32` count
//!   and that many points. Points are uncompressed (G1 96 bytes, G2 192).
//!   [`ParamsFile`] maps and indexes such a file; [`ParamsFile::decode`]
//!   decodes it in parallel into a [`Srs`]. A `.vk` file is the verifying key
//!   part alone ([`write_vk`], [`read_vk`]).
//! * **warm**, our own file holding the points in blstrs' in-memory form, so
//!   [`WarmSrs`] maps it and hands out `&[G1Affine]` without decoding. The
//!   representation is build- and architecture-specific: it is a cache,
//!   recreated from the `.params` file whenever [`WarmSrs::open`] refuses it.
//!
//! Acceptance rules match bellperson 0.27's `Parameters::read`: the six fixed
//! verifying-key points are always fully checked (and may be the identity);
//! `ic` is always fully checked and may not hold the identity; h, l, a, b_g1
//! and b_g2 are checked per [`SubgroupCheck`] and may not hold the identity.
//! Even unchecked decoding (`from_uncompressed_unchecked`, i.e. blst's
//! deserialize) rejects non-canonical coordinates and points off the curve.
//! Unlike bellperson, bytes after the last section are an error.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::mem;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use memmap2::Mmap;
use rayon::prelude::*;

mod warm;
pub use warm::{write_warm, write_warm_streaming, WarmSrs};
mod view;
pub use view::{DeviceSrs, SrsRef};

#[cfg(test)]
mod tests;

/// SHA-256 of a verifying key's bellperson serialization (the `.vk` file).
pub type VkFingerprint = [u8; 32];

/// Bytes of an uncompressed G1 / G2 point in the `.params` format.
pub const G1_BYTES: usize = 96;
pub const G2_BYTES: usize = 192;

// The warm form maps files as slices of these types: pin their layout.
const _: () = assert!(mem::size_of::<G1Affine>() == 96 && mem::align_of::<G1Affine>() <= 8);
const _: () = assert!(mem::size_of::<G2Affine>() == 192 && mem::align_of::<G2Affine>() <= 8);

/// Whether point decoding checks subgroup membership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubgroupCheck {
    /// On curve and in the prime-order subgroup (`from_uncompressed`).
    Full,
    /// Canonical and on curve only (`from_uncompressed_unchecked`).
    None,
}

/// A part of the SRS, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    AlphaG1,
    BetaG1,
    BetaG2,
    GammaG2,
    DeltaG1,
    DeltaG2,
    Ic,
    H,
    L,
    A,
    BG1,
    BG2,
}

impl Section {
    /// The name bellperson's fields use.
    pub fn name(self) -> &'static str {
        use Section::*;
        match self {
            AlphaG1 => "alpha_g1",
            BetaG1 => "beta_g1",
            BetaG2 => "beta_g2",
            GammaG2 => "gamma_g2",
            DeltaG1 => "delta_g1",
            DeltaG2 => "delta_g2",
            Ic => "ic",
            H => "h",
            L => "l",
            A => "a",
            BG1 => "b_g1",
            BG2 => "b_g2",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a point was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointError {
    /// Bad flag bits, or a coordinate not below the field modulus.
    BadEncoding,
    NotOnCurve,
    NotInSubgroup,
    /// The identity, refused in `ic`, h, l, a, b_g1 and b_g2.
    Infinity,
}

impl fmt::Display for PointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PointError::BadEncoding => "not a canonical uncompressed encoding",
            PointError::NotOnCurve => "not on the curve",
            PointError::NotInSubgroup => "not in the prime-order subgroup",
            PointError::Infinity => "point at infinity, not allowed in this section",
        })
    }
}

/// Errors reading or writing SRS files. Every variant about a file names it.
#[derive(Debug, thiserror::Error)]
pub enum SrsError {
    /// Opening, mapping, reading, writing or renaming `path` failed.
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    /// The file ends inside `section` (its count or its points).
    #[error(
        "{}: truncated in section `{section}`: needs {needed} bytes at offset {offset}, \
         but only {available} remain (file length {file_len})", .path.display()
    )]
    Truncated {
        path: PathBuf,
        section: Section,
        offset: u64,
        needed: u64,
        available: u64,
        file_len: u64,
    },
    /// Bytes follow the last section (bellperson would ignore them).
    #[error(
        "{}: {} unexpected bytes after the last section (it ends at offset {end}, \
         file length {file_len})",
        .path.display(), .file_len - .end
    )]
    TrailingBytes {
        path: PathBuf,
        end: u64,
        file_len: u64,
    },
    /// Point `index` of `section` was refused.
    #[error("{}: section `{section}`, point {index}: {reason}", .path.display())]
    InvalidPoint {
        path: PathBuf,
        section: Section,
        index: usize,
        reason: PointError,
    },
    /// A section too long for the format's `u32` counts.
    #[error("section `{section}` has {count} points, more than a .params file can count")]
    TooManyPoints { section: Section, count: usize },
    /// A warm file that is not ours, of another format version or point
    /// representation, inconsistent, or (from [`WarmSrs::verify`]) corrupt.
    #[error("{}: not a usable warm SRS file: {reason}", .path.display())]
    BadWarm { path: PathBuf, reason: String },
    /// A warm file made from other parameters than expected.
    #[error(
        "{}: stale warm SRS: verifying key fingerprint {found}, expected {expected}",
        .path.display()
    )]
    StaleWarm {
        path: PathBuf,
        expected: String,
        found: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SrsError + '_ {
    move |source| SrsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Point counts of each section.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SectionCounts {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
    pub ic: usize,
}

/// The verifying key's points.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyingKeyPoints {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    pub ic: Vec<G1Affine>,
}

impl VerifyingKeyPoints {
    /// bellperson's serialization: the content of a `.vk` file and the start
    /// of a `.params` file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(3 * (G1_BYTES + G2_BYTES) + 4 + self.ic.len() * G1_BYTES);
        for g1 in [&self.alpha_g1, &self.beta_g1] {
            out.extend_from_slice(&g1.to_uncompressed());
        }
        for g2 in [&self.beta_g2, &self.gamma_g2] {
            out.extend_from_slice(&g2.to_uncompressed());
        }
        out.extend_from_slice(&self.delta_g1.to_uncompressed());
        out.extend_from_slice(&self.delta_g2.to_uncompressed());
        out.extend_from_slice(&(self.ic.len() as u32).to_be_bytes());
        for p in &self.ic {
            out.extend_from_slice(&p.to_uncompressed());
        }
        out
    }

    /// SHA-256 of [`Self::to_bytes`].
    pub fn fingerprint(&self) -> VkFingerprint {
        sha256(&self.to_bytes())
    }
}

/// A decoded SRS in memory ("hot").
#[derive(Clone, PartialEq)]
pub struct Srs {
    pub vk: VerifyingKeyPoints,
    pub h: Vec<G1Affine>,
    pub l: Vec<G1Affine>,
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

impl fmt::Debug for Srs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Srs")
            .field("counts", &self.counts())
            .finish()
    }
}

impl Srs {
    /// The number of points of each section.
    pub fn counts(&self) -> SectionCounts {
        SectionCounts {
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
            ic: self.vk.ic.len(),
        }
    }

    /// Bytes held in memory by the points.
    pub fn bytes(&self) -> u64 {
        Self::bytes_for(&self.counts())
    }

    /// Bytes a decoded SRS of these counts holds in memory.
    pub fn bytes_for(c: &SectionCounts) -> u64 {
        let g1 = c.ic + c.h + c.l + c.a + c.b_g1;
        (mem::size_of::<Self>()
            + g1 * mem::size_of::<G1Affine>()
            + c.b_g2 * mem::size_of::<G2Affine>()) as u64
    }
}

/// Per-curve operations shared by G1 and G2 code paths.
trait Point: Copy + Send + Sync + 'static {
    const ENC: usize;
    fn decode(b: &[u8], check: SubgroupCheck) -> Option<Self>;
    fn encode(&self, out: &mut [u8]);
    fn is_inf(&self) -> bool;
    /// For points used in place: why it is unusable, if it is.
    fn problem(&self) -> Option<PointError>;
    /// blst's verdict on an encoding, to tell why a decode failed.
    fn blst_error(b: &[u8]) -> blst::BLST_ERROR;
}

macro_rules! impl_point {
    ($t:ty, $n:expr, $raw:ty, $deser:path) => {
        impl Point for $t {
            const ENC: usize = $n;
            fn decode(b: &[u8], check: SubgroupCheck) -> Option<Self> {
                let b: &[u8; $n] = b.try_into().ok()?;
                Option::from(match check {
                    SubgroupCheck::Full => <$t>::from_uncompressed(b),
                    SubgroupCheck::None => <$t>::from_uncompressed_unchecked(b),
                })
            }
            fn encode(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_uncompressed());
            }
            fn is_inf(&self) -> bool {
                self.is_identity().into()
            }
            fn problem(&self) -> Option<PointError> {
                if self.is_inf() {
                    Some(PointError::Infinity)
                } else if !bool::from(self.is_on_curve()) {
                    Some(PointError::NotOnCurve)
                } else if !bool::from(self.is_torsion_free()) {
                    Some(PointError::NotInSubgroup)
                } else {
                    None
                }
            }
            fn blst_error(b: &[u8]) -> blst::BLST_ERROR {
                assert_eq!(b.len(), $n);
                let mut raw = <$raw>::default();
                // SAFETY: `b` holds the $n bytes blst reads.
                unsafe { $deser(&mut raw, b.as_ptr()) }
            }
        }
    };
}
impl_point!(
    G1Affine,
    G1_BYTES,
    blst::blst_p1_affine,
    blst::blst_p1_deserialize
);
impl_point!(
    G2Affine,
    G2_BYTES,
    blst::blst_p2_affine,
    blst::blst_p2_deserialize
);

fn diagnose<P: Point>(b: &[u8]) -> PointError {
    match P::blst_error(b) {
        blst::BLST_ERROR::BLST_SUCCESS => match P::decode(b, SubgroupCheck::None) {
            Some(p) if p.is_inf() => PointError::Infinity,
            _ => PointError::NotInSubgroup,
        },
        blst::BLST_ERROR::BLST_POINT_NOT_ON_CURVE => PointError::NotOnCurve,
        blst::BLST_ERROR::BLST_POINT_NOT_IN_GROUP => PointError::NotInSubgroup,
        _ => PointError::BadEncoding,
    }
}

const DECODE_CHUNK: usize = 2048;

/// Decodes `bytes` (a whole number of encodings) in parallel. On failure,
/// returns the lowest failing index and why.
fn decode_points<P: Point>(
    bytes: &[u8],
    check: SubgroupCheck,
    allow_identity: bool,
) -> Result<Vec<P>, (usize, PointError)> {
    let n = bytes.len() / P::ENC;
    let mut out: Vec<P> = Vec::with_capacity(n);
    let first_bad = AtomicUsize::new(usize::MAX);
    out.spare_capacity_mut()[..n]
        .par_chunks_mut(DECODE_CHUNK)
        .zip(bytes.par_chunks(DECODE_CHUNK * P::ENC))
        .enumerate()
        .for_each(|(c, (dst, src))| {
            let base = c * DECODE_CHUNK;
            if base > first_bad.load(Ordering::Relaxed) {
                return;
            }
            for (i, (d, s)) in dst.iter_mut().zip(src.chunks_exact(P::ENC)).enumerate() {
                match P::decode(s, check) {
                    Some(p) if allow_identity || !p.is_inf() => {
                        d.write(p);
                    }
                    _ => {
                        first_bad.fetch_min(base + i, Ordering::Relaxed);
                        return;
                    }
                }
            }
        });
    let bad = first_bad.into_inner();
    if bad != usize::MAX {
        let s = &bytes[bad * P::ENC..(bad + 1) * P::ENC];
        let reason = match P::decode(s, check) {
            Some(_) => PointError::Infinity,
            None => diagnose::<P>(s),
        };
        return Err((bad, reason));
    }
    // SAFETY: no failure was recorded, so every chunk ran to its end and
    // initialised all `n` elements.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// Byte ranges of a `.params` (or `.vk`) file's parts.
#[derive(Clone, Copy, Debug)]
struct Layout {
    vk_end: usize,
    /// (offset of the first point, count) of ic, h, l, a, b_g1, b_g2.
    sections: [(usize, usize); 6],
}

const POINT_SECTIONS: [(Section, usize); 6] = [
    (Section::Ic, G1_BYTES),
    (Section::H, G1_BYTES),
    (Section::L, G1_BYTES),
    (Section::A, G1_BYTES),
    (Section::BG1, G1_BYTES),
    (Section::BG2, G2_BYTES),
];
const VK_FIXED: [(Section, usize); 6] = [
    (Section::AlphaG1, G1_BYTES),
    (Section::BetaG1, G1_BYTES),
    (Section::BetaG2, G2_BYTES),
    (Section::GammaG2, G2_BYTES),
    (Section::DeltaG1, G1_BYTES),
    (Section::DeltaG2, G2_BYTES),
];

/// Indexes `bytes` as a verifying key followed by `n_sections` point
/// sections (1 for a `.vk` file: ic only; 6 for a `.params` file).
fn parse_layout(path: &Path, bytes: &[u8], n_sections: usize) -> Result<Layout, SrsError> {
    let file_len = bytes.len() as u64;
    let mut pos = 0u64;
    let mut take = |section: Section, needed: u64| -> Result<usize, SrsError> {
        let available = file_len - pos;
        if needed > available {
            return Err(SrsError::Truncated {
                path: path.to_path_buf(),
                section,
                offset: pos,
                needed,
                available,
                file_len,
            });
        }
        pos += needed;
        Ok((pos - needed) as usize)
    };
    for (section, size) in VK_FIXED {
        take(section, size as u64)?;
    }
    let mut sections = [(0, 0); 6];
    for (i, &(section, size)) in POINT_SECTIONS[..n_sections].iter().enumerate() {
        let at = take(section, 4)?;
        let count = u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let offset = take(section, count as u64 * size as u64)?;
        sections[i] = (offset, count as usize);
    }
    if pos != file_len {
        return Err(SrsError::TrailingBytes {
            path: path.to_path_buf(),
            end: pos,
            file_len,
        });
    }
    let vk_end = sections[0].0 + sections[0].1 * G1_BYTES;
    Ok(Layout { vk_end, sections })
}

fn point_err(path: &Path, section: Section) -> impl FnOnce((usize, PointError)) -> SrsError + '_ {
    move |(index, reason)| SrsError::InvalidPoint {
        path: path.to_path_buf(),
        section,
        index,
        reason,
    }
}

fn one<P: Point>(path: &Path, bytes: &[u8], at: usize, section: Section) -> Result<P, SrsError> {
    decode_points(&bytes[at..at + P::ENC], SubgroupCheck::Full, true)
        .map(|v| v[0])
        .map_err(point_err(path, section))
}

/// Decodes a verifying key laid out by `parse_layout`, as bellperson does:
/// always fully checked, identity refused in `ic` only.
fn decode_vk(path: &Path, bytes: &[u8], layout: &Layout) -> Result<VerifyingKeyPoints, SrsError> {
    let (g1, g2) = (G1_BYTES, G2_BYTES);
    let (off, n) = layout.sections[0];
    Ok(VerifyingKeyPoints {
        alpha_g1: one(path, bytes, 0, Section::AlphaG1)?,
        beta_g1: one(path, bytes, g1, Section::BetaG1)?,
        beta_g2: one(path, bytes, 2 * g1, Section::BetaG2)?,
        gamma_g2: one(path, bytes, 2 * g1 + g2, Section::GammaG2)?,
        delta_g1: one(path, bytes, 2 * g1 + 2 * g2, Section::DeltaG1)?,
        delta_g2: one(path, bytes, 3 * g1 + 2 * g2, Section::DeltaG2)?,
        ic: decode_points(&bytes[off..off + n * g1], SubgroupCheck::Full, false)
            .map_err(point_err(path, Section::Ic))?,
    })
}

fn map_file(path: &Path) -> Result<Mmap, SrsError> {
    let file = File::open(path).map_err(io_err(path))?;
    // SAFETY: the map is read-only; like bellperson we rely on parameter
    // files not being modified while in use.
    unsafe { Mmap::map(&file) }.map_err(io_err(path))
}

/// A `.params` file opened (memory-mapped) and indexed: section offsets and
/// counts validated against the file length, nothing decoded yet.
pub struct ParamsFile {
    path: PathBuf,
    map: Mmap,
    layout: Layout,
}

impl ParamsFile {
    /// Maps `path` and checks its counts against its length. Fails on
    /// truncation, trailing bytes, or garbage (which shows as one of them).
    pub fn open(path: &Path) -> Result<ParamsFile, SrsError> {
        let map = map_file(path)?;
        let layout = parse_layout(path, &map, 6)?;
        Ok(ParamsFile {
            path: path.to_path_buf(),
            map,
            layout,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The number of points of each section.
    pub fn counts(&self) -> SectionCounts {
        let c = self.layout.sections.map(|(_, n)| n);
        SectionCounts {
            ic: c[0],
            h: c[1],
            l: c[2],
            a: c[3],
            b_g1: c[4],
            b_g2: c[5],
        }
    }

    /// The verifying key's bytes: what the matching `.vk` file holds.
    pub fn vk_bytes(&self) -> &[u8] {
        &self.map[..self.layout.vk_end]
    }

    /// SHA-256 of [`Self::vk_bytes`], as [`VerifyingKeyPoints::fingerprint`].
    pub fn vk_fingerprint(&self) -> VkFingerprint {
        sha256(self.vk_bytes())
    }

    /// Decodes the verifying key only (always fully checked, as bellperson).
    pub fn decode_vk(&self) -> Result<VerifyingKeyPoints, SrsError> {
        decode_vk(&self.path, &self.map, &self.layout)
    }

    fn section<P: Point>(&self, i: usize, check: SubgroupCheck) -> Result<Vec<P>, SrsError> {
        let (off, n) = self.layout.sections[i];
        decode_points(&self.map[off..off + n * P::ENC], check, false)
            .map_err(point_err(&self.path, POINT_SECTIONS[i].0))
    }

    /// Decodes every section in parallel, with bellperson's acceptance
    /// rules (see the module doc); errors name the lowest bad index.
    pub fn decode(&self, check: SubgroupCheck) -> Result<Srs, SrsError> {
        let start = Instant::now();
        #[cfg(unix)]
        let _ = self.map.advise(memmap2::Advice::WillNeed);
        let srs = Srs {
            vk: self.decode_vk()?,
            h: self.section(1, check)?,
            l: self.section(2, check)?,
            a: self.section(3, check)?,
            b_g1: self.section(4, check)?,
            b_g2: self.section(5, check)?,
        };
        let elapsed = start.elapsed();
        tracing::debug!(path = %self.path.display(), ?check, ?elapsed, "decoded SRS");
        Ok(srs)
    }
}

/// Reads a `.vk` file (a verifying key alone, as filecoin-proofs writes it).
pub fn read_vk(path: &Path) -> Result<VerifyingKeyPoints, SrsError> {
    let bytes = fs::read(path).map_err(io_err(path))?;
    let layout = parse_layout(path, &bytes, 1)?;
    decode_vk(path, &bytes, &layout)
}

/// Writes through a temporary file in the same directory, renamed over
/// `path` once complete and synced.
fn write_atomically(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<File>) -> Result<(), SrsError>,
) -> Result<(), SrsError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    name.push(format!(".tmp-{}-{seq}", std::process::id()));
    let tmp = path.with_file_name(name);
    let result = (|| {
        let file = File::create(&tmp).map_err(io_err(&tmp))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        f(&mut w)?;
        let file = w.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
        file.sync_all().map_err(io_err(&tmp))?;
        fs::rename(&tmp, path).map_err(io_err(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

const ENCODE_BATCH: usize = 1 << 16;

fn write_section<P: Point>(w: &mut impl Write, points: &[P]) -> Result<(), io::Error> {
    w.write_all(&(points.len() as u32).to_be_bytes())?;
    let mut buf = vec![0u8; ENCODE_BATCH.min(points.len()) * P::ENC];
    for batch in points.chunks(ENCODE_BATCH) {
        let buf = &mut buf[..batch.len() * P::ENC];
        buf.par_chunks_mut(P::ENC)
            .zip(batch)
            .for_each(|(o, p)| p.encode(o));
        w.write_all(buf)?;
    }
    Ok(())
}

fn check_count(section: Section, count: usize) -> Result<(), SrsError> {
    if count > u32::MAX as usize {
        return Err(SrsError::TooManyPoints { section, count });
    }
    Ok(())
}

/// Writes `srs` as a `.params` file byte-compatible with bellperson.
pub fn write_params(srs: &Srs, path: &Path) -> Result<(), SrsError> {
    let c = srs.counts();
    for (section, count) in [c.ic, c.h, c.l, c.a, c.b_g1, c.b_g2]
        .into_iter()
        .enumerate()
    {
        check_count(POINT_SECTIONS[section].0, count)?;
    }
    write_atomically(path, |w| {
        (|| {
            w.write_all(&srs.vk.to_bytes())?;
            write_section(w, &srs.h)?;
            write_section(w, &srs.l)?;
            write_section(w, &srs.a)?;
            write_section(w, &srs.b_g1)?;
            write_section(w, &srs.b_g2)?;
            w.flush()
        })()
        .map_err(io_err(path))
    })
}

/// Writes a `.vk` file: the verifying key as bellperson's
/// `VerifyingKey::write` (filecoin-proofs' parameter cache) writes it.
pub fn write_vk(vk: &VerifyingKeyPoints, path: &Path) -> Result<(), SrsError> {
    check_count(Section::Ic, vk.ic.len())?;
    write_atomically(path, |w| w.write_all(&vk.to_bytes()).map_err(io_err(path)))
}

fn sha256(data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    // SAFETY: blst reads `data.len()` bytes from `data` and writes 32 to `out`.
    unsafe { blst::blst_sha256(out.as_mut_ptr(), data.as_ptr(), data.len()) };
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The in-memory bytes of points.
fn raw_bytes<P: Point>(points: &[P]) -> &[u8] {
    // SAFETY: G1Affine / G2Affine are `repr(transparent)` wrappers of blst's
    // `repr(C)` affine points, plain `u64` limbs with no padding (sizes are
    // asserted above), so every byte is initialised.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast::<u8>(), mem::size_of_val(points)) }
}
