//! The caches' state in the engine (engine::cache drives it): data only, so the simulation
//! can hold it without importing its driver.

use super::arena::Arena;
use crate::world::bad_result::BadResult;
use crate::world::cache::CacheStore;

/// No fill: the call is answered from the cache (a hit) after the lookup's time.
pub(super) const NO_FILL: u32 = u32::MAX;

/// One runtime attempt at a dependency the policy looks in the cache of.
#[derive(Debug, Clone, Copy)]
pub(super) struct CacheCall {
    pub generation: u32,
    pub live: bool,
    pub run: u32,
    pub run_gen: u32,
    pub step: u8,
    pub serial: u32,
    pub station: u16,
    pub entry: u32,
    pub measured: bool,
    /// The fill it waits for, or NO_FILL for a hit being answered.
    pub fill: u32,
    /// It may be answered by a stale entry if the dependency fails (the entry was stale at
    /// the lookup, the policy serves stale, the step's task class is not forbidden).
    pub stale_ok: bool,
    /// A hit on an entry that stored a bad answer (a success-looking fault at its fill).
    pub bad: Option<BadResult>,
}

impl CacheCall {
    pub fn vacant() -> CacheCall {
        CacheCall {
            generation: 0,
            live: false,
            run: 0,
            run_gen: 0,
            step: 0,
            serial: 0,
            station: 0,
            entry: 0,
            measured: false,
            fill: NO_FILL,
            stale_ok: false,
            bad: None,
        }
    }
}

/// The one call to the dependency for a missed key, and the calls that wait for it.
#[derive(Debug, Clone)]
pub(super) struct FillSlot {
    pub generation: u32,
    pub station: u16,
    pub entry: u32,
    /// The attempt at the station, while it is out.
    pub job: Option<(u32, u32)>,
    /// The attempt serial of the call that sent it (its trace names it).
    pub leader_serial: u32,
    pub waiters: Vec<u32>,
}

impl FillSlot {
    pub fn vacant() -> FillSlot {
        FillSlot { generation: 0, station: 0, entry: 0, job: None, leader_serial: 0, waiters: Vec::new() }
    }
}

/// Every cache of one simulation, present only when the policy uses one.
pub(super) struct CacheState {
    /// By dependency: its entries, when the policy looks in its cache.
    pub stores: Vec<Option<CacheStore>>,
    pub calls: Arena<CacheCall>,
    pub fills: Arena<FillSlot>,
    /// By run slot: (the run's generation, it got a stale answer, one without provenance).
    pub stale_runs: Vec<(u32, bool, bool)>,
    /// Waiters of the fill being answered and their generations (kept for its capacity).
    pub scratch: Vec<(u32, u32)>,
}

/// The caches a policy uses, empty: None when it uses none.
pub(super) fn cache_state(model: &super::Model, policy: &crate::runtime::PolicyModel) -> Option<Box<CacheState>> {
    if policy.caches.iter().all(Option::is_none) {
        return None;
    }
    let stores = model
        .world
        .dependencies
        .iter()
        .zip(&policy.caches)
        .map(|(d, used)| match (&d.cache, used) {
            (Some(cache), Some(_)) => Some(CacheStore::new(cache)),
            (Some(_), None) | (None, _) => None,
        })
        .collect();
    Some(Box::new(CacheState {
        stores,
        calls: super::arena::Arena::new(),
        fills: super::arena::Arena::new(),
        stale_runs: Vec::new(),
        scratch: Vec::new(),
    }))
}
