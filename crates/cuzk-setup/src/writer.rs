//! Writing a `.params` file piece by piece, atomically.
//!
//! [`ParamsWriter`] writes into `<name>.tmp-<pid>-<seq>` next to the target
//! and, on [`ParamsWriter::finish`], syncs it and renames it over the
//! target, as `cuzk_prover::srs::write_params` does for a whole file; a
//! writer dropped unfinished removes its temporary file. Temporaries of
//! processes that died (an interrupted generation of a 47 GiB file leaves
//! one behind) are removed by [`remove_stale_temporaries`].

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::SetupError;

/// A `.params` file being written.
pub struct ParamsWriter {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
    written: u64,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SetupError + '_ {
    move |source| SetupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `<file name>.tmp-`: the prefix of `path`'s temporaries.
fn tmp_prefix(path: &Path) -> OsString {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp-");
    name
}

impl ParamsWriter {
    /// Creates the temporary file of `path`.
    pub fn create(path: &Path) -> Result<ParamsWriter, SetupError> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let mut name = tmp_prefix(path);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        name.push(format!("{}-{seq}", std::process::id()));
        let tmp = path.with_file_name(name);
        let file = File::create(&tmp).map_err(io_err(&tmp))?;
        Ok(ParamsWriter {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(1 << 20, file)),
            written: 0,
        })
    }

    /// Appends `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), SetupError> {
        let out = self.out.as_mut().expect("not finished");
        out.write_all(bytes).map_err(io_err(&self.tmp))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes, syncs and renames the file into place.
    pub fn finish(mut self) -> Result<(), SetupError> {
        let out = self.out.take().expect("not finished");
        let file = out
            .into_inner()
            .map_err(|e| io_err(&self.tmp)(e.into_error()))?;
        file.sync_all().map_err(io_err(&self.tmp))?;
        drop(file);
        fs::rename(&self.tmp, &self.path).map_err(io_err(&self.path))?;
        Ok(())
    }
}

impl Drop for ParamsWriter {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Removes `path`'s temporaries (`<name>.tmp-<pid>-<seq>`) whose process is
/// gone; returns how many bytes that freed. Temporaries of live processes,
/// this one included, are left alone.
pub fn remove_stale_temporaries(path: &Path) -> u64 {
    let (Some(dir), prefix) = (path.parent(), tmp_prefix(path)) else {
        return 0;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let prefix = prefix.to_string_lossy().into_owned();
    let mut freed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
        if fs::remove_file(entry.path()).is_ok() {
            tracing::info!(path = %entry.path().display(), bytes = len, "removed a stale temporary");
            freed += len;
        }
    }
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_files_are_renamed_and_abandoned_ones_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.params");
        let mut w = ParamsWriter::create(&path).expect("create");
        w.write(b"abc").expect("write");
        w.write(b"de").expect("write");
        assert_eq!(w.written(), 5);
        w.finish().expect("finish");
        assert_eq!(fs::read(&path).expect("read"), b"abcde");

        let mut w = ParamsWriter::create(&path).expect("create");
        w.write(b"partial").expect("write");
        drop(w);
        assert_eq!(fs::read(&path).expect("read"), b"abcde");
        assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 1);
    }

    #[test]
    fn only_dead_processes_temporaries_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.params");
        // No pid is above the kernel's pid_max (at most 2^22).
        let dead = dir.path().join("x.params.tmp-4294967295-0");
        let ours = dir
            .path()
            .join(format!("x.params.tmp-{}-7", std::process::id()));
        let other = dir.path().join("y.params.tmp-4294967295-0");
        for p in [&dead, &ours, &other] {
            fs::write(p, b"1234").expect("write");
        }
        assert_eq!(remove_stale_temporaries(&path), 4);
        assert!(!dead.exists() && ours.exists() && other.exists());
    }
}
