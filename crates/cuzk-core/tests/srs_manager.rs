//! SRS tiers: load on first use, preload, evict (refused while in use), LRU
//! eviction under memory pressure, all charged to the budget.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cuzk_core::budget::MemoryBudget;
use cuzk_core::srs_manager::{SrsError, SrsManager, Tier};
use support::{porep, window, winning, FakeLoader};

/// A manager over 1000-point fake SRS; returns it, its budget and the size
/// of one SRS.
fn manager(limit: u64, min_idle: Duration) -> (Arc<SrsManager>, Arc<MemoryBudget>, u64) {
    let loader = FakeLoader {
        points: 1000,
        loads: Mutex::new(0),
    };
    let bytes = loader.srs().bytes();
    let budget = MemoryBudget::new(limit);
    (
        SrsManager::new(Arc::new(loader), budget.clone(), min_idle),
        budget,
        bytes,
    )
}

#[test]
fn evicting_an_idle_srs_frees_its_bytes() {
    let (m, budget, bytes) = manager(1 << 30, Duration::ZERO);
    let (already, _) = m.preload("wpost-2k").unwrap();
    assert!(!already);
    assert!(
        m.preload("wpost-2k").unwrap().0,
        "second preload finds it hot"
    );
    assert_eq!(budget.used(), bytes);
    let e = &m.entries()[0];
    assert_eq!(
        (e.circuit_id.as_str(), e.tier, e.bytes, e.in_use),
        ("wpost-2k", Tier::Hot, bytes, 0)
    );
    assert_eq!(m.evict("wpost-2k").unwrap(), (true, bytes));
    assert_eq!(budget.used(), 0);
    assert_eq!(m.entries()[0].tier, Tier::Cold);
    assert_eq!(
        m.evict("wpost-2k").unwrap(),
        (false, 0),
        "nothing left to free"
    );
    assert_eq!(m.evict("porep-32g").unwrap(), (false, 0), "never loaded");
    assert!(matches!(
        m.evict("nonsense"),
        Err(SrsError::UnknownCircuit(_))
    ));
    assert!(matches!(
        m.preload("porep-3g"),
        Err(SrsError::UnknownCircuit(_))
    ));
}

#[test]
fn evicting_an_srs_in_use_is_refused() {
    let (m, budget, bytes) = manager(1 << 30, Duration::ZERO);
    let (lease, took) = m.acquire(porep(), Duration::ZERO, &|| false).unwrap();
    assert!(took > Duration::ZERO || budget.used() == bytes);
    assert_eq!(m.entries()[0].in_use, 1);
    match m.evict("porep-2k") {
        Err(SrsError::InUse { in_use, .. }) => assert_eq!(in_use, 1),
        other => panic!("expected InUse, got {other:?}"),
    }
    drop(lease);
    assert_eq!(m.entries()[0].in_use, 0);
    assert_eq!(m.evict("porep-2k").unwrap(), (true, bytes));
}

#[test]
fn memory_pressure_evicts_the_least_recently_used_idle_srs() {
    let bytes = manager(1, Duration::ZERO).2;
    let limit = 2 * bytes + bytes / 2;
    let (m, budget, _) = manager(limit, Duration::ZERO);
    m.preload("wpost-2k").unwrap();
    std::thread::sleep(Duration::from_millis(5));
    m.preload("winning-2k").unwrap();
    // A third does not fit: the least recently used idle one goes.
    let (lease, _) = m
        .acquire(porep(), Duration::from_secs(1), &|| false)
        .unwrap();
    assert!(budget.peak() <= limit);
    let tiers: Vec<_> = m
        .entries()
        .into_iter()
        .map(|e| (e.circuit_id, e.tier))
        .collect();
    assert_eq!(
        tiers,
        vec![
            ("porep-2k".to_string(), Tier::Hot),
            ("winning-2k".to_string(), Tier::Hot),
            ("wpost-2k".to_string(), Tier::Cold),
        ]
    );
    // With everything in use, nothing can be evicted: the load waits, then
    // gives up.
    let (_w, _) = m.acquire(winning(), Duration::ZERO, &|| false).unwrap();
    let err = m
        .acquire(window(), Duration::from_millis(50), &|| false)
        .err()
        .unwrap();
    assert!(matches!(err, SrsError::NoRoom { .. }), "{err}");
    drop(lease);
}

#[test]
fn an_srs_idle_for_less_than_the_minimum_is_kept() {
    let loader = FakeLoader {
        points: 1000,
        loads: Mutex::new(0),
    };
    let bytes = loader.srs().bytes();
    let budget = MemoryBudget::new(bytes + bytes / 2);
    let m = SrsManager::new(Arc::new(loader), budget, Duration::from_secs(3600));
    m.preload("wpost-2k").unwrap();
    let err = m
        .acquire(porep(), Duration::from_millis(20), &|| false)
        .err()
        .unwrap();
    assert!(matches!(err, SrsError::NoRoom { .. }), "{err}");
    let wpost = m
        .entries()
        .into_iter()
        .find(|e| e.circuit_id == "wpost-2k")
        .unwrap();
    assert_eq!(wpost.tier, Tier::Hot);
}
