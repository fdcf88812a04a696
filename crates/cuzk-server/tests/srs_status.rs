//! SRS control and observability over the wire: PreloadSRS / EvictSRS (and
//! their refusals), the SRS table of GetStatus, and the HTTP endpoint's
//! `/status` JSON and `/metrics` Prometheus text.

mod support;

use cuzk_core::ProofKind;
use cuzk_proto::v1::{srs_status::Tier, CancelProofRequest, EvictSrsRequest, PreloadSrsRequest};
use support::*;
use tonic::Code;

#[tokio::test(flavor = "multi_thread")]
async fn preload_and_evict_an_idle_srs() {
    let d = start(|_| {}).await;
    let mut c = d.client().await;
    let r = c
        .preload_srs(PreloadSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!r.already_loaded);
    let r = c
        .preload_srs(PreloadSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.already_loaded);
    let s = get_status(&mut c).await;
    let wpost = s
        .loaded_srs
        .iter()
        .find(|e| e.circuit_id == "wpost-2k")
        .expect("listed");
    assert_eq!(wpost.tier, Tier::Hot as i32);
    assert!(wpost.size_bytes > 10 << 20, "{}", wpost.size_bytes);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        wpost.last_used_unix_secs + 60 >= now && wpost.last_used_unix_secs <= now,
        "last use {} (now {now})",
        wpost.last_used_unix_secs
    );
    let hot = wpost.size_bytes;

    let r = c
        .evict_srs(EvictSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.was_loaded);
    assert_eq!(r.freed_bytes, hot);
    let s = get_status(&mut c).await;
    let wpost = s
        .loaded_srs
        .iter()
        .find(|e| e.circuit_id == "wpost-2k")
        .unwrap();
    assert_eq!(
        wpost.tier,
        Tier::Cold as i32,
        "no warm dir configured: back to cold"
    );
    let r = c
        .evict_srs(EvictSrsRequest {
            circuit_id: "wpost-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!r.was_loaded && r.freed_bytes == 0);

    for bad in ["", "porep", "seal-32g", "porep-3g"] {
        let e = c
            .preload_srs(PreloadSrsRequest {
                circuit_id: bad.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{bad:?}: {}", e.message());
        assert!(e.message().contains("circuit_id"));
        let e = c
            .evict_srs(EvictSrsRequest {
                circuit_id: bad.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
    }
    // Parameters the 2 KiB fixtures do not have.
    let e = c
        .preload_srs(PreloadSrsRequest {
            circuit_id: "porep-32g".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{}", e.message());
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn evicting_an_srs_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let warm = dir.path().to_path_buf();
    let d = start(move |c| c.srs.warm_dir = Some(warm)).await;
    let mut c = d.client().await;
    let job = c
        .submit_proof(request(ProofKind::PoRep))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    // The SRS is leased while a partition is proved.
    let mut in_use = false;
    for _ in 0..30000 {
        let s = get_status(&mut c).await;
        if s.loaded_srs
            .iter()
            .any(|e| e.circuit_id == "porep-2k" && e.ref_count > 0)
        {
            in_use = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(in_use, "the PoRep SRS was never seen in use");
    let e = c
        .evict_srs(EvictSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("in use"), "{}", e.message());
    c.cancel_proof(CancelProofRequest { job_id: job })
        .await
        .unwrap();
    // Once the job has let go, eviction works and the warm file remains.
    let mut evicted = None;
    for _ in 0..30000 {
        match c
            .evict_srs(EvictSrsRequest {
                circuit_id: "porep-2k".into(),
            })
            .await
        {
            Ok(r) => {
                evicted = Some(r.into_inner());
                break;
            }
            Err(e) if e.code() == Code::FailedPrecondition => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await
            }
            Err(e) => panic!("{e}"),
        }
    }
    let r = evicted.expect("evicted once idle");
    assert!(r.was_loaded && r.freed_bytes > 1 << 30);
    let s = get_status(&mut c).await;
    let porep = s
        .loaded_srs
        .iter()
        .find(|e| e.circuit_id == "porep-2k")
        .unwrap();
    assert_eq!(
        porep.tier,
        Tier::Warm as i32,
        "a warm file was written on first load ({})",
        disk_note(dir.path())
    );
    d.stop().await;
}

/// What the warm directory holds and the room left on its file system: a
/// warm file that could not be written (the daemon only warns) is most
/// often a full disk.
fn disk_note(dir: &std::path::Path) -> String {
    let files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let df = std::process::Command::new("df")
        .arg("-h")
        .arg(dir)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|e| format!("df: {e}"));
    format!("{} holds {files:?}; {df}", dir.display())
}

#[tokio::test(flavor = "multi_thread")]
async fn http_status_and_prometheus_metrics() {
    let d = start(|c| c.daemon.status_listen = "127.0.0.1:0".into()).await;
    let base = d.status_addr.clone().expect("status endpoint configured");
    let mut c = d.client().await;
    let job = c
        .submit_proof(request(ProofKind::WindowPost))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let r = await_job(&mut c, &job).await;
    assert_eq!(
        status_of(&r),
        cuzk_proto::v1::await_proof_response::Status::Completed
    );

    let (code, body) = http_get(&base, "/metrics").await;
    assert_eq!(code, 200);
    let lines = body.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text");
    let value = |name: &str, label: (&str, &str)| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && s.labels.get(label.0) == Some(label.1))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) => v,
                prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    };
    assert_eq!(
        value("cuzk_jobs_submitted_total", ("kind", "window-post")),
        Some(1.0)
    );
    assert_eq!(value("cuzk_queue_depth", ("kind", "porep")), Some(0.0));
    assert!(value("cuzk_memory_budget_bytes", ("state", "limit")).unwrap() > 0.0);
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric.starts_with("cuzk_partition_stage_seconds")));
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "cuzk_worker_busy_seconds_total"));

    let (code, body) = http_get(&base, "/status").await;
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["jobs"]["completed"], 1);
    assert_eq!(v["queues"].as_array().unwrap().len(), 4);
    assert!(v["budget"]["limit_bytes"].as_u64().unwrap() > 0);
    assert!(v["budget"]["used_bytes"].as_u64().unwrap() >= v["srs"][0]["bytes"].as_u64().unwrap());
    assert_eq!(v["srs"][0]["circuit_id"], "wpost-2k");
    assert_eq!(v["srs"][0]["tier"], "hot");
    assert_eq!(v["partitions"]["proving"], 0);
    assert_eq!(v["partitions"]["waiting_for_memory"], 0);
    assert!(v["workers"]["synthesis"].is_array() && v["workers"]["prove"].is_array());
    let (code, _) = http_get(&base, "/nope").await;
    assert_eq!(code, 404);
    d.stop().await;
}

/// The CPU backend, saying it keeps the H and B_G2 sections of every SRS
/// on its device (the others streamed), as the CUDA backend does on a card
/// too small for the whole SRS.
struct PartlyResident;

impl cuzk_prover::ProverBackend for PartlyResident {
    fn name(&self) -> String {
        "cpu-partly-resident".into()
    }
    fn host_bytes(&self, size: &cuzk_prover::WitnessSize) -> cuzk_prover::HostBytes {
        cuzk_prover::CpuBackend.host_bytes(size)
    }
    fn prepare_srs(
        &self,
        _: &cuzk_prover::SrsRef<'_>,
        _: &cuzk_prover::WitnessSize,
    ) -> Result<cuzk_prover::SrsPreparation, cuzk_prover::ProverError> {
        use cuzk_prover::srs::Section;
        Ok(cuzk_prover::SrsPreparation::Ready {
            srs: std::sync::Arc::new(()),
            bytes: 4096,
            resident: vec![Section::H, Section::BG2],
        })
    }
    fn prove_with(
        &self,
        witnesses: &mut [cuzk_prover::PartitionWitness],
        srs: &cuzk_prover::SrsRef<'_>,
        r: &[blstrs::Scalar],
        s: &[blstrs::Scalar],
        abc_freed: &mut dyn FnMut(usize),
    ) -> Result<(Vec<cuzk_prover::Proof>, cuzk_prover::ProveStats), cuzk_prover::ProverError> {
        cuzk_prover::CpuBackend.prove_with(witnesses, srs, r, s, abc_freed)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn status_names_the_sections_resident_on_a_device() {
    let backend: std::sync::Arc<dyn cuzk_prover::ProverBackend> =
        std::sync::Arc::new(PartlyResident);
    let d = start_on(
        |c| c.daemon.status_listen = "127.0.0.1:0".into(),
        Some(vec![backend]),
    )
    .await;
    let mut c = d.client().await;
    let job = c
        .submit_proof(request(ProofKind::WinningPost))
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    let r = await_job(&mut c, &job).await;
    assert!(fixtures()
        .verify(ProofKind::WinningPost, &r.proof)
        .expect("verifier runs"));
    // GetStatus: the SRS's copy on the device, with its sections.
    let s = get_status(&mut c).await;
    let srs = s
        .loaded_srs
        .iter()
        .find(|e| !e.on_devices.is_empty())
        .unwrap_or_else(|| panic!("an SRS with a device copy: {:?}", s.loaded_srs));
    assert_eq!(srs.on_devices.len(), 1, "{srs:?}");
    let copy = &srs.on_devices[0];
    assert_eq!(copy.backend, "cpu-partly-resident");
    assert_eq!(copy.size_bytes, 4096);
    assert_eq!(copy.resident_sections, ["h", "b_g2"]);
    // /status says the same.
    let base = d.status_addr.clone().expect("status listener");
    let (code, body) = http_get(&base, "/status").await;
    assert_eq!(code, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).expect("json");
    let copies: Vec<&serde_json::Value> = json["srs"]
        .as_array()
        .expect("srs array")
        .iter()
        .filter_map(|e| e["on_devices"].as_array())
        .flatten()
        .collect();
    assert_eq!(copies.len(), 1, "{body}");
    assert_eq!(
        copies[0]["resident_sections"],
        serde_json::json!(["h", "b_g2"])
    );
    d.stop().await;
}
