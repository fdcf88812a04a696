//! Compiled constraint systems on disk.
//!
//! One file per shape (`<dir>/<key>.r1cs`), written to a temporary name and
//! renamed into place, ending with the SHA-256 of everything before it. A
//! file is read whole, its digest checked, every length checked against
//! the bytes left before anything is allocated for it, and the result
//! [validated](CompiledCs::validate), so a truncated, corrupted or foreign
//! file is an error (and [`load_or_record`] records the shape again),
//! never a panic or a wrong witness. The densities follow from the
//! matrices and are computed again on load rather than stored.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use blstrs::Scalar;
use cuzk_prover::Density;
use sha2::{Digest, Sha256};

use crate::compiled::{Checkpoint, CompiledCs, CompiledError, Instance, Segment};

const MAGIC: &[u8; 8] = b"CUZKR1CS";
/// Bumped whenever the encoding or the recording rules change.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

/// The file holding `key`'s system in `dir` (the key's characters other
/// than letters, digits, `-` and `_` become `_`).
pub fn path_for(dir: &Path, key: &str) -> PathBuf {
    let name: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{name}.r1cs"))
}

fn encode(cs: &CompiledCs) -> Vec<u8> {
    let mut out = Vec::with_capacity(cs.bytes() as usize + 1024);
    let u64s = |out: &mut Vec<u8>, vs: &[u64]| {
        vs.iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()))
    };
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    u64s(&mut out, &[cs.key.len() as u64]);
    out.extend_from_slice(cs.key.as_bytes());
    u64s(
        &mut out,
        &[cs.inputs, cs.aux, cs.rows, cs.coeffs.len() as u64],
    );
    for c in &cs.coeffs {
        out.extend_from_slice(&c.to_bytes_le());
    }
    u64s(&mut out, &[cs.segments.len() as u64]);
    for s in &cs.segments {
        u64s(&mut out, &[s.rows, s.aux, s.inputs, s.bytes.len() as u64]);
        out.extend_from_slice(&s.bytes);
        u64s(&mut out, &[s.checkpoints.len() as u64]);
        for cp in &s.checkpoints {
            u64s(&mut out, &[cp.pos, cp.cursor]);
        }
    }
    u64s(&mut out, &[cs.instances.len() as u64]);
    for i in &cs.instances {
        u64s(
            &mut out,
            &[u64::from(i.segment), i.aux_base, i.input_base, i.row_base],
        );
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

/// Writes `cs` to `path` atomically (a temporary file renamed into place).
pub fn save(cs: &CompiledCs, path: &Path) -> Result<(), FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension(format!("r1cs.tmp-{}", std::process::id()));
    let bytes = encode(cs);
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io(e)
    })
}

/// A bounds-checked reader over the file's bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        let n = usize::try_from(n).map_err(|_| "length too large")?;
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or("truncated")?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// A count of items of `each` bytes, checked against the bytes left.
    fn count(&mut self, each: u64) -> Result<usize, String> {
        let n = self.u64()?;
        let left = (self.buf.len() - self.pos) as u64;
        if n.checked_mul(each).is_none_or(|b| b > left) {
            return Err(format!("count {n} exceeds the file"));
        }
        Ok(n as usize)
    }
}

fn decode(body: &[u8]) -> Result<CompiledCs, String> {
    let mut r = Reader { buf: body, pos: 0 };
    if r.take(8)? != MAGIC {
        return Err("not a compiled constraint system".into());
    }
    let version = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        ));
    }
    let key_len = r.count(1)?;
    let key =
        String::from_utf8(r.take(key_len as u64)?.to_vec()).map_err(|_| "key is not UTF-8")?;
    let (inputs, aux, rows) = (r.u64()?, r.u64()?, r.u64()?);
    let n = r.count(32)?;
    let mut coeffs = Vec::with_capacity(n);
    for _ in 0..n {
        let b: [u8; 32] = r.take(32)?.try_into().expect("32 bytes");
        coeffs.push(
            Option::<Scalar>::from(Scalar::from_bytes_le(&b))
                .ok_or("coefficient out of the field")?,
        );
    }
    let n = r.count(32)?;
    let mut segments = Vec::with_capacity(n);
    for _ in 0..n {
        let (rows, aux, inputs) = (r.u64()?, r.u64()?, r.u64()?);
        let len = r.count(1)?;
        let bytes = r.take(len as u64)?.to_vec();
        let m = r.count(16)?;
        let mut checkpoints = Vec::with_capacity(m);
        for _ in 0..m {
            checkpoints.push(Checkpoint {
                pos: r.u64()?,
                cursor: r.u64()?,
            });
        }
        segments.push(Segment {
            rows,
            aux,
            inputs,
            bytes,
            checkpoints,
        });
    }
    let n = r.count(32)?;
    let mut instances = Vec::with_capacity(n);
    for _ in 0..n {
        let segment = u32::try_from(r.u64()?).map_err(|_| "segment index too large")?;
        instances.push(Instance {
            segment,
            aux_base: r.u64()?,
            input_base: r.u64()?,
            row_base: r.u64()?,
        });
    }
    if r.pos != body.len() {
        return Err("bytes after the instances".into());
    }
    let mut cs = CompiledCs {
        key,
        inputs,
        aux,
        rows,
        coeffs,
        segments,
        instances,
        a_aux_density: Density::new(),
        b_input_density: Density::new(),
        b_aux_density: Density::new(),
    };
    cs.validate().map_err(|e: CompiledError| e.to_string())?;
    // Derived from the matrices, so not stored (nor trusted from a file).
    cs.compute_densities();
    Ok(cs)
}

/// Reads and checks the system at `path`; it must be `key`'s.
pub fn load(path: &Path, key: &str) -> Result<CompiledCs, FileError> {
    let bytes = fs::read(path).map_err(|source| FileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let invalid = |reason: String| FileError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() < 32 {
        return Err(invalid("truncated".into()));
    }
    let (body, digest) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != digest {
        return Err(invalid(
            "digest mismatch (corrupted or partly written)".into(),
        ));
    }
    let cs = decode(body).map_err(invalid)?;
    if cs.key != key {
        return Err(invalid(format!("holds {}, not {key}", cs.key)));
    }
    Ok(cs)
}

/// `key`'s system from `dir` when a valid file is there; otherwise records
/// it with `record` and saves it (a failed save is logged, not fatal).
/// The flag says whether it was recorded.
pub fn load_or_record<E>(
    dir: &Path,
    key: &str,
    record: impl FnOnce() -> Result<CompiledCs, E>,
) -> Result<(CompiledCs, bool), E> {
    let path = path_for(dir, key);
    match load(&path, key) {
        Ok(cs) => return Ok((cs, false)),
        Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("recording the constraint system again: {e}"),
    }
    let cs = record()?;
    if let Err(e) = save(&cs, &path) {
        tracing::warn!("could not keep the compiled constraint system: {e}");
    }
    Ok((cs, true))
}
