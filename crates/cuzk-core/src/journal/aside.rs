//! Payloads set aside for salvage: a damaged journal's, and those a
//! journal created afresh finds in `payloads/` (a journal file deleted, or
//! a set-aside that stopped half way).
//!
//! They go to `payloads.corrupt-<unix ms>` beside the journal. Every open
//! offers what is left in every such directory ([`salvage_files`]), so a
//! payload that could not be queued again (a full queue, no device, a
//! journal error, a crash) is tried again at the next start. A payload
//! leaves such a directory only once it is journaled again or found
//! undecodable ([`Journal::drop_salvaged`]), and an empty one is removed.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::warn;

use super::{Journal, DB};

/// The name of a set-aside payload directory, before its stamp.
const PREFIX: &str = "payloads.corrupt-";

fn stamp() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("corrupt-{ms}")
}

/// Moves a damaged journal out of the way, its payloads first and the
/// database file last: a failure part way leaves the database where the
/// next start finds it damaged again (and sets aside what is left), never
/// a fresh database beside the old payloads. Returns where the database
/// went.
pub(super) fn set_aside(dir: &Path, db: &Path) -> std::io::Result<PathBuf> {
    let stamp = stamp();
    move_payloads(dir, &stamp)?;
    let aside = dir.join(format!("{DB}.{stamp}"));
    for suffix in ["-wal", "-shm", ""] {
        let from = PathBuf::from(format!("{}{suffix}", db.display()));
        if from.exists() {
            fs::rename(&from, format!("{}{suffix}", aside.display()))?;
        }
    }
    Ok(aside)
}

/// For a journal database just created: payloads already in `payloads/`
/// name no row of it, and new jobs would reuse their sequence numbers.
/// They are set aside for salvage, not deleted. Returns whether any were.
pub(super) fn set_aside_strays(dir: &Path) -> std::io::Result<bool> {
    let payloads = dir.join("payloads");
    if fs::read_dir(&payloads)?.next().is_none() {
        return Ok(false);
    }
    move_payloads(dir, &stamp())?;
    Ok(true)
}

/// Renames `payloads/` to `payloads.<stamp>` and makes a new, empty one.
fn move_payloads(dir: &Path, stamp: &str) -> std::io::Result<()> {
    let payloads = dir.join("payloads");
    if payloads.exists() {
        fs::rename(&payloads, dir.join(format!("payloads.{stamp}")))?;
    }
    fs::create_dir_all(&payloads)
}

/// Every payload (`<seq>.req`) left in the set-aside payload directories
/// of `dir`, oldest directory first, each in sequence order. Incomplete
/// writes (`*.tmp`, never acknowledged) are deleted, and directories left
/// empty removed.
pub(super) fn salvage_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<(u128, PathBuf)> = read
        .flatten()
        .filter(|f| f.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|f| {
            let name = f.file_name().to_string_lossy().into_owned();
            Some((name.strip_prefix(PREFIX)?.parse().ok()?, f.path()))
        })
        .collect();
    dirs.sort();
    let mut files = Vec::new();
    for (_, d) in dirs {
        remove_incomplete(&d);
        let found = payload_files(&d);
        if found.is_empty() {
            remove_if_empty(&d);
        }
        files.extend(found);
    }
    files
}

fn remove_incomplete(dir: &Path) {
    let Ok(read) = fs::read_dir(dir) else {
        return;
    };
    for f in read.flatten() {
        if f.path().extension().is_some_and(|e| e == "tmp") {
            if let Err(e) = fs::remove_file(f.path()) {
                warn!(file = %f.path().display(), "cannot remove an incomplete payload: {e}");
            }
        }
    }
}

fn remove_if_empty(dir: &Path) {
    if fs::read_dir(dir).is_ok_and(|mut r| r.next().is_none()) {
        if let Err(e) = fs::remove_dir(dir) {
            warn!(dir = %dir.display(), "cannot remove an emptied salvage directory: {e}");
        }
    }
}

/// The complete payload files (`<seq>.req`) in `dir`, in sequence order.
pub(super) fn payload_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(u64, PathBuf)> = read
        .flatten()
        .filter_map(|f| {
            let name = f.file_name().to_string_lossy().into_owned();
            let seq = name.strip_suffix(".req")?.parse().ok()?;
            Some((seq, f.path()))
        })
        .collect();
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}

impl Journal {
    /// Deletes a payload offered for salvage ([`super::Opened::salvage`])
    /// once it is journaled again or cannot be decoded, and its directory
    /// once that is empty.
    pub fn drop_salvaged(path: &Path) {
        if let Err(e) = fs::remove_file(path) {
            warn!(payload = %path.display(), "cannot remove a salvaged payload: {e}");
        }
        if let Some(d) = path.parent() {
            let set_aside = d
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX));
            if set_aside {
                remove_if_empty(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::journal::tests::{corrupt, entry, raw};

    fn open(dir: &Path) -> super::super::Opened {
        Journal::open(dir, Duration::from_secs(60)).unwrap()
    }

    fn aside_dirs(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|f| f.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(PREFIX))
            .collect()
    }

    #[test]
    fn set_aside_payloads_are_offered_at_every_open_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        {
            let o = open(dir.path());
            o.journal.submitted(&entry(1, "a"), &raw("a")).unwrap();
            o.journal.submitted(&entry(2, "b"), &raw("b")).unwrap();
        }
        corrupt(dir.path());
        let o = open(dir.path());
        assert!(o.set_aside.is_some());
        assert_eq!(o.salvage.len(), 2, "{:?}", o.salvage);
        drop(o);
        // Not queued again (a full queue, a crash): offered again.
        let o = open(dir.path());
        assert!(o.set_aside.is_none());
        assert_eq!(o.salvage.len(), 2, "{:?}", o.salvage);
        assert_eq!(Journal::read_payload(&o.salvage[1]).unwrap(), raw("b"));
        Journal::drop_salvaged(&o.salvage[0]);
        drop(o);
        let o = open(dir.path());
        assert_eq!(o.salvage.len(), 1, "{:?}", o.salvage);
        assert_eq!(Journal::read_payload(&o.salvage[0]).unwrap(), raw("b"));
        Journal::drop_salvaged(&o.salvage[0]);
        assert!(
            aside_dirs(dir.path()).is_empty(),
            "the emptied directory stays"
        );
        drop(o);
        assert!(open(dir.path()).salvage.is_empty());
    }

    #[test]
    fn a_new_database_sets_the_payloads_it_finds_aside() {
        let dir = tempfile::tempdir().unwrap();
        {
            let o = open(dir.path());
            o.journal.submitted(&entry(1, "a"), &raw("a")).unwrap();
        }
        // The database went (deleted, or moved by a set-aside that stopped
        // before its payloads): they are not deleted as orphans.
        for suffix in ["", "-wal", "-shm"] {
            let _ = fs::remove_file(dir.path().join(format!("{DB}{suffix}")));
        }
        let o = open(dir.path());
        assert_eq!(o.salvage.len(), 1, "{:?}", o.salvage);
        assert_eq!(Journal::read_payload(&o.salvage[0]).unwrap(), raw("a"));
        assert!(payload_files(&dir.path().join("payloads")).is_empty());
        // A new job takes sequence number 1 again without touching it.
        o.journal.submitted(&entry(1, "c"), &raw("c")).unwrap();
        assert_eq!(Journal::read_payload(&o.salvage[0]).unwrap(), raw("a"));
    }

    #[test]
    fn incomplete_payloads_and_empty_directories_are_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join(format!("{PREFIX}5"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("3.tmp"), b"half").unwrap();
        drop(open(dir.path()));
        assert!(aside_dirs(dir.path()).is_empty());
    }
}
