//! The sector sizes fixtures are made for, and their registered proofs.

use std::fmt;
use std::str::FromStr;

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// A sector size of the registered proofs (the test sizes and the two the
/// network seals).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectorSize {
    S2KiB,
    S8MiB,
    S512MiB,
    S32GiB,
    S64GiB,
}

impl SectorSize {
    pub const ALL: [SectorSize; 5] = [
        SectorSize::S2KiB,
        SectorSize::S8MiB,
        SectorSize::S512MiB,
        SectorSize::S32GiB,
        SectorSize::S64GiB,
    ];

    /// Bytes of one sector.
    pub fn bytes(self) -> u64 {
        match self {
            SectorSize::S2KiB => 2 << 10,
            SectorSize::S8MiB => 8 << 20,
            SectorSize::S512MiB => 512 << 20,
            SectorSize::S32GiB => 32 << 30,
            SectorSize::S64GiB => 64 << 30,
        }
    }

    /// The size with this many bytes.
    pub fn from_bytes(bytes: u64) -> Option<SectorSize> {
        SectorSize::ALL.into_iter().find(|s| s.bytes() == bytes)
    }

    /// `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB`.
    pub fn name(self) -> &'static str {
        match self {
            SectorSize::S2KiB => "2KiB",
            SectorSize::S8MiB => "8MiB",
            SectorSize::S512MiB => "512MiB",
            SectorSize::S32GiB => "32GiB",
            SectorSize::S64GiB => "64GiB",
        }
    }

    /// The interactive PoRep of this size (the version Curio seals with).
    pub fn seal_proof(self) -> RegisteredSealProof {
        use RegisteredSealProof::*;
        match self {
            SectorSize::S2KiB => StackedDrg2KiBV1_1,
            SectorSize::S8MiB => StackedDrg8MiBV1_1,
            SectorSize::S512MiB => StackedDrg512MiBV1_1,
            SectorSize::S32GiB => StackedDrg32GiBV1_1,
            SectorSize::S64GiB => StackedDrg64GiBV1_1,
        }
    }

    pub fn winning_proof(self) -> RegisteredPoStProof {
        use RegisteredPoStProof::*;
        match self {
            SectorSize::S2KiB => StackedDrgWinning2KiBV1,
            SectorSize::S8MiB => StackedDrgWinning8MiBV1,
            SectorSize::S512MiB => StackedDrgWinning512MiBV1,
            SectorSize::S32GiB => StackedDrgWinning32GiBV1,
            SectorSize::S64GiB => StackedDrgWinning64GiBV1,
        }
    }

    /// The current WindowPoSt version (V1_2).
    pub fn window_proof(self) -> RegisteredPoStProof {
        use RegisteredPoStProof::*;
        match self {
            SectorSize::S2KiB => StackedDrgWindow2KiBV1_2,
            SectorSize::S8MiB => StackedDrgWindow8MiBV1_2,
            SectorSize::S512MiB => StackedDrgWindow512MiBV1_2,
            SectorSize::S32GiB => StackedDrgWindow32GiBV1_2,
            SectorSize::S64GiB => StackedDrgWindow64GiBV1_2,
        }
    }

    pub fn update_proof(self) -> RegisteredUpdateProof {
        use RegisteredUpdateProof::*;
        match self {
            SectorSize::S2KiB => StackedDrg2KiBV1,
            SectorSize::S8MiB => StackedDrg8MiBV1,
            SectorSize::S512MiB => StackedDrg512MiBV1,
            SectorSize::S32GiB => StackedDrg32GiBV1,
            SectorSize::S64GiB => StackedDrg64GiBV1,
        }
    }
}

impl fmt::Display for SectorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A sector size this crate does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sector size {0:?}: use 2KiB, 8MiB, 512MiB, 32GiB or 64GiB")]
pub struct UnknownSectorSize(pub String);

impl FromStr for SectorSize {
    type Err = UnknownSectorSize;

    /// `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB` (any case, `KB`/`MB`/`GB`
    /// and a bare byte count accepted).
    fn from_str(s: &str) -> Result<SectorSize, UnknownSectorSize> {
        let t = s.trim().to_ascii_lowercase().replace("ib", "b");
        let found = SectorSize::ALL.into_iter().find(|size| {
            size.name().to_ascii_lowercase().replace("ib", "b") == t
                || t.parse::<u64>().ok() == Some(size.bytes())
        });
        found.ok_or_else(|| UnknownSectorSize(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_proofs_have_the_size() {
        for size in SectorSize::ALL {
            assert_eq!(size.name().parse::<SectorSize>(), Ok(size));
            assert_eq!(size.bytes().to_string().parse::<SectorSize>(), Ok(size));
            assert_eq!(u64::from(size.seal_proof().sector_size()), size.bytes());
            assert_eq!(u64::from(size.winning_proof().sector_size()), size.bytes());
            assert_eq!(u64::from(size.window_proof().sector_size()), size.bytes());
            assert_eq!(u64::from(size.update_proof().sector_size()), size.bytes());
        }
        assert_eq!("32gib".parse::<SectorSize>(), Ok(SectorSize::S32GiB));
        assert!("16MiB".parse::<SectorSize>().is_err());
    }
}
