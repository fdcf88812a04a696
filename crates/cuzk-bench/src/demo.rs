//! The end-to-end demo: fixtures, an in-process daemon on the default
//! (embedded) configuration (the CPU prover, or CUDA when built with it and
//! a GPU is present), one proof of each kind
//! through gRPC, each verified again on the client side.

use anyhow::Result;
use cuzk_core::ProofKind;
use cuzk_server::Daemon;
use indicatif::MultiProgress;

use crate::commands::{gen_fixtures, local_daemon_config, prove_one, result_line};
use crate::progress::spinner;
use crate::select::Selection;

/// Runs the demo; `Ok(true)` when every proof verified.
pub async fn run(sel: &Selection) -> Result<bool> {
    let sel_owned = sel.clone();
    let fixtures = tokio::task::spawn_blocking(move || gen_fixtures(&sel_owned, false)).await??;

    let config = local_daemon_config(&fixtures)?;
    let daemon = Daemon::start(config).await?;
    let addr = daemon.client_address();
    eprintln!(
        "daemon listening on {addr} (prover backends: {})",
        daemon.engine().status().backends.join(", ")
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(daemon.serve(async {
        let _ = stop_rx.await;
    }));

    let bars = MultiProgress::new();
    let kinds = [
        ProofKind::PoRep,
        ProofKind::SnapDeals,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ];
    let tasks: Vec<_> = kinds
        .into_iter()
        .map(|kind| {
            let bar = bars.add(spinner(format!("proving {kind}")));
            let (addr, fixtures) = (addr.clone(), fixtures.clone());
            tokio::spawn(async move {
                let r = prove_one(&addr, &fixtures, kind, format!("demo-{kind}"), 0).await;
                bar.finish_with_message(match &r {
                    Ok(c) if c.verified => format!("{kind} done"),
                    _ => format!("{kind} FAILED"),
                });
                r
            })
        })
        .collect();
    let mut results = Vec::new();
    for (kind, t) in kinds.into_iter().zip(tasks) {
        results.push((kind, t.await?));
    }
    bars.clear().ok();

    let mut all_ok = true;
    for (kind, r) in results {
        match r {
            Ok(c) => {
                all_ok &= c.verified;
                println!("{}", result_line(kind, &c));
            }
            Err(e) => {
                all_ok = false;
                println!(
                    "{:<13} total_ms=0 verified=false  (error: {e:#})",
                    kind.as_str()
                );
            }
        }
    }
    let _ = stop_tx.send(());
    server.await??;
    Ok(all_ok)
}
