//! The daemon binary refuses to serve a non-loopback address without TLS
//! and a token: it exits non-zero and names the missing keys.

use std::process::Command;

#[test]
fn a_non_loopback_listen_address_without_tls_and_token_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nstate_dir = \"{}\"\n[memory]\ntotal_budget = \"1GiB\"\nsafety_margin = \"0B\"\n",
            dir.path().join("state").display()
        ),
    )
    .unwrap();
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let out = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg("--config")
            .arg(&config)
            .arg("--listen")
            .arg(listen)
            .output()
            .expect("run cuzk-daemon");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{listen}: must not start\n{text}");
        for key in [
            "daemon.listen",
            "daemon.tls_cert",
            "daemon.tls_key",
            "daemon.auth_token_file",
            "daemon.insecure_remote",
        ] {
            assert!(text.contains(key), "{listen}: {key} not named in\n{text}");
        }
    }
}
