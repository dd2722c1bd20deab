//! A cache in front of a dependency (docs/essay.md section 23): its contract, its key space and
//! its entries as one pure state machine. The world owns the key space and the entries; a
//! policy decides whether its runtime looks in the cache and may serve stale entries
//! (runtime::cache_use); the engine drives lookups, fills and single-flight merges
//! (engine::cache).
//!
//! An entry is stored when a fill (the one call to the dependency for a missed key) answers,
//! and is not renewed by hits (a TTL cache, RFC 9111's freshness lifetime counted from the
//! response). Its age decides what a lookup finds: fresh (served as a normal result), stale
//! (past the fresh TTL but within `stale_if_error_s`: served only when the dependency fails,
//! RFC 5861), expired (never served), negative (a not-found answer kept `negative_ttl_s`),
//! or nothing (a miss). A cold cache (a restart) empties every entry at once: an entry
//! stored before the last restart is a miss.

use super::bad_result::BadResult;
use super::check::Checker;
use crate::scenario::types::CacheSpec;
use crate::scenario::{FieldPath, ScenarioError, quote};
use crate::sim::{Micros, StreamKey, s_to_us, stable_name_id};

/// Keys in one scope, and entries in all scopes (16 bytes each: 64 MB at the limit).
pub const MAX_CACHE_KEYS: u32 = 1_000_000;
pub const MAX_CACHE_ENTRIES: u64 = 4_000_000;
/// A hit's time, at most (a cache slower than a minute is no cache).
pub const MAX_LOOKUP_MS: f64 = 60_000.0;

crate::named_enum! {
    /// Whose lookups share entries (the essay's `cache_scope`).
    pub enum CacheScope {
        Global => "global",
        /// One key space per tenant (a workflow's `tenant`; workflows without one share a space).
        Tenant => "tenant",
        /// One key space per user: each run is drawn one of `users`.
        User => "user",
    }
}

crate::named_enum! {
    /// How a lookup picks its key among `keys`.
    pub enum Popularity {
        Uniform => "uniform",
        /// Key k (from 1) with weight k^-s.
        Zipf => "zipf",
    }
}

crate::named_enum! {
    /// What a lookup found; the names are as in `cache_lookup_total.<name>`.
    pub enum LookupState {
        /// Within the fresh TTL: answered as a normal result.
        Fresh => "fresh",
        /// A not-found answer within the negative TTL: answered (nothing found).
        Negative => "negative",
        /// Past the fresh TTL, within stale-if-error: the dependency is asked; the entry
        /// answers only if it fails.
        Stale => "stale",
        /// Past every window: never used; the dependency is asked.
        Expired => "expired",
        /// No entry: the dependency is asked.
        Miss => "miss",
        /// The cache itself failed (a cache_outage fault): the call goes to the dependency.
        Unavailable => "unavailable",
    }
}

impl LookupState {
    /// Answered from the cache without the dependency.
    pub fn is_hit(self) -> bool {
        match self {
            LookupState::Fresh | LookupState::Negative => true,
            LookupState::Stale | LookupState::Expired | LookupState::Miss | LookupState::Unavailable => false,
        }
    }
}

/// A dependency's compiled `cache` table.
#[derive(Debug, Clone)]
pub struct CacheModel {
    pub data_class: Option<String>,
    pub scope: CacheScope,
    pub fresh_ttl_us: Micros,
    pub stale_if_error_us: Micros,
    pub negative_ttl_us: Micros,
    pub provenance_required: bool,
    pub forbidden_for: Vec<String>,
    pub keys: u32,
    pub popularity: Popularity,
    /// Zipf only: the cumulative weights of keys 1..=k, normalised (searched by a draw).
    cdf: Vec<f64>,
    pub not_found_ratio: f64,
    /// Scopes: 1, the tenants (+1 for workflows without one), or the users.
    pub scopes: u32,
    /// With tenant scope: each workflow's scope.
    pub workflow_scope: Vec<u32>,
    pub lookup_us: Micros,
    /// Names the key space's own draws (which keys the dependency finds nothing for).
    pub stream_id: u64,
    /// With `result_ttl_ms`: each key's freshness lifetime, the lesser of the TTL its results
    /// carry and `fresh_ttl_us` (MCP's `ttlMs` is per result; the contract still caps it).
    /// Empty without: every entry has `fresh_ttl_us` (no cost for caches without hints).
    result_fresh_us: Vec<Micros>,
}

impl CacheModel {
    /// Entries over every scope.
    pub fn entries(&self) -> usize {
        self.keys as usize * self.scopes as usize
    }

    /// The entry a lookup asks for: its scope (the workflow's tenant, or a user drawn by
    /// `user_unit`) and its key (drawn by `key_unit` from the popularity law).
    pub fn entry(&self, workflow: usize, key_unit: f64, user_unit: f64) -> u32 {
        let scope = match self.scope {
            CacheScope::Global => 0,
            CacheScope::Tenant => self.workflow_scope[workflow],
            CacheScope::User => ((user_unit * f64::from(self.scopes)) as u32).min(self.scopes - 1),
        };
        scope * self.keys + self.key(key_unit)
    }

    /// Key index in 0..keys for a draw in [0, 1).
    pub fn key(&self, unit: f64) -> u32 {
        let k = match self.popularity {
            Popularity::Uniform => (unit * f64::from(self.keys)) as u32,
            Popularity::Zipf => self.cdf.partition_point(|&c| c <= unit) as u32,
        };
        k.min(self.keys - 1)
    }

    /// How long `entry` stays fresh after it was stored: the contract's `fresh_ttl_s`, or the
    /// lesser of it and the TTL its key's results carry.
    pub fn fresh_ttl_of(&self, entry: u32) -> Micros {
        if self.result_fresh_us.is_empty() {
            self.fresh_ttl_us
        } else {
            self.result_fresh_us[(entry % self.keys) as usize]
        }
    }

    /// The dependency finds nothing for this entry (the same answer on every fill).
    pub fn absent(&self, entry: u32) -> bool {
        self.not_found_ratio > 0.0
            && StreamKey::root(self.stream_id).with(u64::from(entry)).stream().unit() < self.not_found_ratio
    }
}

/// Compiles `[dependency.cache]`; `tenants` is each workflow's tenant.
pub(super) fn compile_cache(
    c: &Checker,
    path: &FieldPath,
    dependency: &str,
    spec: &CacheSpec,
    tenants: &[Option<String>],
) -> Result<CacheModel, ScenarioError> {
    let seconds = |field: &str, value: Option<f64>| -> Result<Micros, ScenarioError> {
        Ok(s_to_us(c.non_negative(&path.key(field), value.unwrap_or(0.0))?))
    };
    let fresh_ttl_us = seconds("fresh_ttl_s", Some(spec.fresh_ttl_s))?;
    let stale_if_error_us = seconds("stale_if_error_s", spec.stale_if_error_s)?;
    let negative_ttl_us = seconds("negative_ttl_s", spec.negative_ttl_s)?;
    let lookup_ms = c.non_negative(&path.key("lookup_ms"), spec.lookup_ms.unwrap_or(0.0))?;
    // A hit has no timeout of its own: a lookup slower than this is a misconfiguration, not a
    // cache (and one past the simulation's end would leave its run in flight for ever).
    if lookup_ms > MAX_LOOKUP_MS {
        return Err(c.err(
            &path.key("lookup_ms"),
            format!("{} ms is more than {MAX_LOOKUP_MS} ms (a minute)", crate::scenario::locate::shown(lookup_ms)),
        ));
    }
    let lookup_us = crate::sim::ms_to_us(lookup_ms);
    let scope = c.named(&path.key("cache_scope"), spec.cache_scope.as_deref(), CacheScope::Global)?;
    let popularity = c.named(&path.key("popularity"), spec.popularity.as_deref(), Popularity::Uniform)?;
    let keys = c.in_range(&path.key("keys"), spec.keys, 1, MAX_CACHE_KEYS)?;
    let not_found_ratio = c.probability(&path.key("not_found_ratio"), spec.not_found_ratio.unwrap_or(0.0))?;
    let exponent = match (popularity, spec.zipf_exponent) {
        (Popularity::Zipf, s) => c.non_negative(&path.key("zipf_exponent"), s.unwrap_or(1.0))?,
        (Popularity::Uniform, None) => 0.0,
        (Popularity::Uniform, Some(_)) => {
            return Err(c.err(&path.key("zipf_exponent"), "applies only with popularity = \"zipf\""));
        }
    };
    let (scopes, workflow_scope) = match (scope, spec.users) {
        (CacheScope::User, Some(users)) => (c.in_range(&path.key("users"), users, 1, MAX_CACHE_KEYS)?, Vec::new()),
        (CacheScope::User, None) => {
            return Err(
                c.err(&path.key("users"), "cache_scope = \"user\" needs `users`, the users runs are drawn from")
            );
        }
        (CacheScope::Global | CacheScope::Tenant, Some(_)) => {
            return Err(c.err(&path.key("users"), "applies only with cache_scope = \"user\""));
        }
        (CacheScope::Global, None) => (1, Vec::new()),
        (CacheScope::Tenant, None) => {
            // Tenants in sorted order, after scope 0 for the workflows without one (if any).
            let mut names: Vec<&str> = tenants.iter().flatten().map(String::as_str).collect();
            names.sort_unstable();
            names.dedup();
            // Workflows without a tenant share scope 0, which exists only when there are some.
            let untenanted = u32::from(tenants.iter().any(Option::is_none));
            let scope_of = |t: &Option<String>| match t {
                Some(t) => untenanted + names.iter().position(|n| n == t).unwrap_or(0) as u32,
                None => 0,
            };
            let workflow_scope = tenants.iter().map(scope_of).collect();
            (untenanted + names.len() as u32, workflow_scope)
        }
    };
    if u64::from(keys) * u64::from(scopes) > MAX_CACHE_ENTRIES {
        return Err(c.err(
            &path.key("keys"),
            format!("{keys} keys x {scopes} scopes is more than {MAX_CACHE_ENTRIES} entries"),
        ));
    }
    for (i, class) in spec.forbidden_for.iter().enumerate() {
        if class.is_empty() {
            return Err(c.err(&path.key("forbidden_for").index(i), "a task class name is not empty"));
        }
    }
    let cdf = match popularity {
        Popularity::Uniform => Vec::new(),
        Popularity::Zipf => {
            let mut cdf: Vec<f64> = Vec::with_capacity(keys as usize);
            let mut total = 0.0;
            for k in 1..=keys {
                total += f64::from(k).powf(-exponent);
                cdf.push(total);
            }
            cdf.iter_mut().for_each(|c| *c /= total);
            cdf
        }
    };
    if let Some(class) = &spec.data_class
        && class.is_empty()
    {
        return Err(c.err(&path.key("data_class"), format!("{} is no data class", quote(class))));
    }
    let stream_id = stable_name_id(dependency).wrapping_add(0xCAC4);
    // Each key's results carry one TTL (a server sets it per method or resource, not per
    // reply), drawn on a stream of the key space's own, apart from the not-found draws.
    let result_fresh_us = match &spec.result_ttl_ms {
        None => Vec::new(),
        Some(ttl) => {
            let dist = c.distribution(&path.key("result_ttl_ms"), ttl)?;
            (0..keys)
                .map(|k| {
                    let mut stream = StreamKey::root(stream_id).with(u64::MAX).with(u64::from(k)).stream();
                    let ms = dist.sample_ms(&mut stream).max(0.0);
                    crate::sim::ms_to_us(ms).min(fresh_ttl_us)
                })
                .collect()
        }
    };
    Ok(CacheModel {
        data_class: spec.data_class.clone(),
        scope,
        fresh_ttl_us,
        stale_if_error_us,
        negative_ttl_us,
        provenance_required: spec.provenance_required.unwrap_or(true),
        forbidden_for: spec.forbidden_for.clone(),
        keys,
        popularity,
        cdf,
        not_found_ratio,
        scopes,
        workflow_scope,
        lookup_us,
        stream_id,
        result_fresh_us,
    })
}

/// No fill in flight for an entry.
const NO_FILL: u32 = u32::MAX;
/// An empty entry's time.
const NEVER: Micros = Micros::MAX;

#[derive(Debug, Clone, Copy)]
struct Entry {
    stored_at: Micros,
    negative: bool,
    /// The answer stored looked like success and was not (a success-looking fault at the fill):
    /// every lookup it answers gets it, as a real cache serves what it was given.
    bad: Option<BadResult>,
    /// The fill in flight for this key (single-flight), or NO_FILL.
    fill: u32,
}

/// One cache's entries, by entry index ([`CacheModel::entry`]).
#[derive(Debug, Clone)]
pub struct CacheStore {
    entries: Vec<Entry>,
    /// The last restart (cold cache): entries stored before it are gone.
    cleared_at: Micros,
}

impl CacheStore {
    pub fn new(model: &CacheModel) -> CacheStore {
        CacheStore {
            entries: vec![Entry { stored_at: NEVER, negative: false, bad: None, fill: NO_FILL }; model.entries()],
            cleared_at: 0,
        }
    }

    /// What a lookup of `entry` finds at `now`.
    pub fn lookup(&self, model: &CacheModel, now: Micros, entry: u32) -> LookupState {
        let e = self.entries[entry as usize];
        if e.stored_at == NEVER || e.stored_at < self.cleared_at {
            return LookupState::Miss;
        }
        let age = now - e.stored_at;
        if e.negative {
            return if age < model.negative_ttl_us { LookupState::Negative } else { LookupState::Expired };
        }
        let fresh_ttl_us = model.fresh_ttl_of(entry);
        if age < fresh_ttl_us {
            LookupState::Fresh
        } else if age < fresh_ttl_us.saturating_add(model.stale_if_error_us) {
            LookupState::Stale
        } else {
            LookupState::Expired
        }
    }

    /// The entry may still answer when the dependency fails: a found answer within the fresh
    /// TTL plus stale-if-error.
    pub fn stale_usable(&self, model: &CacheModel, now: Micros, entry: u32) -> bool {
        matches!(self.lookup(model, now, entry), LookupState::Fresh | LookupState::Stale)
            && !self.entries[entry as usize].negative
    }

    /// The fill in flight for `entry`, if any.
    pub fn fill(&self, entry: u32) -> Option<u32> {
        let f = self.entries[entry as usize].fill;
        (f != NO_FILL).then_some(f)
    }

    pub fn begin_fill(&mut self, entry: u32, fill: u32) {
        debug_assert_eq!(self.entries[entry as usize].fill, NO_FILL, "one fill per key at a time");
        self.entries[entry as usize].fill = fill;
    }

    pub fn end_fill(&mut self, entry: u32) {
        self.entries[entry as usize].fill = NO_FILL;
    }

    /// The dependency answered for `entry` at `now`: found, or not (`negative`), and what was
    /// wrong with an answer that looked like success (`bad`).
    pub fn store(&mut self, now: Micros, entry: u32, negative: bool, bad: Option<BadResult>) {
        let e = &mut self.entries[entry as usize];
        e.stored_at = now;
        e.negative = negative;
        e.bad = bad;
    }

    /// What is wrong with the answer stored for `entry`, if it was a bad one.
    pub fn bad(&self, entry: u32) -> Option<BadResult> {
        self.entries[entry as usize].bad
    }

    /// The cache restarted at `at` (a cold_cache fault's start): every entry stored before is
    /// gone. Fills in flight store their answers when they come.
    pub fn clear(&mut self, at: Micros) {
        self.cleared_at = self.cleared_at.max(at);
    }

    pub fn cleared_at(&self) -> Micros {
        self.cleared_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(fresh_s: u64, stale_s: u64, negative_s: u64) -> CacheModel {
        CacheModel {
            data_class: None,
            scope: CacheScope::Global,
            fresh_ttl_us: fresh_s * 1_000_000,
            stale_if_error_us: stale_s * 1_000_000,
            negative_ttl_us: negative_s * 1_000_000,
            provenance_required: true,
            forbidden_for: Vec::new(),
            keys: 4,
            popularity: Popularity::Uniform,
            cdf: Vec::new(),
            not_found_ratio: 0.0,
            result_fresh_us: Vec::new(),
            scopes: 1,
            workflow_scope: Vec::new(),
            lookup_us: 0,
            stream_id: 1,
        }
    }

    const S: Micros = 1_000_000;

    #[test]
    fn an_entry_ages_from_fresh_to_stale_to_expired() {
        let m = model(10, 20, 0);
        let mut store = CacheStore::new(&m);
        assert_eq!(store.lookup(&m, 0, 1), LookupState::Miss);
        store.store(5 * S, 1, false, None);
        assert_eq!(store.lookup(&m, 5 * S, 1), LookupState::Fresh);
        assert_eq!(store.lookup(&m, 15 * S - 1, 1), LookupState::Fresh);
        assert_eq!(store.lookup(&m, 15 * S, 1), LookupState::Stale);
        assert!(store.stale_usable(&m, 34 * S, 1));
        assert_eq!(store.lookup(&m, 35 * S, 1), LookupState::Expired);
        assert!(!store.stale_usable(&m, 35 * S, 1));
        // Other keys are untouched.
        assert_eq!(store.lookup(&m, 6 * S, 0), LookupState::Miss);
    }

    #[test]
    fn a_negative_entry_answers_for_its_own_ttl_and_never_as_stale() {
        let m = model(100, 100, 2);
        let mut store = CacheStore::new(&m);
        store.store(0, 2, true, None);
        assert_eq!(store.lookup(&m, S, 2), LookupState::Negative);
        assert!(LookupState::Negative.is_hit());
        assert_eq!(store.lookup(&m, 2 * S, 2), LookupState::Expired);
        assert!(!store.stale_usable(&m, S, 2));
    }

    #[test]
    fn hits_do_not_renew_an_entry_and_a_fill_replaces_it() {
        let m = model(10, 0, 0);
        let mut store = CacheStore::new(&m);
        store.store(0, 0, false, None);
        for t in 0..10 {
            assert_eq!(store.lookup(&m, t * S, 0), LookupState::Fresh);
        }
        assert_eq!(store.lookup(&m, 10 * S, 0), LookupState::Expired);
        store.store(10 * S, 0, false, None);
        assert_eq!(store.lookup(&m, 19 * S, 0), LookupState::Fresh);
    }

    #[test]
    fn a_restart_empties_what_was_stored_before_it_only() {
        let m = model(100, 0, 100);
        let mut store = CacheStore::new(&m);
        store.store(S, 0, false, None);
        store.store(S, 1, true, None);
        store.clear(2 * S);
        assert_eq!(store.lookup(&m, 3 * S, 0), LookupState::Miss);
        assert_eq!(store.lookup(&m, 3 * S, 1), LookupState::Miss);
        store.store(3 * S, 0, false, None);
        assert_eq!(store.lookup(&m, 4 * S, 0), LookupState::Fresh);
        // An earlier restart does not bring entries back.
        store.clear(S);
        assert_eq!(store.cleared_at(), 2 * S);
    }

    #[test]
    fn one_fill_per_key() {
        let m = model(1, 0, 0);
        let mut store = CacheStore::new(&m);
        assert_eq!(store.fill(3), None);
        store.begin_fill(3, 7);
        assert_eq!(store.fill(3), Some(7));
        assert_eq!(store.fill(2), None);
        store.end_fill(3);
        assert_eq!(store.fill(3), None);
    }

    #[test]
    fn zipf_keys_follow_their_weights_and_uniform_keys_are_even() {
        let mut m = model(1, 0, 0);
        m.keys = 3;
        m.popularity = Popularity::Zipf;
        // s = 1: weights 1, 1/2, 1/3 of 11/6.
        m.cdf = vec![6.0 / 11.0, 9.0 / 11.0, 1.0];
        assert_eq!(m.key(0.0), 0);
        assert_eq!(m.key(0.54), 0);
        assert_eq!(m.key(0.55), 1);
        assert_eq!(m.key(0.82), 2);
        assert_eq!(m.key(0.999_999), 2);
        m.popularity = Popularity::Uniform;
        assert_eq!(m.key(0.0), 0);
        assert_eq!(m.key(0.34), 1);
        assert_eq!(m.key(0.999_999), 2);
    }

    #[test]
    fn scopes_split_the_key_space() {
        let mut m = model(1, 0, 0);
        m.scope = CacheScope::Tenant;
        m.scopes = 3;
        m.workflow_scope = vec![0, 2, 1];
        assert_eq!(m.entry(1, 0.0, 0.0), 8);
        assert_eq!(m.entry(2, 0.99, 0.0), 7);
        m.scope = CacheScope::User;
        assert_eq!(m.entry(0, 0.3, 0.5), 5);
        assert_eq!(m.entries(), 12);
    }

    #[test]
    fn absent_keys_are_the_same_on_every_ask_and_near_their_share() {
        let mut m = model(1, 0, 0);
        m.not_found_ratio = 0.25;
        let absent = (0..10_000).filter(|&e| m.absent(e)).count();
        assert!((2_300..2_700).contains(&absent), "{absent}");
        assert_eq!(m.absent(17), m.absent(17));
        m.not_found_ratio = 0.0;
        assert_eq!((0..1000).filter(|&e| m.absent(e)).count(), 0);
    }
}
