//! The fixture manifest: public inputs and file names of one fixture set.
//!
//! `manifest.json` is written last, so its presence marks a complete set.
//! Sealed (2 KiB) and synthetic sets (any size) share this layout.

use serde::{Deserialize, Serialize};

/// Manifest format version; bump when the layout changes.
pub const MANIFEST_VERSION: u32 = 4;

/// Public inputs and file names of one complete fixture set.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub sector_size: u64,
    pub miner_id: u64,
    /// The seed of a synthetic set (made without sealing, see
    /// `synthetic`); `None` for sealed sectors.
    #[serde(default)]
    pub synthetic: Option<u64>,
    /// The version of the synthetic generator that made the set (0: made
    /// before it was recorded); a set of another version is made again.
    #[serde(default)]
    pub generator: u32,
    pub porep: PoRepFixture,
    pub winning_post: PoStFixture,
    pub window_post: PoStFixture,
    /// WindowPoSt deadlines of several partitions, to prove partitions other
    /// than 0 and check them with `verify_window_post` as a whole. Sealed
    /// sets have one for the current proof version (V1_2, whose challenges
    /// ignore the partition index) and one for V1 (whose challenges depend on
    /// it); synthetic sets one V1_2 deadline of a full partition plus one
    /// sector, whose first partition is `window_post`.
    pub window_deadlines: Vec<DeadlineFixture>,
    pub snap: SnapFixture,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeadlineFixture {
    pub registered_proof: u64,
    /// The sectors' comm_r, or the first sector's where `comm_rs` is set
    /// (use [`DeadlineFixture::comm_r_of`]).
    #[serde(with = "hex32")]
    pub comm_r: [u8; 32],
    #[serde(with = "hex32")]
    pub randomness: [u8; 32],
    /// Each sector's comm_r, in `sector_numbers` order, where they differ
    /// (synthetic sets: one tree per sector); empty: all are `comm_r`.
    #[serde(default, with = "hex32_list")]
    pub comm_rs: Vec<[u8; 32]>,
    /// Every sector of the deadline, in challenge order.
    pub sector_numbers: Vec<u64>,
    /// Vanilla proof files of each partition.
    pub partitions: Vec<Vec<String>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoRepFixture {
    pub registered_proof: u64,
    pub sector_number: u64,
    pub c1_file: String,
    #[serde(with = "hex32")]
    pub comm_r: [u8; 32],
    #[serde(with = "hex32")]
    pub comm_d: [u8; 32],
    #[serde(with = "hex32")]
    pub ticket: [u8; 32],
    #[serde(with = "hex32")]
    pub seed: [u8; 32],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoStFixture {
    pub registered_proof: u64,
    /// The sectors proved, one vanilla proof file each (WindowPoSt: one
    /// partition's sectors; WinningPoSt: one sector).
    pub sector_numbers: Vec<u64>,
    /// The sectors' comm_r, or the first sector's where `comm_rs` is set
    /// (use [`PoStFixture::comm_r_of`]).
    #[serde(with = "hex32")]
    pub comm_r: [u8; 32],
    /// Each sector's comm_r, in `sector_numbers` order, where they differ
    /// (synthetic sets: one tree per sector); empty: all are `comm_r`.
    #[serde(default, with = "hex32_list")]
    pub comm_rs: Vec<[u8; 32]>,
    #[serde(with = "hex32")]
    pub randomness: [u8; 32],
    pub partition_index: u32,
    pub vanilla_files: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapFixture {
    pub registered_proof: u64,
    pub sector_number: u64,
    #[serde(with = "hex32")]
    pub comm_r_old: [u8; 32],
    #[serde(with = "hex32")]
    pub comm_r_new: [u8; 32],
    #[serde(with = "hex32")]
    pub comm_d_new: [u8; 32],
    pub vanilla_files: Vec<String>,
}

mod hex32 {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let s = String::deserialize(d)?;
        let v = hex::decode(&s).map_err(D::Error::custom)?;
        v.try_into()
            .map_err(|_| D::Error::custom("expected 32 bytes of hex"))
    }
}

mod hex32_list {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[[u8; 32]], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(hex::encode))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<[u8; 32]>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| {
                let v = hex::decode(s).map_err(D::Error::custom)?;
                v.try_into()
                    .map_err(|_| D::Error::custom("expected 32 bytes of hex"))
            })
            .collect()
    }
}

/// The comm_r of sector `i` (in `sector_numbers` order) of a fixture with a
/// shared `comm_r` and optional per-sector `comm_rs` (checked to be empty
/// or one per sector when the manifest is loaded).
fn comm_r_of(comm_r: &[u8; 32], comm_rs: &[[u8; 32]], i: usize) -> [u8; 32] {
    comm_rs.get(i).copied().unwrap_or(*comm_r)
}

impl PoStFixture {
    /// The comm_r of sector `i` of `sector_numbers`.
    pub fn comm_r_of(&self, i: usize) -> [u8; 32] {
        comm_r_of(&self.comm_r, &self.comm_rs, i)
    }
}

impl DeadlineFixture {
    /// The comm_r of sector `i` of `sector_numbers`.
    pub fn comm_r_of(&self, i: usize) -> [u8; 32] {
        comm_r_of(&self.comm_r, &self.comm_rs, i)
    }
}

impl Manifest {
    /// Errors unless every PoSt fixture's `comm_rs` is empty or holds one
    /// comm_r per sector.
    pub(crate) fn check_comm_rs(&self) -> anyhow::Result<()> {
        let posts = [&self.winning_post, &self.window_post]
            .into_iter()
            .map(|p| (p.comm_rs.len(), p.sector_numbers.len()));
        let deadlines = self
            .window_deadlines
            .iter()
            .map(|d| (d.comm_rs.len(), d.sector_numbers.len()));
        for (have, sectors) in posts.chain(deadlines) {
            anyhow::ensure!(
                have == 0 || have == sectors,
                "a PoSt fixture has {have} comm_r values for {sectors} sectors"
            );
        }
        Ok(())
    }
}
