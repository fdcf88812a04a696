//! A seeded fuzz harness over request decoding and validation, on stable
//! Rust: many thousand mutations of valid requests of every kind (the
//! fixtures' requests, the C1 raw and in Curio's `{"Phase1Out": base64}`
//! wrapper, and the committed corpus in `fuzz-corpus/`) go through
//! [`RawRequest::validate`]. Every one must come back as `Ok` or a refusal
//! that names a field; a panic is a crash, reported with the case that made
//! it (and written to `target/fuzz-crashes/` to become a regression seed).
//!
//! Mutations: bit flips, byte edits, insertions, deletions, truncations and
//! splices of the payloads; huge values over bincode length prefixes; JSON
//! edits of the C1 (numbers made huge or negative, arrays shortened or
//! grown, types changed); base64 damage in the wrapper; and every integer
//! field pushed to its extremes. Every run is the same fixed count of
//! cases from a fixed seed (no wall-clock cap: what it covers does not
//! depend on the machine).
//!
//! What validation accepts is checked too: the digest is the raw
//! request's, the payload byte count is the raw one and within the limit,
//! a kind's unused payload field is empty, and the decoded input carries
//! the request's own counts and numbers. The journal's payload decoding is
//! fuzzed the same way (mutated bincode payloads, each decoded and, when
//! it decodes, validated), and a sample of accepted mutations goes through
//! `Engine::submit` with a journal, whose payloads must read back as the
//! requests they journaled.

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cuzk_core::journal::{EntryState, Journal};
use cuzk_core::{ProofInput, ProofRequest};

use base64::Engine as _;
use cuzk_core::request::request_digest;
use cuzk_core::{ProofKind, RawRequest, RequestError};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

const CASES: usize = 100_000;
const MAX_VANILLA: u64 = 256 << 20;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz-corpus")
}

/// Committed seeds: bincode `RawRequest`s (the journal's payload format).
fn committed_seeds() -> Vec<RawRequest> {
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("fuzz-corpus/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "req"))
        .collect();
    names.sort();
    for p in names {
        let bytes = std::fs::read(&p).unwrap();
        let r: RawRequest = bincode::deserialize(&bytes)
            .unwrap_or_else(|e| panic!("{}: not a bincode RawRequest: {e}", p.display()));
        out.push(r);
    }
    out
}

fn wrapped(mut r: RawRequest) -> RawRequest {
    let w = serde_json::json!({
        "SectorNum": r.sector_number,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&r.vanilla_proof),
        "SectorSize": 2048,
    });
    r.vanilla_proof = serde_json::to_vec(&w).unwrap();
    r
}

fn seeds() -> Vec<RawRequest> {
    let dir = cuzk_fixtures::default_dir();
    let f = cuzk_fixtures::ensure(&dir, &mut |_| {}).expect("fixtures");
    cuzk_core::params::init_parameter_cache(&f.params_dir()).expect("parameter cache");
    let mut s: Vec<RawRequest> = ProofKind::ALL
        .into_iter()
        .map(|k| f.request(k).unwrap())
        .collect();
    s.push(wrapped(f.request(ProofKind::PoRep).unwrap()));
    for d in 0..f.manifest.window_deadlines.len() {
        s.push(f.deadline_request(d, 0).unwrap());
    }
    s
}

fn extreme_u64(rng: &mut ChaCha8Rng) -> u64 {
    *[
        0,
        1,
        2,
        4,
        5,
        9,
        10,
        14,
        15,
        19,
        20,
        2047,
        2048,
        1 << 32,
        u64::MAX / 2,
        u64::MAX,
    ]
    .choose(rng)
    .unwrap()
}

fn mutate_bytes(rng: &mut ChaCha8Rng, b: &mut Vec<u8>, other: &[u8]) {
    if b.is_empty() {
        b.extend((0..rng.gen_range(1..64)).map(|_| rng.gen::<u8>()));
        return;
    }
    let n = b.len();
    match rng.gen_range(0..9) {
        0 => {
            for _ in 0..rng.gen_range(1..8) {
                let i = rng.gen_range(0..n);
                b[i] ^= 1 << rng.gen_range(0..8);
            }
        }
        1 => {
            let i = rng.gen_range(0..n);
            b[i] = *[0u8, 0xff, 0x7f, 0x80, b'{', b'"', b'0']
                .choose(rng)
                .unwrap();
        }
        2 => {
            let i = rng.gen_range(0..=n);
            let add: Vec<u8> = (0..rng.gen_range(1..32)).map(|_| rng.gen()).collect();
            b.splice(i..i, add);
        }
        3 => {
            let i = rng.gen_range(0..n);
            let j = (i + rng.gen_range(1..64)).min(n);
            b.drain(i..j);
        }
        4 => b.truncate(rng.gen_range(0..n)),
        5 => {
            // A huge little-endian u64 over what may be a length prefix.
            let i = rng.gen_range(0..n) & !7;
            let v = extreme_u64(rng).max(1 << 20).to_le_bytes();
            for (k, x) in v.iter().enumerate() {
                if let Some(slot) = b.get_mut(i + k) {
                    *slot = *x;
                }
            }
        }
        6 if !other.is_empty() => {
            // Splice a slice of another seed in.
            let i = rng.gen_range(0..n);
            let a = rng.gen_range(0..other.len());
            let len = rng.gen_range(1..=(other.len() - a).min(512));
            b.splice(i..(i + len).min(n), other[a..a + len].iter().copied());
        }
        7 => b.extend_from_slice(&b.clone()[..n.min(64)]),
        _ => b.reverse(),
    }
}

fn mutate_json(rng: &mut ChaCha8Rng, v: &mut Value, depth: usize) {
    match v {
        Value::Array(a) if !a.is_empty() && depth < 12 && rng.gen_bool(0.7) => {
            let i = rng.gen_range(0..a.len());
            mutate_json(rng, &mut a[i], depth + 1);
        }
        Value::Object(o) if !o.is_empty() && depth < 12 && rng.gen_bool(0.8) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            let k = keys.choose(rng).unwrap();
            mutate_json(rng, o.get_mut(k).unwrap(), depth + 1);
        }
        Value::Array(a) => match rng.gen_range(0..4) {
            0 => {
                a.pop();
            }
            1 if !a.is_empty() => {
                let x = a[0].clone();
                a.push(x);
            }
            2 => a.clear(),
            _ => a.shuffle(rng),
        },
        _ => {
            *v = match rng.gen_range(0..6) {
                0 => Value::from(u64::MAX),
                1 => Value::from(-1),
                2 => Value::from(1e300),
                3 => Value::from("x"),
                4 => Value::Null,
                _ => Value::from(rng.gen::<u8>()),
            }
        }
    }
}

fn mutate(rng: &mut ChaCha8Rng, r: &mut RawRequest, other: &RawRequest) {
    let other_bytes = other
        .vanilla_proofs
        .first()
        .cloned()
        .unwrap_or_else(|| other.vanilla_proof.clone());
    match rng.gen_range(0..14) {
        0 => r.proof_kind = *[0, 1, 2, 3, 4, 5, -1, i32::MAX].choose(rng).unwrap(),
        1 => r.registered_proof = extreme_u64(rng),
        2 => r.priority = rng.gen_range(-2..7),
        3 => r.sector_size = extreme_u64(rng),
        4 => {
            r.partition_index = *[0, 1, 2, 2999, 3000, 65_535, 4_000_000_000, u32::MAX]
                .choose(rng)
                .unwrap()
        }
        5 => r.miner_id = extreme_u64(rng),
        6 => r.sector_number = extreme_u64(rng),
        7 => {
            let f = [
                &mut r.randomness,
                &mut r.comm_r_old,
                &mut r.comm_r_new,
                &mut r.comm_d_new,
            ]
            .into_iter()
            .nth(rng.gen_range(0..4))
            .unwrap();
            if rng.gen_bool(0.5) {
                mutate_bytes(rng, f, &[]);
            } else {
                *f = (0..*[0usize, 31, 32, 33].choose(rng).unwrap())
                    .map(|_| rng.gen())
                    .collect();
            }
        }
        8 => mutate_bytes(rng, &mut r.vanilla_proof, &other_bytes),
        9 if !r.vanilla_proof.is_empty() => {
            // JSON-level edit of the C1 (or of the wrapper).
            if let Ok(mut v) = serde_json::from_slice::<Value>(&r.vanilla_proof) {
                if let Some(Value::String(s)) = v.get_mut("Phase1Out") {
                    match rng.gen_range(0..3) {
                        0 => s.insert(rng.gen_range(0..=s.len()), '%'),
                        1 => s.truncate(rng.gen_range(0..=s.len())),
                        _ => {
                            let inner = base64::engine::general_purpose::STANDARD
                                .decode(s.as_bytes())
                                .ok()
                                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
                            if let Some(mut inner) = inner {
                                mutate_json(rng, &mut inner, 0);
                                *s = base64::engine::general_purpose::STANDARD
                                    .encode(serde_json::to_vec(&inner).unwrap());
                            }
                        }
                    }
                } else {
                    mutate_json(rng, &mut v, 0);
                }
                r.vanilla_proof = serde_json::to_vec(&v).unwrap();
            }
        }
        10 | 11 if !r.vanilla_proofs.is_empty() => {
            let i = rng.gen_range(0..r.vanilla_proofs.len());
            mutate_bytes(rng, &mut r.vanilla_proofs[i], &other_bytes);
        }
        12 => match rng.gen_range(0..4) {
            0 => {
                if let Some(p) = r.vanilla_proofs.first().cloned() {
                    r.vanilla_proofs.push(p);
                }
            }
            1 => {
                r.vanilla_proofs.pop();
            }
            2 => r.vanilla_proofs.shuffle(rng),
            _ => r.vanilla_proofs.push(other_bytes.clone()),
        },
        _ => {
            r.request_id = match rng.gen_range(0..3) {
                0 => "x".repeat(rng.gen_range(250..300)),
                1 => "porep-1000-1\u{0}\u{ffff}".into(),
                _ => String::new(),
            }
        }
    }
}

/// A seed with one to four mutations, some from another seed.
fn mutated(rng: &mut ChaCha8Rng, seeds: &[RawRequest]) -> RawRequest {
    let mut r = seeds.choose(rng).unwrap().clone();
    let other = seeds.choose(rng).unwrap().clone();
    for _ in 0..rng.gen_range(1..=4) {
        mutate(rng, &mut r, &other);
    }
    r
}

/// What an accepted request must be: its digest the raw request's, its
/// payload within the limit and counted whole, the field its kind does
/// not use empty, its id and priority as sent, and its decoded input the
/// request's own (kind, counts, sector numbers).
fn check_accepted(r: &RawRequest, req: &ProofRequest) -> Result<(), String> {
    let fail = |m: &str| Err(format!("accepted, but {m}"));
    if req.digest != request_digest(r) {
        return fail("its digest differs from the raw request's");
    }
    if req.vanilla_bytes != r.vanilla_bytes() || req.vanilla_bytes as u64 > MAX_VANILLA {
        return fail("its payload is miscounted or over the limit");
    }
    if Some(req.kind()) != r.kind().ok() {
        return fail("its kind is not the one asked");
    }
    if req.request_id.as_deref().unwrap_or("") != r.request_id {
        return fail("its request id changed");
    }
    let default = r.priority == 0 && req.priority == req.kind().default_priority();
    if !default && Some(req.priority) != cuzk_core::Priority::from_wire(r.priority) {
        return fail("its priority is not the one asked");
    }
    match (&req.input, req.kind()) {
        (ProofInput::PoRep { sector_id, .. }, ProofKind::PoRep) => {
            if !r.vanilla_proofs.is_empty() {
                return fail("a PoRep carries vanilla_proofs entries");
            }
            if u64::from(*sector_id) != r.sector_number {
                return fail("the PoRep's sector number changed");
            }
        }
        (
            ProofInput::WinningPost {
                vanilla_proofs,
                sectors,
                ..
            },
            ProofKind::WinningPost,
        )
        | (
            ProofInput::WindowPost {
                vanilla_proofs,
                sectors,
                ..
            },
            ProofKind::WindowPost,
        ) => {
            if !r.vanilla_proof.is_empty() {
                return fail("a PoSt carries a vanilla_proof");
            }
            if *vanilla_proofs != r.vanilla_proofs || sectors.len() != vanilla_proofs.len() {
                return fail("the PoSt's proofs and sectors do not match the request's");
            }
            if vanilla_proofs.is_empty() {
                return fail("a PoSt without sectors");
            }
        }
        (ProofInput::SnapDeals { vanilla_proofs, .. }, ProofKind::SnapDeals) => {
            if !r.vanilla_proof.is_empty() {
                return fail("a SnapDeals request carries a vanilla_proof");
            }
            if *vanilla_proofs != r.vanilla_proofs || vanilla_proofs.is_empty() {
                return fail("the SnapDeals proofs do not match the request's");
            }
        }
        _ => return fail("its decoded input is of another kind"),
    }
    Ok(())
}

/// A refusal must name a field (or be a precondition / not-implemented).
fn check_refusal(e: &RequestError) -> Result<(), String> {
    match e {
        RequestError::InvalidArgument { field, message } => {
            if field.is_empty() || message.is_empty() {
                return Err(format!("refusal without field or message: {e:?}"));
            }
            if message.contains("panicked")
                || message.contains(cuzk_core::request::INTERNAL_DECODER_FAILURE)
            {
                return Err(format!("a check is missing (a decoder panicked): {e}"));
            }
            Ok(())
        }
        RequestError::FailedPrecondition(_) | RequestError::Unimplemented(_) => Ok(()),
    }
}

#[test]
fn mutated_requests_never_crash_validation() {
    let mut seeds = seeds();
    for s in &seeds {
        s.validate(MAX_VANILLA)
            .unwrap_or_else(|e| panic!("seed {} must be valid: {e}", s.proof_kind));
    }
    // Committed seeds (and regression cases) replay first; the valid ones
    // join the mutation base.
    for (i, r) in committed_seeds().into_iter().enumerate() {
        match catch_unwind(AssertUnwindSafe(|| r.validate(MAX_VANILLA))) {
            Ok(Ok(_)) => seeds.push(r),
            Ok(Err(e)) => check_refusal(&e).unwrap_or_else(|m| panic!("corpus seed {i}: {m}")),
            Err(_) => panic!("corpus seed {i} crashes validation"),
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x1616_c02c);
    let start = Instant::now();
    let (mut accepted, mut refused, mut crashes) = (0usize, 0usize, Vec::new());
    let ran = CASES;
    std::panic::set_hook(Box::new(|_| {}));
    for case in 0..CASES {
        let r = mutated(&mut rng, &seeds);
        let result = catch_unwind(AssertUnwindSafe(|| r.validate(MAX_VANILLA)));
        match result {
            Ok(Ok(req)) => {
                accepted += 1;
                if let Err(m) = check_accepted(&r, &req) {
                    crashes.push((case, m, r));
                }
            }
            Ok(Err(e)) => {
                refused += 1;
                if let Err(m) = check_refusal(&e) {
                    crashes.push((case, m, r));
                }
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                crashes.push((case, format!("panicked: {msg}"), r));
            }
        }
    }
    let _ = std::panic::take_hook();
    eprintln!(
        "fuzz: {ran} cases in {:.1} s: {accepted} accepted, {refused} refused, {} crashes",
        start.elapsed().as_secs_f64(),
        crashes.len()
    );
    if !crashes.is_empty() {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes");
        std::fs::create_dir_all(&out).unwrap();
        for (case, why, r) in crashes.iter().take(20) {
            let p = out.join(format!("case-{case}.req"));
            std::fs::write(&p, bincode::serialize(r).unwrap()).unwrap();
            eprintln!("case {case}: {why} (saved as {})", p.display());
        }
        panic!("{} crashing cases", crashes.len());
    }
    assert!(refused > 0 && accepted > 0, "mutations reach both outcomes");
}

/// A journal payload's bytes, damaged: bit flips, byte edits, a huge
/// value written over a length prefix's place, truncation, extension.
fn mutate_payload(rng: &mut ChaCha8Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        bytes.push(rng.gen());
        return;
    }
    match rng.gen_range(0..5) {
        0 => {
            let i = rng.gen_range(0..bytes.len());
            bytes[i] ^= 1 << rng.gen_range(0..8);
        }
        1 => {
            let i = rng.gen_range(0..bytes.len());
            bytes[i] = rng.gen();
        }
        2 if bytes.len() >= 8 => {
            let i = rng.gen_range(0..=bytes.len() - 8);
            let v = extreme_u64(rng);
            bytes[i..i + 8].copy_from_slice(&v.to_le_bytes());
        }
        3 => bytes.truncate(rng.gen_range(0..bytes.len())),
        _ => {
            let n = rng.gen_range(1..64);
            bytes.extend((0..n).map(|_| rng.gen::<u8>()));
        }
    }
}

#[test]
fn mutated_journal_payloads_never_crash_recovery() {
    let seeds = seeds();
    let payloads: Vec<Vec<u8>> = seeds
        .iter()
        .map(|r| bincode::serialize(r).unwrap())
        .collect();
    for (p, r) in payloads.iter().zip(&seeds) {
        assert_eq!(
            &Journal::decode_payload(p).unwrap(),
            r,
            "a payload reads back"
        );
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x100d_c0de);
    let (mut decoded, mut validated, mut crashes) = (0usize, 0usize, Vec::new());
    std::panic::set_hook(Box::new(|_| {}));
    for case in 0..CASES {
        let mut bytes = payloads.choose(&mut rng).unwrap().clone();
        for _ in 0..rng.gen_range(1..=3) {
            mutate_payload(&mut rng, &mut bytes);
        }
        let run = catch_unwind(AssertUnwindSafe(|| {
            let r = Journal::decode_payload(&bytes).ok()?;
            Some((r.validate(MAX_VANILLA), r))
        }));
        match run {
            Ok(None) => {}
            Ok(Some((Ok(req), r))) => {
                decoded += 1;
                validated += 1;
                if let Err(m) = check_accepted(&r, &req) {
                    crashes.push((case, m));
                }
            }
            Ok(Some((Err(e), _))) => {
                decoded += 1;
                if let Err(m) = check_refusal(&e) {
                    crashes.push((case, m));
                }
            }
            Err(_) => crashes.push((case, "panicked".into())),
        }
    }
    let _ = std::panic::take_hook();
    eprintln!(
        "fuzz payloads: {CASES} cases: {decoded} decoded, {validated} valid, {} crashes",
        crashes.len()
    );
    assert!(
        crashes.is_empty(),
        "{:?}",
        &crashes[..crashes.len().min(20)]
    );
    assert!(
        decoded > 0 && decoded < CASES,
        "mutations reach both outcomes"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn accepted_mutations_are_journaled_as_sent() {
    let seeds = seeds();
    let dir = tempfile::tempdir().unwrap();
    let opened = Journal::open(dir.path(), Duration::from_secs(3600)).unwrap();
    let s = support::shared();
    // Nothing proves: every accepted job stays queued (or is superseded).
    s.synth_gate.close();
    let config = cuzk_core::config::EngineConfig {
        max_queued_jobs: 1000.into(),
        ..Default::default()
    };
    let engine = support::journaled_engine(&s, config, opened);
    let mut rng = ChaCha8Rng::seed_from_u64(0x0a11_0c8e);
    let (mut admitted, mut tried) = (0usize, 0usize);
    let start = Instant::now();
    while admitted < 300 {
        tried += 1;
        assert!(tried < 100_000, "too few mutations are accepted");
        let r = mutated(&mut rng, &seeds);
        if r.validate(MAX_VANILLA).is_err() {
            continue;
        }
        let e = engine.clone();
        let sub = tokio::task::spawn_blocking(move || e.submit(&r))
            .await
            .expect("Engine::submit does not panic");
        match sub {
            Ok(_) => admitted += 1,
            // Mutations reuse ids across kinds: the id rule refuses those.
            Err(cuzk_core::SubmitError::RequestIdConflict { .. }) => {}
            Err(e) => panic!("a valid request refused by a journaled engine: {e}"),
        }
    }
    eprintln!(
        "journaled {admitted} accepted mutations of {tried} in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    s.synth_gate.open();
    engine.shutdown(Duration::ZERO).await;
    drop(engine);
    // Every job left unfinished reads back as what was submitted (once the
    // engine's threads have let the journal go).
    let deadline = Instant::now() + Duration::from_secs(30);
    let o = loop {
        match Journal::open(dir.path(), Duration::from_secs(3600)) {
            Ok(o) => break o,
            Err(cuzk_core::journal::JournalError::Locked(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("the journal after the stop: {e}"),
        }
    };
    let queued: Vec<_> = o
        .entries
        .iter()
        .filter(|e| e.state == EntryState::Queued)
        .collect();
    assert!(!queued.is_empty(), "the stop leaves jobs journaled");
    for e in queued {
        let raw = o.journal.load_request(e.seq).expect("its payload reads");
        let req = raw.validate(MAX_VANILLA).expect("it is still valid");
        assert_eq!(
            req.digest, e.digest,
            "job {}: the journaled request is not the one accepted",
            e.job_id
        );
    }
}
