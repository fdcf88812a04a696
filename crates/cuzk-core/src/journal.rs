//! The job journal: every accepted job with its request, on disk, so that a
//! crash, an OOM kill or `kill -9` loses no accepted job and proves no
//! completed one twice.
//!
//! Under `daemon.state_dir`:
//! - `journal.sqlite` (SQLite, WAL, `synchronous = FULL`): one small row per
//!   job — submission sequence, job id, kind, registered proof, priority,
//!   request digest, state, and once finished the proof or the error.
//! - `payloads/<seq>.req`: the job's request (bincode [`RawRequest`]),
//!   written once (temporary name, fsync, rename) before its row, deleted
//!   when the job ends. Payloads of tens of MB are thus written once, and
//!   the rows a job's life updates stay small.
//! - `lock`: held exclusively while the journal is open, so two daemons
//!   cannot share one state dir.
//!
//! A journal file that fails its integrity check (corrupt, truncated) is
//! reported, renamed to `journal.sqlite.corrupt-<unix ms>` with its
//! payloads (`payloads.corrupt-<unix ms>`, moved first), and replaced by
//! an empty one. Every open hands back the payloads left in such
//! directories as [`Opened::salvage`] to be queued again, until each is
//! journaled again or found undecodable (`journal/aside.rs`); a database
//! created afresh sets aside the payloads it finds the same way. One
//! damaged row fails that job alone (its row is rewritten as failed,
//! naming the row). A journal that cannot be used for any other
//! reason — an I/O or permission error, a full disk, a busy database, a
//! schema newer than this daemon's — is refused: nothing is touched and
//! the daemon does not start.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use fs2::FileExt;
use rusqlite::{params, Connection, OptionalExtension};
use tracing::{error, info, warn};

pub use crate::clock::unix_now;
use crate::job::JobStatus;
use crate::kinds::{Priority, ProofKind};
use crate::request::{kind_to_wire, RawRequest, RequestDigest};

mod aside;
mod rows;

const DB: &str = "journal.sqlite";
const SCHEMA: i64 = 1;

/// Why the journal could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("daemon.state_dir {0}: {1}")]
    Dir(PathBuf, std::io::Error),
    #[error(
        "daemon.state_dir {0} is in use by another cuzk-daemon (its lock file is held); \
         give each daemon its own state_dir"
    )]
    Locked(PathBuf),
    #[error("journal {0}: {1}")]
    Store(PathBuf, String),
    #[error(
        "journal {0} cannot be used: {1}; nothing was changed (free the disk, fix the \
         permissions, or run the cuzk version that wrote it)"
    )]
    Refused(PathBuf, String),
    #[error("journal payload {0}: {1}")]
    Payload(PathBuf, String),
    /// Writing a PoRep or SnapDeals request would leave less free space on
    /// the journal's disk than the reserve kept for PoSt.
    #[error(
        "the journal's disk ({dir}) has {free} free; this {kind} request's {need} would leave \
         less than the {reserve} kept for WindowPoSt and WinningPoSt \
         (daemon.journal_disk_reserve): free disk space, then submit it again"
    )]
    DiskFull {
        dir: PathBuf,
        kind: ProofKind,
        free: bytesize::ByteSize,
        need: bytesize::ByteSize,
        reserve: bytesize::ByteSize,
    },
}

/// A job's state in the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryState {
    /// Accepted and not finished: re-queued on start.
    Queued,
    Ended(JobStatus),
}

impl EntryState {
    fn to_db(self) -> i64 {
        match self {
            EntryState::Queued => 0,
            EntryState::Ended(JobStatus::Completed) => 1,
            EntryState::Ended(JobStatus::Failed) => 2,
            EntryState::Ended(JobStatus::Cancelled) => 3,
        }
    }

    fn from_db(v: i64) -> Option<EntryState> {
        Some(match v {
            0 => EntryState::Queued,
            1 => EntryState::Ended(JobStatus::Completed),
            2 => EntryState::Ended(JobStatus::Failed),
            3 => EntryState::Ended(JobStatus::Cancelled),
            _ => return None,
        })
    }
}

/// One job as journaled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    pub job_id: String,
    pub kind: ProofKind,
    /// Wire number of the registered proof.
    pub registered_proof: u64,
    pub priority: Priority,
    pub digest: RequestDigest,
    pub state: EntryState,
    pub proof: Vec<u8>,
    pub error: String,
    pub submitted_unix: u64,
    pub finished_unix: Option<u64>,
}

/// A journal just opened: the jobs to restore.
pub struct Opened {
    pub journal: Journal,
    /// The newest entry of every job id, finished ones within retention.
    pub entries: Vec<Entry>,
    /// Where a journal that failed its integrity check was moved, if one
    /// was.
    pub set_aside: Option<PathBuf>,
    /// The payloads left in set-aside payload directories
    /// (`payloads.corrupt-*/<seq>.req`, oldest first), this open's and any
    /// earlier one's not yet queued again: their rows are lost, the
    /// requests may still read ([`Journal::read_payload`]) and be queued
    /// again. Each stays there until [`Journal::drop_salvaged`].
    pub salvage: Vec<PathBuf>,
}

/// Why an existing journal could not be opened.
#[derive(Debug)]
enum OpenFault {
    /// The file fails its integrity check: set it aside.
    Damaged(String),
    /// Anything else (I/O, permissions, a full disk, a lock, a newer
    /// schema): touch nothing.
    Refused(String),
}

impl From<rusqlite::Error> for OpenFault {
    fn from(e: rusqlite::Error) -> OpenFault {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match e.sqlite_error_code() {
            Some(DatabaseCorrupt | NotADatabase) => OpenFault::Damaged(e.to_string()),
            _ => OpenFault::Refused(e.to_string()),
        }
    }
}

/// The open journal. Its methods block on disk writes (an fsync each):
/// call them off the reactor and never under the engine's state lock.
pub struct Journal {
    dir: PathBuf,
    /// Free disk space a PoRep or SnapDeals payload may not take
    /// ([`Journal::set_disk_reserve`]).
    disk_reserve: u64,
    conn: Mutex<Connection>,
    _lock: File,
}

impl Journal {
    /// Opens (or creates) the journal in `dir`, forgetting jobs that ended
    /// more than `retention` ago. A journal that fails its integrity check
    /// is set aside and replaced; the payloads of set-aside journals not
    /// yet queued again are offered for salvage (at every open). Any other
    /// fault, or a directory another daemon holds, is an error.
    pub fn open(dir: &Path, retention: Duration) -> Result<Opened, JournalError> {
        let dir_err = |e| JournalError::Dir(dir.to_path_buf(), e);
        fs::create_dir_all(dir.join("payloads")).map_err(dir_err)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .map_err(dir_err)?;
        if lock.try_lock_exclusive().is_err() {
            return Err(JournalError::Locked(dir.to_path_buf()));
        }
        let path = dir.join(DB);
        let cutoff = unix_now().saturating_sub(retention.as_secs());
        let fresh = !path.exists();
        let (conn, entries, set_aside) = open_or_replace(dir, &path, cutoff)?;
        let salvage = aside::salvage_files(dir);
        let journal = Journal {
            dir: dir.to_path_buf(),
            disk_reserve: 0,
            conn: Mutex::new(conn),
            _lock: lock,
        };
        // A database just created names no payload: none is deleted for
        // that (any there were set aside for salvage).
        if !fresh && set_aside.is_none() {
            journal.remove_orphan_payloads(&entries);
        }
        let queued = entries
            .iter()
            .filter(|e| e.state == EntryState::Queued)
            .count();
        info!(
            journal = %path.display(),
            jobs = entries.len(),
            unfinished = queued,
            salvage = salvage.len(),
            "job journal open"
        );
        Ok(Opened {
            journal,
            entries,
            set_aside,
            salvage,
        })
    }

    /// The journal's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn payload_path(&self, seq: u64) -> PathBuf {
        self.dir.join("payloads").join(format!("{seq}.req"))
    }

    /// Keeps `bytes` of the journal's disk free for PoSt: a PoRep or
    /// SnapDeals request whose payload would leave less is refused
    /// ([`JournalError::DiskFull`]); WindowPoSt and WinningPoSt may use it.
    pub fn set_disk_reserve(&mut self, bytes: u64) {
        self.disk_reserve = bytes;
    }

    /// Refuses a payload of `need` bytes for `kind` that would eat into the
    /// PoSt reserve. A disk whose free space cannot be read is not refused
    /// here (the write itself then reports what fails).
    fn check_room(&self, kind: ProofKind, need: u64) -> Result<(), JournalError> {
        if matches!(kind, ProofKind::WindowPost | ProofKind::WinningPost) || self.disk_reserve == 0
        {
            return Ok(());
        }
        let Ok(free) = fs2::available_space(&self.dir) else {
            return Ok(());
        };
        if free >= need.saturating_add(self.disk_reserve) {
            return Ok(());
        }
        Err(JournalError::DiskFull {
            dir: self.dir.clone(),
            kind,
            free: bytesize::ByteSize(free),
            need: bytesize::ByteSize(need),
            reserve: bytesize::ByteSize(self.disk_reserve),
        })
    }

    /// Records an accepted job and its request. Returns once both are on
    /// disk.
    pub fn submitted(&self, entry: &Entry, raw: &RawRequest) -> Result<(), JournalError> {
        let path = self.payload_path(entry.seq);
        let bytes = bincode::serialize(raw)
            .map_err(|e| JournalError::Payload(path.clone(), e.to_string()))?;
        self.check_room(entry.kind, bytes.len() as u64)?;
        write_durably(&path, &bytes)
            .map_err(|e| JournalError::Payload(path.clone(), e.to_string()))?;
        let conn = self.conn();
        let inserted = conn.execute(
            "INSERT OR REPLACE INTO jobs (seq, job_id, kind, registered_proof, priority, digest, \
             state, proof, error, submitted_unix, finished_unix) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                entry.seq as i64,
                entry.job_id,
                kind_to_wire(entry.kind),
                entry.registered_proof as i64,
                entry.priority as i64,
                entry.digest.as_slice(),
                entry.state.to_db(),
                entry.proof,
                entry.error,
                entry.submitted_unix as i64,
                entry.finished_unix.map(|t| t as i64),
            ],
        );
        if let Err(e) = inserted {
            // No row names it: the payload would only take disk space.
            let _ = fs::remove_file(&path);
            return Err(self.store_err(e));
        }
        Ok(())
    }

    /// Records how a job ended (a no-op for a job already ended) and drops
    /// its payload.
    pub fn finished(
        &self,
        seq: u64,
        status: JobStatus,
        proof: &[u8],
        error: &str,
    ) -> Result<(), JournalError> {
        self.conn()
            .execute(
                "UPDATE jobs SET state = ?2, proof = ?3, error = ?4, finished_unix = ?5 \
                 WHERE seq = ?1 AND state = 0",
                params![
                    seq as i64,
                    EntryState::Ended(status).to_db(),
                    proof,
                    error,
                    unix_now() as i64
                ],
            )
            .map_err(|e| self.store_err(e))?;
        let _ = fs::remove_file(self.payload_path(seq));
        Ok(())
    }

    /// The request of an unfinished job.
    pub fn load_request(&self, seq: u64) -> Result<RawRequest, JournalError> {
        Journal::read_payload(&self.payload_path(seq))
    }

    /// A journaled request from its payload file.
    pub fn read_payload(path: &Path) -> Result<RawRequest, JournalError> {
        let bytes =
            fs::read(path).map_err(|e| JournalError::Payload(path.to_path_buf(), e.to_string()))?;
        Journal::decode_payload(&bytes).map_err(|e| {
            JournalError::Payload(path.to_path_buf(), format!("not a journaled request: {e}"))
        })
    }

    /// A journaled request from a payload's bytes (bincode, strictly: no
    /// trailing bytes, no length prefix reserving more than the bytes
    /// given).
    pub fn decode_payload(bytes: &[u8]) -> bincode::Result<RawRequest> {
        crate::request::bincode_strict(bytes)
    }

    /// Forgets jobs that ended before `cutoff_unix`, and entries older than
    /// the newest of their job id.
    pub fn prune(&self, cutoff_unix: u64) -> Result<(), JournalError> {
        prune(&self.conn(), cutoff_unix).map_err(|e| self.store_err(e))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn store_err(&self, e: rusqlite::Error) -> JournalError {
        JournalError::Store(self.dir.join(DB), e.to_string())
    }

    /// Deletes payload files no unfinished entry names (a crash between
    /// writing a payload and its row, or after a job ended).
    fn remove_orphan_payloads(&self, entries: &[Entry]) {
        let keep: std::collections::HashSet<String> = entries
            .iter()
            .filter(|e| e.state == EntryState::Queued)
            .map(|e| format!("{}.req", e.seq))
            .collect();
        let Ok(dir) = fs::read_dir(self.dir.join("payloads")) else {
            return;
        };
        for f in dir.flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if !keep.contains(&name) {
                if let Err(e) = fs::remove_file(f.path()) {
                    warn!(file = %f.path().display(), "cannot remove a stale payload: {e}");
                }
            }
        }
    }
}

/// Opens the database at `path`; one that fails its integrity check is
/// set aside (payloads first) and replaced. A database created here finds
/// no payloads in `payloads/`: any there are set aside for salvage first
/// (they name no row of it, and new jobs would reuse their numbers).
fn open_or_replace(
    dir: &Path,
    path: &Path,
    cutoff: u64,
) -> Result<(Connection, Vec<Entry>, Option<PathBuf>), JournalError> {
    let dir_err = |e| JournalError::Dir(dir.to_path_buf(), e);
    let refused = |why| JournalError::Refused(path.to_path_buf(), why);
    if !path.exists() && aside::set_aside_strays(dir).map_err(dir_err)? {
        warn!(
            journal = %path.display(),
            "no job journal, but payloads: they are set aside and queued again"
        );
    }
    let why = match open_db(path, cutoff) {
        Ok((conn, entries)) => return Ok((conn, entries, None)),
        Err(OpenFault::Refused(why)) => return Err(refused(why)),
        Err(OpenFault::Damaged(why)) => why,
    };
    let moved_to = aside::set_aside(dir, path).map_err(dir_err)?;
    error!(
        journal = %path.display(),
        moved_to = %moved_to.display(),
        error = %why,
        "the job journal fails its integrity check; it was set aside and a new one \
         started (the requests of its payloads are queued again)"
    );
    let (conn, entries) = open_db(path, cutoff).map_err(|f| match f {
        OpenFault::Damaged(why) | OpenFault::Refused(why) => refused(why),
    })?;
    Ok((conn, entries, Some(moved_to)))
}

/// Opens the database, checks it, and reads the entries to restore
/// (damaged rows rewritten as failed jobs).
fn open_db(path: &Path, cutoff: u64) -> Result<(Connection, Vec<Entry>), OpenFault> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(OpenFault::Damaged(format!("integrity check: {check}")));
    }
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE IF NOT EXISTS jobs (
             seq INTEGER PRIMARY KEY,
             job_id TEXT NOT NULL,
             kind INTEGER NOT NULL,
             registered_proof INTEGER NOT NULL,
             priority INTEGER NOT NULL,
             digest BLOB NOT NULL,
             state INTEGER NOT NULL,
             proof BLOB NOT NULL,
             error TEXT NOT NULL,
             submitted_unix INTEGER NOT NULL,
             finished_unix INTEGER);
         CREATE INDEX IF NOT EXISTS jobs_by_id ON jobs (job_id);
         INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', 1);",
    )?;
    let schema: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
            r.get(0)
        })
        .optional()?;
    match schema {
        Some(SCHEMA) => {}
        Some(v) if v > SCHEMA => {
            return Err(OpenFault::Refused(format!(
                "schema {v} was written by a newer cuzk; this daemon reads schema {SCHEMA}"
            )))
        }
        v => {
            return Err(OpenFault::Damaged(format!(
                "schema {v:?}; expected {SCHEMA}"
            )))
        }
    }
    prune(&conn, cutoff)?;
    let (entries, damaged) = rows::read_entries(&conn)?;
    for e in &damaged {
        error!(job_id = %e.job_id, seq = e.seq, "{}", e.error);
        rows::fail_row(&conn, e)?;
    }
    Ok((conn, entries.into_iter().chain(damaged).collect()))
}

fn prune(conn: &Connection, cutoff: u64) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM jobs WHERE (state != 0 AND finished_unix <= ?1) \
         OR seq < (SELECT MAX(seq) FROM jobs AS newer WHERE newer.job_id = jobs.job_id)",
        params![cutoff as i64],
    )?;
    Ok(())
}

/// Writes `bytes` to `path` so that after a crash the file is either
/// absent or complete; on failure nothing of it is left.
fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        if let Some(parent) = path.parent() {
            File::open(parent)?.sync_all()?;
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
        let _ = fs::remove_file(path);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn entry(seq: u64, id: &str) -> Entry {
        Entry {
            seq,
            job_id: id.into(),
            kind: ProofKind::WindowPost,
            registered_proof: 10,
            priority: Priority::High,
            digest: [seq as u8; 32],
            state: EntryState::Queued,
            proof: Vec::new(),
            error: String::new(),
            submitted_unix: unix_now(),
            finished_unix: None,
        }
    }

    pub(super) fn raw(id: &str) -> RawRequest {
        RawRequest {
            request_id: id.into(),
            proof_kind: 3,
            vanilla_proofs: vec![vec![7; 1000]],
            ..Default::default()
        }
    }

    #[test]
    fn jobs_survive_reopening_and_finished_ones_keep_their_proof() {
        let dir = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86400);
        {
            let o = Journal::open(dir.path(), day).unwrap();
            assert!(o.entries.is_empty() && o.set_aside.is_none());
            for (seq, id) in [(1, "a"), (2, "b"), (3, "a")] {
                o.journal.submitted(&entry(seq, id), &raw(id)).unwrap();
            }
            o.journal
                .finished(2, JobStatus::Completed, b"proof", "")
                .unwrap();
            // A second end is a no-op.
            o.journal.finished(2, JobStatus::Failed, b"", "x").unwrap();
            assert!(matches!(
                Journal::open(dir.path(), day),
                Err(JournalError::Locked(_))
            ));
        }
        let o = Journal::open(dir.path(), day).unwrap();
        // "a" at seq 1 was superseded by seq 3.
        let seqs: Vec<u64> = o.entries.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
        assert_eq!(o.entries[0].state, EntryState::Ended(JobStatus::Completed));
        assert_eq!(o.entries[0].proof, b"proof");
        assert_eq!(o.entries[1].state, EntryState::Queued);
        assert_eq!(o.journal.load_request(3).unwrap(), raw("a"));
        // The finished job's and the superseded job's payloads are gone.
        assert!(o.journal.load_request(2).is_err());
        assert!(o.journal.load_request(1).is_err());
    }

    #[test]
    fn retention_forgets_old_finished_jobs() {
        let dir = tempfile::tempdir().unwrap();
        {
            let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
            o.journal.submitted(&entry(1, "a"), &raw("a")).unwrap();
            o.journal.finished(1, JobStatus::Failed, b"", "no").unwrap();
            o.journal.submitted(&entry(2, "b"), &raw("b")).unwrap();
        }
        let o = Journal::open(dir.path(), Duration::ZERO).unwrap();
        let seqs: Vec<u64> = o.entries.iter().map(|e| e.seq).collect();
        // Unfinished jobs are never pruned; finished ones after retention.
        assert_eq!(seqs, [2]);
    }

    /// Makes the journal in `dir` fail its integrity check.
    pub(super) fn corrupt(dir: &Path) {
        let _ = fs::remove_file(dir.join(format!("{DB}-wal")));
        let _ = fs::remove_file(dir.join(format!("{DB}-shm")));
        fs::write(dir.join(DB), vec![0x5a; 8192]).unwrap();
    }

    #[test]
    fn a_corrupt_journal_is_set_aside_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        {
            let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
            o.journal.submitted(&entry(1, "a"), &raw("a")).unwrap();
        }
        corrupt(dir.path());
        let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        let aside = o.set_aside.clone().expect("set aside");
        assert!(aside.exists(), "{}", aside.display());
        assert!(o.entries.is_empty());
        // The unfinished job's request is offered for salvage.
        assert_eq!(o.salvage.len(), 1, "{:?}", o.salvage);
        assert_eq!(Journal::read_payload(&o.salvage[0]).unwrap(), raw("a"));
        o.journal.submitted(&entry(5, "b"), &raw("b")).unwrap();
        drop(o);
        let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        assert!(o.set_aside.is_none());
        assert_eq!(o.entries.len(), 1);
    }

    #[test]
    fn a_truncated_journal_is_set_aside_too() {
        let dir = tempfile::tempdir().unwrap();
        {
            let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
            for seq in 1..50 {
                o.journal
                    .submitted(&entry(seq, &format!("j{seq}")), &raw("x"))
                    .unwrap();
                let error = "e".repeat(2000);
                o.journal
                    .finished(seq, JobStatus::Failed, b"", &error)
                    .unwrap();
            }
            // Fold the WAL into the database file.
            o.journal
                .conn()
                .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
                .unwrap();
        }
        let db = dir.path().join(DB);
        let bytes = fs::read(&db).unwrap();
        fs::write(&db, &bytes[..bytes.len() / 3]).unwrap();
        let _ = fs::remove_file(dir.path().join(format!("{DB}-wal")));
        let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        assert!(o.set_aside.is_some(), "a truncated journal must be noticed");
        assert!(o.entries.is_empty());
    }

    /// The database file's bytes and its payloads' names and bytes.
    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = [dir.join(DB)]
            .into_iter()
            .chain(aside::payload_files(&dir.join("payloads")))
            .map(|p| (p.display().to_string(), fs::read(&p).unwrap()))
            .collect();
        files.sort();
        files
    }

    #[test]
    fn a_newer_schema_is_refused_and_nothing_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        {
            let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
            o.journal.submitted(&entry(1, "a"), &raw("a")).unwrap();
            let conn = o.journal.conn();
            conn.execute("UPDATE meta SET value = 7 WHERE key = 'schema'", [])
                .unwrap();
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
                .unwrap();
        }
        let before = snapshot(dir.path());
        match Journal::open(dir.path(), Duration::from_secs(60)) {
            Err(JournalError::Refused(_, why)) => assert!(why.contains("schema 7"), "{why}"),
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("a newer schema was opened"),
        }
        assert_eq!(snapshot(dir.path()), before, "the journal was changed");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|f| f.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.contains("corrupt")),
            "set aside: {names:?}"
        );
    }

    #[test]
    fn a_damaged_row_fails_its_job_alone() {
        let dir = tempfile::tempdir().unwrap();
        {
            let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
            for (seq, id) in [(1, "a"), (2, "b"), (3, "c")] {
                o.journal.submitted(&entry(seq, id), &raw(id)).unwrap();
            }
            o.journal
                .conn()
                .execute(
                    "UPDATE jobs SET digest = x'00', priority = 99 WHERE seq = 2",
                    [],
                )
                .unwrap();
        }
        let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        assert!(o.set_aside.is_none(), "one bad row does not set it aside");
        let state = |id: &str| o.entries.iter().find(|e| e.job_id == id).unwrap();
        assert_eq!(state("a").state, EntryState::Queued);
        assert_eq!(state("c").state, EntryState::Queued);
        let b = state("b");
        assert_eq!(b.state, EntryState::Ended(JobStatus::Failed));
        assert!(
            b.error.contains("journal row 2") && b.error.contains("digest"),
            "{}",
            b.error
        );
        assert_eq!(o.journal.load_request(3).unwrap(), raw("c"));
        drop(o);
        // Rewritten as failed: the next start says the same.
        let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        let b = o.entries.iter().find(|e| e.job_id == "b").unwrap();
        assert_eq!(b.state, EntryState::Ended(JobStatus::Failed));
    }

    #[test]
    fn a_failed_payload_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        // The rename onto a directory fails after the temporary file is
        // written.
        fs::create_dir(o.journal.payload_path(4)).unwrap();
        fs::write(o.journal.payload_path(4).join("x"), b"x").unwrap();
        assert!(o.journal.submitted(&entry(4, "d"), &raw("d")).is_err());
        assert!(!o.journal.payload_path(4).with_extension("tmp").exists());
        // A row that cannot be written takes its payload with it.
        o.journal.conn().execute_batch("DROP TABLE jobs;").unwrap();
        assert!(o.journal.submitted(&entry(5, "e"), &raw("e")).is_err());
        assert!(!o.journal.payload_path(5).exists());
        assert!(!o.journal.payload_path(5).with_extension("tmp").exists());
    }

    #[test]
    fn the_disk_reserve_refuses_porep_and_snap_payloads_and_keeps_post() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        // More than any disk has free: only PoSt may write.
        o.journal.set_disk_reserve(u64::MAX / 4);
        for (seq, kind) in [(1, ProofKind::PoRep), (2, ProofKind::SnapDeals)] {
            let e = Entry {
                kind,
                ..entry(seq, "big")
            };
            let err = o.journal.submitted(&e, &raw("big")).unwrap_err();
            assert!(
                matches!(err, JournalError::DiskFull { kind: k, .. } if k == kind),
                "{err}"
            );
            assert!(
                err.to_string().contains("daemon.journal_disk_reserve"),
                "{err}"
            );
            assert!(!o.journal.payload_path(seq).exists());
        }
        for (seq, kind) in [(3, ProofKind::WindowPost), (4, ProofKind::WinningPost)] {
            let e = Entry {
                kind,
                ..entry(seq, "post")
            };
            o.journal.submitted(&e, &raw("post")).unwrap();
            assert!(o.journal.payload_path(seq).exists());
        }
        // With no reserve a PoRep is written.
        o.journal.set_disk_reserve(0);
        let e = Entry {
            kind: ProofKind::PoRep,
            ..entry(5, "porep")
        };
        o.journal.submitted(&e, &raw("porep")).unwrap();
    }
}
