//! Reading the journal's rows: each column is checked on its own, so one
//! damaged row fails that job alone (named by its row) and the others
//! recover.

use rusqlite::types::Value;
use rusqlite::{params, Connection};

use super::{unix_now, Entry, EntryState};
use crate::job::JobStatus;
use crate::kinds::{Priority, ProofKind, ProofType};
use crate::request::kind_from_wire;

/// The journal's rows: the good ones, and the damaged ones as failed
/// entries whose error names the row and what is wrong with it (a row
/// without a readable sequence number or job id names no job and is only
/// logged; one without a readable kind, or registered proof, comes back
/// under a placeholder of a known kind, failed).
pub(super) fn read_entries(conn: &Connection) -> rusqlite::Result<(Vec<Entry>, Vec<Entry>)> {
    let mut stmt = conn.prepare(
        "SELECT seq, job_id, kind, registered_proof, priority, digest, state, proof, error, \
         submitted_unix, finished_unix FROM jobs ORDER BY seq",
    )?;
    let rows = stmt.query_map([], |r| {
        (0..11)
            .map(|i| r.get::<_, Value>(i))
            .collect::<rusqlite::Result<Vec<Value>>>()
    })?;
    let (mut good, mut damaged) = (Vec::new(), Vec::new());
    for row in rows {
        match entry(row?) {
            Row::Good(e) => good.push(e),
            Row::Damaged(e) => damaged.push(e),
            Row::Nameless => {}
        }
    }
    Ok((good, damaged))
}

/// Records a damaged row's job as failed, with the entry's error.
pub(super) fn fail_row(conn: &Connection, e: &Entry) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE jobs SET state = ?2, error = ?3, finished_unix = ?4 WHERE seq = ?1",
        params![
            e.seq as i64,
            EntryState::Ended(JobStatus::Failed).to_db(),
            e.error,
            e.finished_unix.unwrap_or_else(unix_now) as i64
        ],
    )?;
    Ok(())
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(i) => Some(*i),
        _ => None,
    }
}

/// What one row is.
enum Row {
    Good(Entry),
    /// Damaged: a failed entry naming the row.
    Damaged(Entry),
    /// Names no job (no readable sequence number or job id).
    Nameless,
}

fn entry(v: Vec<Value>) -> Row {
    let Some(seq) = int(&v[0]).filter(|s| *s >= 0) else {
        tracing::error!("journal row without a sequence number: skipped");
        return Row::Nameless;
    };
    let job_id = match &v[1] {
        Value::Text(t) => t.clone(),
        _ => {
            tracing::error!(seq, "journal row {seq} has no readable job id: skipped");
            return Row::Nameless;
        }
    };
    let mut bad = Vec::new();
    let kind = int(&v[2])
        .and_then(|k| i32::try_from(k).ok())
        .and_then(kind_from_wire)
        .unwrap_or_else(|| {
            bad.push("kind");
            ProofKind::WindowPost
        });
    let registered_proof = int(&v[3]).filter(|p| *p >= 0).unwrap_or_else(|| {
        bad.push("registered_proof");
        0
    }) as u64;
    let priority = int(&v[4])
        .and_then(|p| i32::try_from(p).ok())
        .and_then(Priority::from_wire)
        .unwrap_or_else(|| {
            bad.push("priority");
            Priority::Normal
        });
    let digest = match &v[5] {
        Value::Blob(b) => b.as_slice().try_into().ok(),
        _ => None,
    }
    .unwrap_or_else(|| {
        bad.push("digest");
        [0; 32]
    });
    let state = int(&v[6]).and_then(EntryState::from_db).unwrap_or_else(|| {
        bad.push("state");
        EntryState::Queued
    });
    let proof = match &v[7] {
        Value::Blob(b) => b.clone(),
        _ => {
            bad.push("proof");
            Vec::new()
        }
    };
    let error = match &v[8] {
        Value::Text(t) => t.clone(),
        _ => {
            bad.push("error");
            String::new()
        }
    };
    let submitted_unix = int(&v[9]).filter(|t| *t >= 0).unwrap_or_else(|| {
        bad.push("submitted_unix");
        0
    }) as u64;
    let finished_unix = match &v[10] {
        Value::Null => None,
        Value::Integer(t) if *t >= 0 => Some(*t as u64),
        _ => {
            bad.push("finished_unix");
            None
        }
    };
    let mut e = Entry {
        seq: seq as u64,
        job_id,
        kind,
        registered_proof,
        priority,
        digest,
        state,
        proof,
        error,
        submitted_unix,
        finished_unix,
    };
    if bad.is_empty() {
        return Row::Good(e);
    }
    e.state = EntryState::Ended(JobStatus::Failed);
    e.proof.clear();
    e.error = format!(
        "journal row {seq} is damaged (bad {}); the job was not recovered: submit it again",
        bad.join(", ")
    );
    // Kept from an earlier open, so retention still ends the row.
    e.finished_unix = e.finished_unix.or_else(|| Some(unix_now()));
    if ProofType::decode(e.kind, e.registered_proof).is_err() {
        e.registered_proof = placeholder_proof(e.kind);
    }
    Row::Damaged(e)
}

/// A registered proof of `kind` that decodes, for a damaged row whose own
/// kind or registered proof does not: its job comes back failed (and
/// found under its id), the proof type only shown.
fn placeholder_proof(kind: ProofKind) -> u64 {
    match kind {
        // StackedDrgWindow2KiBV1
        ProofKind::WindowPost => 5,
        // StackedDrg2KiBV1, StackedDrgWinning2KiBV1, the 2 KiB update
        ProofKind::PoRep | ProofKind::WinningPost | ProofKind::SnapDeals => 0,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::journal::tests::{entry, raw};
    use crate::journal::Journal;

    #[test]
    fn a_row_with_an_unreadable_kind_fails_its_job_under_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let open = || Journal::open(dir.path(), Duration::from_secs(60)).unwrap();
        {
            let o = open();
            for (seq, id) in [(1, "a"), (2, "b")] {
                o.journal.submitted(&entry(seq, id), &raw(id)).unwrap();
            }
            o.journal
                .conn()
                .execute(
                    "UPDATE jobs SET kind = 'x', registered_proof = -1 WHERE seq = 2",
                    [],
                )
                .unwrap();
        }
        for _ in 0..2 {
            let o = open();
            let b = o.entries.iter().find(|e| e.job_id == "b").expect("b");
            assert_eq!(b.state, EntryState::Ended(JobStatus::Failed));
            assert!(b.error.contains("journal row 2"), "{}", b.error);
            assert!(b.error.contains("kind"), "{}", b.error);
            // The engine can restore it (as a failed job of some kind).
            assert!(ProofType::decode(b.kind, b.registered_proof).is_ok());
            let a = o.entries.iter().find(|e| e.job_id == "a").expect("a");
            assert_eq!(a.state, EntryState::Queued);
        }
    }

    #[test]
    fn every_kind_has_a_placeholder_proof_that_decodes() {
        for kind in ProofKind::ALL {
            let p = placeholder_proof(kind);
            assert!(ProofType::decode(kind, p).is_ok(), "{kind}: {p}");
        }
    }
}
