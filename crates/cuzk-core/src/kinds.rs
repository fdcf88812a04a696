//! Proof kinds, priorities and registered proof types.
//!
//! Owns the mapping between the numbers that travel on the wire (Go's
//! `abi.RegisteredSealProof` / `RegisteredPoStProof` / `RegisteredUpdateProof`)
//! and filecoin-proofs-api's enums, the default priority of each kind, the
//! circuit id naming used in status ("porep-32g"), and the miner id to
//! prover id conversion.

use std::fmt;

use filecoin_proofs_api::{
    PoStType, ProverId, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
};

/// The four kinds of proof the engine produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProofKind {
    /// PoRep seal commit phase 2 (C2), all partitions of one sector.
    PoRep,
    /// SnapDeals empty-sector update proof.
    SnapDeals,
    /// One partition of a WindowPoSt.
    WindowPost,
    /// WinningPoSt.
    WinningPost,
}

impl ProofKind {
    /// Every kind, in wire order.
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PoRep,
        ProofKind::SnapDeals,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ];

    /// Short name used in logs, metrics labels, CLI flags and status.
    pub fn as_str(self) -> &'static str {
        match self {
            ProofKind::PoRep => "porep",
            ProofKind::SnapDeals => "snap",
            ProofKind::WindowPost => "window-post",
            ProofKind::WinningPost => "winning-post",
        }
    }

    /// Parses the short name (`porep`, `snap`, `window-post`, `winning-post`).
    pub fn parse(s: &str) -> Option<ProofKind> {
        ProofKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The priority a job of this kind gets when the request leaves it unset:
    /// WinningPoSt must land within a block time, WindowPoSt within its
    /// deadline; sealing work can wait.
    pub fn default_priority(self) -> Priority {
        match self {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPost => Priority::High,
            ProofKind::PoRep | ProofKind::SnapDeals => Priority::Normal,
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Scheduling priority; higher runs first, FIFO within one priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    Low = 1,
    Normal = 2,
    High = 3,
    Critical = 4,
}

impl Priority {
    /// From the wire value; `0` (unspecified) and unknown values give `None`.
    pub fn from_wire(v: i32) -> Option<Priority> {
        match v {
            1 => Some(Priority::Low),
            2 => Some(Priority::Normal),
            3 => Some(Priority::High),
            4 => Some(Priority::Critical),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

/// A registered proof decoded from its wire number, tagged with its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProofType {
    Seal(RegisteredSealProof),
    Winning(RegisteredPoStProof),
    Window(RegisteredPoStProof),
    Update(RegisteredUpdateProof),
}

/// A registered proof number that is not one of the kind's: the message
/// says what the number is and why it does not fit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownProof(pub String);

impl ProofType {
    /// Decodes `registered_proof` for a given kind.
    pub fn decode(kind: ProofKind, registered_proof: u64) -> Result<ProofType, UnknownProof> {
        Self::decode_message(kind, registered_proof).map_err(UnknownProof)
    }

    fn decode_message(kind: ProofKind, registered_proof: u64) -> Result<ProofType, String> {
        match kind {
            ProofKind::PoRep => seal_proof_from_wire(registered_proof)
                .map(ProofType::Seal)
                .ok_or_else(|| format!("{registered_proof} is not a known RegisteredSealProof")),
            ProofKind::SnapDeals => update_proof_from_wire(registered_proof)
                .map(ProofType::Update)
                .ok_or_else(|| format!("{registered_proof} is not a known RegisteredUpdateProof")),
            ProofKind::WinningPost | ProofKind::WindowPost => {
                let p = post_proof_from_wire(registered_proof).ok_or_else(|| {
                    format!("{registered_proof} is not a known RegisteredPoStProof")
                })?;
                match (kind, p.typ()) {
                    (ProofKind::WinningPost, PoStType::Winning) => Ok(ProofType::Winning(p)),
                    (ProofKind::WindowPost, PoStType::Window) => Ok(ProofType::Window(p)),
                    (_, PoStType::Winning) => Err(format!(
                        "{registered_proof} ({p:?}) is a WinningPoSt proof, not {kind}"
                    )),
                    (_, PoStType::Window) => Err(format!(
                        "{registered_proof} ({p:?}) is a WindowPoSt proof, not {kind}"
                    )),
                }
            }
        }
    }

    /// Sector size in bytes.
    pub fn sector_size(self) -> u64 {
        match self {
            ProofType::Seal(p) => u64::from(p.sector_size()),
            ProofType::Winning(p) | ProofType::Window(p) => u64::from(p.sector_size()),
            ProofType::Update(p) => u64::from(p.sector_size()),
        }
    }

    /// The kind of proof this registered proof makes.
    pub fn kind(self) -> ProofKind {
        match self {
            ProofType::Seal(_) => ProofKind::PoRep,
            ProofType::Winning(_) => ProofKind::WinningPost,
            ProofType::Window(_) => ProofKind::WindowPost,
            ProofType::Update(_) => ProofKind::SnapDeals,
        }
    }

    /// Circuit id in Curio's naming: `porep-32g`, `snap-2k`, `wpost-8m`,
    /// `winning-512m`. One id per SRS (parameter file).
    pub fn circuit_id(self) -> String {
        let prefix = match self.kind() {
            ProofKind::PoRep => "porep",
            ProofKind::SnapDeals => "snap",
            ProofKind::WindowPost => "wpost",
            ProofKind::WinningPost => "winning",
        };
        format!("{prefix}-{}", short_size(self.sector_size()))
    }
}

impl ProofType {
    /// The canonical registered proof of a circuit id (`porep-32g`,
    /// `snap-2k`, `wpost-8m`, `winning-512m`): every registered proof of one
    /// circuit id shares its parameter files.
    pub fn from_circuit_id(id: &str) -> Option<ProofType> {
        let (prefix, size) = id.split_once('-')?;
        let size = match size {
            "2k" => 0,
            "8m" => 1,
            "512m" => 2,
            "32g" => 3,
            "64g" => 4,
            _ => return None,
        };
        Some(match prefix {
            "porep" => ProofType::Seal(seal_proof_from_wire(5 + size)?),
            "snap" => ProofType::Update(update_proof_from_wire(size)?),
            "wpost" => ProofType::Window(post_proof_from_wire(10 + size)?),
            "winning" => ProofType::Winning(post_proof_from_wire(size)?),
            _ => return None,
        })
    }
}

impl fmt::Display for ProofType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofType::Seal(p) => write!(f, "{p:?}"),
            ProofType::Winning(p) | ProofType::Window(p) => write!(f, "{p:?}"),
            ProofType::Update(p) => write!(f, "{p:?}"),
        }
    }
}

/// `2k`, `8m`, `512m`, `32g`, `64g`.
pub fn short_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    if bytes >= KIB * KIB * KIB && bytes % (KIB * KIB * KIB) == 0 {
        format!("{}g", bytes / (KIB * KIB * KIB))
    } else if bytes >= KIB * KIB && bytes % (KIB * KIB) == 0 {
        format!("{}m", bytes / (KIB * KIB))
    } else if bytes % KIB == 0 {
        format!("{}k", bytes / KIB)
    } else {
        format!("{bytes}b")
    }
}

/// Go's `abi.RegisteredSealProof` numbering (same order as the Rust enum).
pub fn seal_proof_from_wire(v: u64) -> Option<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Some(match v {
        0 => StackedDrg2KiBV1,
        1 => StackedDrg8MiBV1,
        2 => StackedDrg512MiBV1,
        3 => StackedDrg32GiBV1,
        4 => StackedDrg64GiBV1,
        5 => StackedDrg2KiBV1_1,
        6 => StackedDrg8MiBV1_1,
        7 => StackedDrg512MiBV1_1,
        8 => StackedDrg32GiBV1_1,
        9 => StackedDrg64GiBV1_1,
        10 => StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        11 => StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        12 => StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        13 => StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        14 => StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        15 => StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        16 => StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        17 => StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        18 => StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        19 => StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
        _ => return None,
    })
}

/// The wire number of a seal proof (inverse of [`seal_proof_from_wire`]).
pub fn seal_proof_to_wire(p: RegisteredSealProof) -> u64 {
    (0..20)
        .find(|&v| seal_proof_from_wire(v) == Some(p))
        .expect("every RegisteredSealProof has a wire number")
}

/// Go's `abi.RegisteredPoStProof` numbering. Go's `StackedDrgWindow*V1_1`
/// (10..=14) are filecoin-proofs-api's `StackedDrgWindow*V1_2`.
pub fn post_proof_from_wire(v: u64) -> Option<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    Some(match v {
        0 => StackedDrgWinning2KiBV1,
        1 => StackedDrgWinning8MiBV1,
        2 => StackedDrgWinning512MiBV1,
        3 => StackedDrgWinning32GiBV1,
        4 => StackedDrgWinning64GiBV1,
        5 => StackedDrgWindow2KiBV1,
        6 => StackedDrgWindow8MiBV1,
        7 => StackedDrgWindow512MiBV1,
        8 => StackedDrgWindow32GiBV1,
        9 => StackedDrgWindow64GiBV1,
        10 => StackedDrgWindow2KiBV1_2,
        11 => StackedDrgWindow8MiBV1_2,
        12 => StackedDrgWindow512MiBV1_2,
        13 => StackedDrgWindow32GiBV1_2,
        14 => StackedDrgWindow64GiBV1_2,
        _ => return None,
    })
}

/// The wire number of a PoSt proof (inverse of [`post_proof_from_wire`]).
pub fn post_proof_to_wire(p: RegisteredPoStProof) -> u64 {
    (0..15)
        .find(|&v| post_proof_from_wire(v) == Some(p))
        .expect("every RegisteredPoStProof has a wire number")
}

/// Go's `abi.RegisteredUpdateProof` numbering.
pub fn update_proof_from_wire(v: u64) -> Option<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    Some(match v {
        0 => StackedDrg2KiBV1,
        1 => StackedDrg8MiBV1,
        2 => StackedDrg512MiBV1,
        3 => StackedDrg32GiBV1,
        4 => StackedDrg64GiBV1,
        _ => return None,
    })
}

/// The wire number of an update proof (inverse of [`update_proof_from_wire`]).
pub fn update_proof_to_wire(p: RegisteredUpdateProof) -> u64 {
    (0..5)
        .find(|&v| update_proof_from_wire(v) == Some(p))
        .expect("every RegisteredUpdateProof has a wire number")
}

/// The prover id of a miner: the payload of its Filecoin ID address (the
/// actor id as unsigned LEB128), left-aligned in 32 zero bytes, as lotus'
/// `toProverID` makes it.
pub fn prover_id_from_miner(miner_id: u64) -> ProverId {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    for slot in out.iter_mut() {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            *slot = byte;
            break;
        }
        *slot = byte | 0x80;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_numbers_round_trip() {
        for v in 0..20 {
            let p = seal_proof_from_wire(v).unwrap();
            assert_eq!(seal_proof_to_wire(p), v);
        }
        assert!(seal_proof_from_wire(20).is_none());
        for v in 0..15 {
            let p = post_proof_from_wire(v).unwrap();
            assert_eq!(post_proof_to_wire(p), v);
        }
        assert!(post_proof_from_wire(15).is_none());
        for v in 0..5 {
            let p = update_proof_from_wire(v).unwrap();
            assert_eq!(update_proof_to_wire(p), v);
        }
        assert!(update_proof_from_wire(5).is_none());
    }

    #[test]
    fn go_numbering_of_known_proofs() {
        assert_eq!(
            seal_proof_from_wire(8),
            Some(RegisteredSealProof::StackedDrg32GiBV1_1)
        );
        assert_eq!(
            post_proof_from_wire(13),
            Some(RegisteredPoStProof::StackedDrgWindow32GiBV1_2)
        );
        assert_eq!(
            post_proof_from_wire(3),
            Some(RegisteredPoStProof::StackedDrgWinning32GiBV1)
        );
        assert_eq!(
            update_proof_from_wire(3),
            Some(RegisteredUpdateProof::StackedDrg32GiBV1)
        );
    }

    #[test]
    fn kind_must_match_post_type() {
        assert!(matches!(
            ProofType::decode(ProofKind::WinningPost, 0),
            Ok(ProofType::Winning(_))
        ));
        let err = ProofType::decode(ProofKind::WinningPost, 10).unwrap_err();
        assert!(err.0.contains("WindowPoSt"), "{err}");
        let err = ProofType::decode(ProofKind::WindowPost, 0).unwrap_err();
        assert!(err.0.contains("WinningPoSt"), "{err}");
        assert!(ProofType::decode(ProofKind::PoRep, 99).is_err());
        assert!(ProofType::decode(ProofKind::SnapDeals, 5).is_err());
    }

    #[test]
    fn circuit_ids() {
        let t = ProofType::decode(ProofKind::PoRep, 8).unwrap();
        assert_eq!(t.circuit_id(), "porep-32g");
        let t = ProofType::decode(ProofKind::WindowPost, 10).unwrap();
        assert_eq!(t.circuit_id(), "wpost-2k");
        let t = ProofType::decode(ProofKind::WinningPost, 2).unwrap();
        assert_eq!(t.circuit_id(), "winning-512m");
        let t = ProofType::decode(ProofKind::SnapDeals, 1).unwrap();
        assert_eq!(t.circuit_id(), "snap-8m");
    }

    #[test]
    fn circuit_ids_round_trip() {
        for kind in ProofKind::ALL {
            for v in 0..20 {
                if let Ok(t) = ProofType::decode(kind, v) {
                    let back = ProofType::from_circuit_id(&t.circuit_id()).unwrap();
                    assert_eq!(back.circuit_id(), t.circuit_id());
                    assert_eq!(back.kind(), kind);
                }
            }
        }
        assert!(ProofType::from_circuit_id("porep-3g").is_none());
        assert!(ProofType::from_circuit_id("seal-32g").is_none());
        assert!(ProofType::from_circuit_id("porep").is_none());
    }

    #[test]
    fn prover_id_is_leb128_of_actor_id() {
        assert_eq!(prover_id_from_miner(0)[..2], [0, 0]);
        assert_eq!(prover_id_from_miner(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id_from_miner(128)[..3], [0x80, 0x01, 0]);
        assert_eq!(prover_id_from_miner(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id_from_miner(u64::MAX)[9], 0x01);
    }

    #[test]
    fn default_priorities() {
        assert_eq!(
            ProofKind::WinningPost.default_priority(),
            Priority::Critical
        );
        assert_eq!(ProofKind::WindowPost.default_priority(), Priority::High);
        assert_eq!(ProofKind::PoRep.default_priority(), Priority::Normal);
        assert_eq!(ProofKind::SnapDeals.default_priority(), Priority::Normal);
    }
}
