//! The warm SRS form: points in blstrs' in-memory representation, mapped
//! and used in place.

use std::io::{Seek, Write};
use std::mem;
use std::path::{Path, PathBuf};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use memmap2::Mmap;
use rayon::prelude::*;

use super::{
    decode_vk, hex, io_err, map_file, parse_layout, raw_bytes, sha256, write_atomically, Point,
    Section, SectionCounts, Srs, SrsError, SubgroupCheck, VerifyingKeyPoints, VkFingerprint,
    POINT_SECTIONS,
};

// The warm format (all integers little-endian):
//   0  magic "CUZKWARM" | 8 version u32 | 12 sizes of G1Affine, G2Affine u32
//   20 canary: in-memory bytes of the G1 and G2 generators (96 + 192)
//   308 counts ic, h, l, a, b_g1, b_g2 u64 | 356 offsets vk, h, l, a, b_g1, b_g2 u64
//   404 vk length u64 | 412 file length u64 | 420 vk fingerprint [32]
//   452 content digest [32] | 484 SHA-256 of bytes 0..484 [32] | 516 end
// then the vk (bellperson serialization), then the sections, each starting
// at a multiple of WARM_ALIGN.
const WARM_MAGIC: &[u8; 8] = b"CUZKWARM";
const WARM_VERSION: u32 = 1;
pub(super) const WARM_HEADER: usize = 516;
const WARM_ALIGN: usize = 4096;
const DIGEST_CHUNK: usize = 16 << 20;

fn align_up(x: usize) -> usize {
    x.div_ceil(WARM_ALIGN) * WARM_ALIGN
}

/// SHA-256 over the per-section SHA-256s of 16 MiB chunk SHA-256s
/// (parallel).
fn content_digest(sections: [&[u8]; 5]) -> [u8; 32] {
    let mut all = Vec::with_capacity(5 * 32);
    for s in sections {
        let chunks: Vec<[u8; 32]> = s.par_chunks(DIGEST_CHUNK).map(sha256).collect();
        all.extend_from_slice(&sha256(chunks.as_flattened()));
    }
    sha256(&all)
}

fn canary() -> Vec<u8> {
    let mut v = raw_bytes(&[G1Affine::generator()]).to_vec();
    v.extend_from_slice(raw_bytes(&[G2Affine::generator()]));
    v
}

/// Writes `srs` in the warm form, atomically.
pub fn write_warm(srs: &Srs, path: &Path) -> Result<(), SrsError> {
    let vk = srs.vk.to_bytes();
    let sections = [
        raw_bytes(&srs.h),
        raw_bytes(&srs.l),
        raw_bytes(&srs.a),
        raw_bytes(&srs.b_g1),
        raw_bytes(&srs.b_g2),
    ];
    let sizes = sections.map(<[u8]>::len);
    let (offsets, end) = layout(vk.len(), sizes);
    let h = header(&srs.counts(), &offsets, &vk, end, &content_digest(sections));
    write_atomically(path, |w| {
        (|| {
            w.write_all(&h)?;
            w.write_all(&vk)?;
            let mut pos = WARM_HEADER + vk.len();
            for (s, off) in sections.iter().zip(&offsets[1..]) {
                w.write_all(&vec![0u8; off - pos])?;
                w.write_all(s)?;
                pos = off + s.len();
            }
            w.flush()
        })()
        .map_err(io_err(path))
    })
}

/// Offsets of the vk and the five sections, and the file length, for a vk
/// of `vk_len` bytes and sections of `sizes` bytes.
fn layout(vk_len: usize, sizes: [usize; 5]) -> ([usize; 6], usize) {
    let mut offsets = [0usize; 6];
    offsets[0] = WARM_HEADER;
    let mut end = WARM_HEADER + vk_len;
    for (i, size) in sizes.iter().enumerate() {
        offsets[i + 1] = align_up(end);
        end = offsets[i + 1] + size;
    }
    (offsets, end)
}

/// The warm header (see the format above).
fn header(
    c: &SectionCounts,
    offsets: &[usize; 6],
    vk: &[u8],
    end: usize,
    digest: &[u8; 32],
) -> Vec<u8> {
    let mut h = Vec::with_capacity(WARM_HEADER);
    h.extend_from_slice(WARM_MAGIC);
    h.extend_from_slice(&WARM_VERSION.to_le_bytes());
    h.extend_from_slice(&(mem::size_of::<G1Affine>() as u32).to_le_bytes());
    h.extend_from_slice(&(mem::size_of::<G2Affine>() as u32).to_le_bytes());
    h.extend_from_slice(&canary());
    for n in [c.ic, c.h, c.l, c.a, c.b_g1, c.b_g2]
        .into_iter()
        .chain(offsets.iter().copied())
    {
        h.extend_from_slice(&(n as u64).to_le_bytes());
    }
    h.extend_from_slice(&(vk.len() as u64).to_le_bytes());
    h.extend_from_slice(&(end as u64).to_le_bytes());
    h.extend_from_slice(&sha256(vk));
    h.extend_from_slice(digest);
    h.extend_from_slice(&sha256(&h));
    debug_assert_eq!(h.len(), WARM_HEADER);
    h
}

/// G1 points decoded per step of [`write_warm_streaming`] (48 MiB).
const STREAM_G1: usize = 1 << 19;

/// Writes the warm form of a `.params` file without holding its points:
/// each section is decoded a chunk at a time (`check` as
/// [`ParamsFile::decode`](super::ParamsFile::decode)) and written through,
/// so memory stays at a chunk whatever the SRS's size. The result equals
/// [`write_warm`] of the decoded SRS.
pub fn write_warm_streaming(
    file: &super::ParamsFile,
    path: &Path,
    check: SubgroupCheck,
) -> Result<(), SrsError> {
    write_warm_in_steps(file, path, check, STREAM_G1)
}

fn write_warm_in_steps(
    file: &super::ParamsFile,
    path: &Path,
    check: SubgroupCheck,
    step: usize,
) -> Result<(), SrsError> {
    let vk = file.vk_bytes().to_vec();
    let counts = file.counts();
    let (g1, g2) = (mem::size_of::<G1Affine>(), mem::size_of::<G2Affine>());
    let sizes = [
        counts.h * g1,
        counts.l * g1,
        counts.a * g1,
        counts.b_g1 * g1,
        counts.b_g2 * g2,
    ];
    let (offsets, end) = layout(vk.len(), sizes);
    let io = |source| SrsError::Io {
        path: path.to_path_buf(),
        source,
    };
    write_atomically(path, |w| {
        w.write_all(&[0u8; WARM_HEADER]).map_err(io)?;
        w.write_all(&vk).map_err(io)?;
        let mut pos = WARM_HEADER + vk.len();
        let mut digests = Vec::with_capacity(5 * 32);
        for (i, off) in offsets[1..].iter().enumerate() {
            w.write_all(&vec![0u8; off - pos]).map_err(io)?;
            let mut chunks = ChunkDigests::default();
            if i == 4 {
                stream_section::<G2Affine>(file, i + 1, step.div_ceil(2), check, w, &mut chunks)?;
            } else {
                stream_section::<G1Affine>(file, i + 1, step, check, w, &mut chunks)?;
            }
            digests.extend_from_slice(&chunks.finish());
            pos = off + sizes[i];
        }
        let h = header(&counts, &offsets, &vk, end, &sha256(&digests));
        w.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
        w.write_all(&h).map_err(io)?;
        w.flush().map_err(io)
    })
}

/// A section's digest as [`content_digest`] computes it, over bytes that
/// arrive in pieces of any size.
#[derive(Default)]
struct ChunkDigests {
    pending: Vec<u8>,
    chunks: Vec<[u8; 32]>,
}

impl ChunkDigests {
    fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let full = self.pending.len() / DIGEST_CHUNK * DIGEST_CHUNK;
        if full > 0 {
            self.chunks.extend(
                self.pending[..full]
                    .par_chunks(DIGEST_CHUNK)
                    .map(sha256)
                    .collect::<Vec<_>>(),
            );
            self.pending.drain(..full);
        }
    }

    fn finish(mut self) -> [u8; 32] {
        if !self.pending.is_empty() {
            self.chunks.push(sha256(&self.pending));
        }
        sha256(self.chunks.as_flattened())
    }
}

/// Decodes section `i` of `file` `step` points at a time into `w`.
fn stream_section<P: Point>(
    file: &super::ParamsFile,
    i: usize,
    step: usize,
    check: SubgroupCheck,
    w: &mut impl Write,
    digest: &mut ChunkDigests,
) -> Result<(), SrsError> {
    let (off, n) = file.layout.sections[i];
    for start in (0..n).step_by(step.max(1)) {
        let count = step.min(n - start);
        let bytes = &file.map[off + start * P::ENC..off + (start + count) * P::ENC];
        let points: Vec<P> = super::decode_points(bytes, check, false).map_err(|(at, e)| {
            super::point_err(&file.path, POINT_SECTIONS[i].0)((start + at, e))
        })?;
        let raw = raw_bytes(&points);
        digest.push(raw);
        w.write_all(raw).map_err(io_err(&file.path))?;
    }
    Ok(())
}

#[cfg(test)]
pub(super) fn write_warm_in_small_steps(
    file: &super::ParamsFile,
    path: &Path,
    step: usize,
) -> Result<(), SrsError> {
    write_warm_in_steps(file, path, SubgroupCheck::Full, step)
}

/// A warm SRS file, mapped: its sections are used in place. The file must
/// not be modified while mapped; [`write_warm`] replaces files by rename, so
/// maps of the old file stay valid.
pub struct WarmSrs {
    path: PathBuf,
    map: Mmap,
    vk: VerifyingKeyPoints,
    fingerprint: VkFingerprint,
    digest: [u8; 32],
    counts: SectionCounts,
    /// Byte offsets of h, l, a, b_g1, b_g2.
    offsets: [usize; 5],
}

impl WarmSrs {
    /// Maps `path` and validates its header, sizes, alignment and verifying
    /// key; the points themselves are not read (see [`Self::verify`]).
    pub fn open(path: &Path) -> Result<WarmSrs, SrsError> {
        let bad = |reason: String| SrsError::BadWarm {
            path: path.to_path_buf(),
            reason,
        };
        let map = map_file(path)?;
        if map.len() < WARM_HEADER {
            return Err(bad(format!("{} bytes, shorter than its header", map.len())));
        }
        if &map[..8] != WARM_MAGIC {
            return Err(bad("bad magic".into()));
        }
        let u32_at =
            |at: usize| u32::from_le_bytes([map[at], map[at + 1], map[at + 2], map[at + 3]]);
        let u64_at = |at: usize| {
            let v = u64::from_le_bytes(map[at..at + 8].try_into().unwrap_or_default());
            usize::try_from(v).unwrap_or(usize::MAX)
        };
        if u32_at(8) != WARM_VERSION {
            return Err(bad(format!(
                "format version {}, expected {WARM_VERSION}",
                u32_at(8)
            )));
        }
        if sha256(&map[..WARM_HEADER - 32]) != map[WARM_HEADER - 32..WARM_HEADER] {
            return Err(bad("header checksum mismatch".into()));
        }
        let sizes = (u32_at(12) as usize, u32_at(16) as usize);
        if sizes != (mem::size_of::<G1Affine>(), mem::size_of::<G2Affine>())
            || map[20..308] != canary()
        {
            return Err(bad(
                "written with a different in-memory point representation".into(),
            ));
        }
        let c: [usize; 6] = std::array::from_fn(|i| u64_at(308 + 8 * i));
        let off: [usize; 6] = std::array::from_fn(|i| u64_at(356 + 8 * i));
        let (vk_len, file_len) = (u64_at(404), u64_at(412));
        if file_len != map.len() {
            return Err(bad(format!(
                "header says {file_len} bytes, file has {}",
                map.len()
            )));
        }
        if off[0] != WARM_HEADER || vk_len > map.len() - WARM_HEADER {
            return Err(bad("verifying key out of bounds".into()));
        }
        let mut end = WARM_HEADER + vk_len;
        for (i, &(section, _)) in POINT_SECTIONS[1..].iter().enumerate() {
            let size = if section == Section::BG2 {
                mem::size_of::<G2Affine>()
            } else {
                mem::size_of::<G1Affine>()
            };
            let (o, n) = (off[i + 1], c[i + 1]);
            let sec_end = n.checked_mul(size).and_then(|b| b.checked_add(o));
            match sec_end {
                Some(e) if o % WARM_ALIGN == 0 && o >= end && e <= map.len() => end = e,
                _ => {
                    return Err(bad(format!(
                        "section `{section}` ({n} points at {o}) misplaced"
                    )))
                }
            }
        }
        if end != map.len() || map.as_ptr() as usize % WARM_ALIGN != 0 {
            return Err(bad(
                "sections do not end the file, or the map is misaligned".into(),
            ));
        }
        let vk_bytes = &map[WARM_HEADER..WARM_HEADER + vk_len];
        let fingerprint: VkFingerprint = map[420..452].try_into().unwrap_or_default();
        if sha256(vk_bytes) != fingerprint {
            return Err(bad("verifying key does not match its fingerprint".into()));
        }
        let layout = parse_layout(path, vk_bytes, 1)?;
        let vk = decode_vk(path, vk_bytes, &layout)?;
        if vk.ic.len() != c[0] {
            return Err(bad("ic count mismatch".into()));
        }
        let counts = SectionCounts {
            ic: c[0],
            h: c[1],
            l: c[2],
            a: c[3],
            b_g1: c[4],
            b_g2: c[5],
        };
        let digest = map[452..484].try_into().unwrap_or_default();
        let offsets = [off[1], off[2], off[3], off[4], off[5]];
        Ok(WarmSrs {
            path: path.to_path_buf(),
            map,
            vk,
            fingerprint,
            digest,
            counts,
            offsets,
        })
    }

    /// Opens `path`, refusing it as stale unless its verifying key has the
    /// `expected` fingerprint ([`super::ParamsFile::vk_fingerprint`]).
    pub fn open_expecting(path: &Path, expected: &VkFingerprint) -> Result<WarmSrs, SrsError> {
        let warm = Self::open(path)?;
        if &warm.fingerprint != expected {
            return Err(SrsError::StaleWarm {
                path: path.to_path_buf(),
                expected: hex(expected),
                found: hex(&warm.fingerprint),
            });
        }
        Ok(warm)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn vk(&self) -> &VerifyingKeyPoints {
        &self.vk
    }

    pub fn vk_fingerprint(&self) -> VkFingerprint {
        self.fingerprint
    }

    pub fn counts(&self) -> SectionCounts {
        self.counts
    }

    fn slice<P: Point>(&self, i: usize, n: usize) -> &[P] {
        // SAFETY: `open` checked that the range lies in the map and is
        // WARM_ALIGN-aligned (the map is page-aligned), and any bytes are a
        // valid value of these plain-limb types; the map lives as long as
        // `self`.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.offsets[i]).cast::<P>(), n) }
    }

    pub fn h(&self) -> &[G1Affine] {
        self.slice(0, self.counts.h)
    }

    pub fn l(&self) -> &[G1Affine] {
        self.slice(1, self.counts.l)
    }

    pub fn a(&self) -> &[G1Affine] {
        self.slice(2, self.counts.a)
    }

    pub fn b_g1(&self) -> &[G1Affine] {
        self.slice(3, self.counts.b_g1)
    }

    pub fn b_g2(&self) -> &[G2Affine] {
        self.slice(4, self.counts.b_g2)
    }

    /// Bytes mapped.
    pub fn bytes(&self) -> u64 {
        self.map.len() as u64
    }

    /// Reads every point: checks the content digest recorded when the file
    /// was written and, with [`SubgroupCheck::Full`], that each point is on
    /// the curve, in the subgroup and not the identity.
    pub fn verify(&self, check: SubgroupCheck) -> Result<(), SrsError> {
        let sections = [
            raw_bytes(self.h()),
            raw_bytes(self.l()),
            raw_bytes(self.a()),
            raw_bytes(self.b_g1()),
            raw_bytes(self.b_g2()),
        ];
        if content_digest(sections) != self.digest {
            let reason = "content digest mismatch: the file is corrupt".into();
            return Err(SrsError::BadWarm {
                path: self.path.clone(),
                reason,
            });
        }
        if check == SubgroupCheck::Full {
            fn scan<P: Point>(w: &WarmSrs, section: Section, points: &[P]) -> Result<(), SrsError> {
                let found = points
                    .par_iter()
                    .enumerate()
                    .find_map_first(|(i, p)| p.problem().map(|r| (i, r)));
                found.map_or(Ok(()), |(index, reason)| {
                    Err(SrsError::InvalidPoint {
                        path: w.path.clone(),
                        section,
                        index,
                        reason,
                    })
                })
            }
            scan(self, Section::H, self.h())?;
            scan(self, Section::L, self.l())?;
            scan(self, Section::A, self.a())?;
            scan(self, Section::BG1, self.b_g1())?;
            scan(self, Section::BG2, self.b_g2())?;
        }
        Ok(())
    }

    /// Copies the points into a [`Srs`].
    pub fn to_srs(&self) -> Srs {
        Srs {
            vk: self.vk.clone(),
            h: self.h().to_vec(),
            l: self.l().to_vec(),
            a: self.a().to_vec(),
            b_g1: self.b_g1().to_vec(),
            b_g2: self.b_g2().to_vec(),
        }
    }
}
