//! `gen-params --recorded`: parameters generated from the constraint
//! system recorded from a real partition (what the daemon keeps under
//! `<params>/r1cs`) are byte for byte the ones generated from the blank
//! circuit (the 2 KiB fixtures' files), for WindowPoSt, WinningPoSt and
//! SnapDeals. (PoRep's, 46 s here, was compared by hand: docs/PERF.md.)

use cuzk_bench::gen_params::{self, How};
use cuzk_core::ProofKind;
use cuzk_setup::FilecoinCircuit;

/// The 2 KiB circuit of `kind`.
fn circuit_of(kind: ProofKind) -> FilecoinCircuit {
    let circuits = gen_params::circuits(cuzk_fixtures::SectorSize::S2KiB, "all").expect("circuits");
    *circuits
        .iter()
        .find(|c| match kind {
            ProofKind::WindowPost => matches!(c, FilecoinCircuit::Window(_)),
            ProofKind::WinningPost => matches!(c, FilecoinCircuit::Winning(_)),
            ProofKind::SnapDeals => matches!(c, FilecoinCircuit::Update(_)),
            ProofKind::PoRep => matches!(c, FilecoinCircuit::Seal(_)),
        })
        .expect("the kind's circuit")
}

#[test]
fn parameters_from_a_recorded_partition_equal_the_blank_circuits() {
    let fixtures =
        cuzk_fixtures::ensure(&cuzk_fixtures::default_dir(), &mut |_| {}).expect("2 KiB fixtures");
    let tmp = tempfile::tempdir().expect("tempdir");
    let r1cs = cuzk_core::r1cs_manager::dir_for(tmp.path());
    std::fs::create_dir_all(&r1cs).expect("r1cs dir");
    for kind in [
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::SnapDeals,
    ] {
        let circuit = circuit_of(kind);
        // Without a recording, --recorded is an error naming the path.
        let err = gen_params::recorded_system(circuit, tmp.path()).expect_err("none recorded");
        assert!(
            err.to_string().contains("no recorded constraint system"),
            "{err:#}"
        );

        let req = fixtures
            .request(kind)
            .expect("request")
            .validate_without_params(u64::MAX)
            .expect("valid fixture request");
        let source = cuzk_core::prover::partition_source(&req).expect("partition source");
        assert_eq!(source.shape(), gen_params::shape_of(circuit), "{kind}");
        let mut cs = source.record(0).expect("recorded");
        let key = cuzk_core::r1cs_manager::file_key(source.shape());
        cs.key = key.clone();
        cuzk_r1cs::save(&cs, &cuzk_r1cs::file::path_for(&r1cs, &key)).expect("saved");

        let how = How {
            force: true,
            recorded: true,
            ..How::default()
        };
        gen_params::run(&[circuit], tmp.path(), how).expect("generated from the recording");
        let (_, ours, vk) = cuzk_setup::param_file_names(circuit, tmp.path()).expect("names");
        let (_, theirs, their_vk) =
            cuzk_setup::param_file_names(circuit, &fixtures.params_dir()).expect("names");
        for (a, b) in [(&ours, &theirs), (&vk, &their_vk)] {
            let (x, y) = (
                std::fs::read(a).expect("ours"),
                std::fs::read(b).expect("fixture's"),
            );
            assert!(
                x == y,
                "{kind}: {} differs from {}",
                a.display(),
                b.display()
            );
        }
    }

    // Another circuit's recording under WindowPoSt's key (a stale or
    // misplaced file) is refused and leaves no parameters behind.
    let window = circuit_of(ProofKind::WindowPost);
    let window_key = cuzk_core::r1cs_manager::file_key(&gen_params::shape_of(window));
    let winning_key = cuzk_core::r1cs_manager::file_key(&gen_params::shape_of(circuit_of(
        ProofKind::WinningPost,
    )));
    let other = tempfile::tempdir().expect("tempdir");
    let other_r1cs = cuzk_core::r1cs_manager::dir_for(other.path());
    std::fs::create_dir_all(&other_r1cs).expect("r1cs dir");
    let mut wrong = cuzk_r1cs::load(
        &cuzk_r1cs::file::path_for(&r1cs, &winning_key),
        &winning_key,
    )
    .expect("WinningPoSt's recording");
    wrong.key = window_key.clone();
    cuzk_r1cs::save(&wrong, &cuzk_r1cs::file::path_for(&other_r1cs, &window_key)).expect("saved");
    let how = How {
        recorded: true,
        ..How::default()
    };
    let err = gen_params::run(&[window], other.path(), how).expect_err("a wrong recording");
    assert!(
        format!("{err:#}").contains("parameters were removed"),
        "{err:#}"
    );
    let (_, params, vk) = cuzk_setup::param_file_names(window, other.path()).expect("names");
    assert!(
        !params.exists() && !vk.exists(),
        "the wrong parameters were left behind"
    );
}
