//! cuzk-bench: the user's client of the cuzk daemon, as a library for its
//! binary and for cuzk-lab (which reuses the fixture selection, the
//! connection options and the in-process daemon set-up).
//!
//! [`select`] resolves the fixture flags, [`commands`] makes fixtures and
//! talks to a daemon (single, batch, status, metrics), [`demo`] is the
//! end-to-end demo, [`gen_params`] the fast insecure parameter generator's
//! command, [`remote`] holds `--token-file` / `--tls-ca`, [`progress`] the
//! progress bars.

pub mod commands;
pub mod demo;
pub mod gen_params;
pub mod progress;
pub mod remote;
pub mod select;
