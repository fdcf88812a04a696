//! Requests of every sector size whose tree shape another size shares are
//! checked against their own size: 512 MiB and 2 KiB sectors have the
//! same tree type (8-0-0), so a check that went by the tree type took a
//! 512 MiB PoRep C1 for a 2 KiB one and refused it (seen on the H200 demo
//! of 2026-12-02). Synthetic inputs, no parameters.

use cuzk_core::ProofKind;
use cuzk_fixtures::{ensure_synthetic, SectorSize, SyntheticSpec};

#[test]
fn a_512mib_porep_request_is_accepted_as_512mib() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SyntheticSpec {
        size: SectorSize::S512MiB,
        dir: dir.path().join("fixtures"),
        params: dir.path().join("params"),
        seed: 7,
        with_params: false,
    };
    let f = ensure_synthetic(&spec, &mut |_| {}).unwrap();
    for kind in ProofKind::ALL {
        let req = f.request(kind).unwrap();
        if let Err(e) = req.validate_without_params(u64::MAX) {
            panic!("{kind} 512 MiB request refused: {e}");
        }
    }
}
