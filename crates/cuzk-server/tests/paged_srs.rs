//! An SRS that, with one partition, exceeds the whole memory budget: with
//! `srs.warm_dir` it is paged (a warm file written section by section,
//! mapped, not charged) and the proof is made and verified; without it the
//! job fails with an error that names `srs.warm_dir`.

mod support;

use cuzk_core::config::Amount;
use cuzk_core::ProofKind;
use cuzk_proto::v1::{await_proof_response::Status, srs_status::Tier};
use support::*;

/// 64 MiB (the smallest budget allowed), no margin: the 2 KiB WinningPoSt
/// SRS (~47 MB) and its partition do not fit together.
fn small_budget(c: &mut cuzk_server::Config) {
    c.memory.total_budget = Amount::Bytes(bytesize::ByteSize::mib(64));
    c.memory.safety_margin = bytesize::ByteSize::b(0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_srs_larger_than_the_budget_is_paged_from_the_warm_dir() {
    let warm = tempfile::tempdir().expect("tempdir");
    let dir = warm.path().to_path_buf();
    let d = start(move |c| {
        small_budget(c);
        c.srs.warm_dir = Some(dir);
    })
    .await;
    let mut c = d.client().await;
    let job = c
        .submit_proof(request(ProofKind::WinningPost))
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    let r = await_job(&mut c, &job).await;
    assert_eq!(status_of(&r), Status::Completed, "{}", r.error_message);
    assert!(fixtures()
        .verify(ProofKind::WinningPost, &r.proof)
        .expect("verifier runs"));
    let s = get_status(&mut c).await;
    let e = s
        .loaded_srs
        .iter()
        .find(|e| e.circuit_id == "winning-2k")
        .expect("listed");
    assert_eq!(e.tier, Tier::Hot as i32);
    assert!(e.size_bytes > 40 << 20, "mapped bytes {}", e.size_bytes);
    let warm_files: Vec<_> = std::fs::read_dir(warm.path())
        .expect("warm dir")
        .filter_map(|f| f.ok())
        .filter(|f| f.file_name().to_string_lossy().ends_with(".warm"))
        .collect();
    assert_eq!(warm_files.len(), 1, "one warm file written");
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_warm_dir_the_job_fails_and_says_why() {
    let d = start(small_budget).await;
    let mut c = d.client().await;
    let job = c
        .submit_proof(request(ProofKind::WinningPost))
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    let r = await_job(&mut c, &job).await;
    assert_eq!(status_of(&r), Status::Failed);
    assert!(
        r.error_message.contains("srs.warm_dir"),
        "{}",
        r.error_message
    );
    // The daemon still serves.
    get_status(&mut c).await;
    d.stop().await;
}
