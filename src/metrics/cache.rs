//! The cache metrics (docs/metrics.md section "Caches"): present only when some policy of the
//! scenario looks in a dependency's cache (world::cache, engine::cache).

use super::MetricMap;
use crate::world::cache::LookupState;

/// One thing a cache did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheObservation {
    /// A runtime attempt looked in the cache and found this.
    Lookup(LookupState),
    /// A lookup that needed the dependency joined a call already out for its key.
    Merged,
    /// A lookup that needed the dependency sent the one call for its key.
    Filled,
    /// A stale entry answered because the dependency failed.
    StaleServed,
    /// A run ended; `stale`: some answer it got was a stale entry, `marked`: with provenance.
    RunEnded { stale: bool, marked: bool },
}

#[derive(Debug, Clone, Default)]
pub struct CacheStats {
    pub lookups: [u64; LookupState::COUNT],
    pub merges: u64,
    pub fills: u64,
    pub stale_served: u64,
    pub runs: u64,
    pub stale_runs: u64,
    pub unmarked_stale_runs: u64,
}

impl CacheStats {
    pub fn observe(&mut self, o: CacheObservation) {
        match o {
            CacheObservation::Lookup(state) => self.lookups[state.index()] += 1,
            CacheObservation::Merged => self.merges += 1,
            CacheObservation::Filled => self.fills += 1,
            CacheObservation::StaleServed => self.stale_served += 1,
            CacheObservation::RunEnded { stale, marked } => {
                self.runs += 1;
                if stale {
                    self.stale_runs += 1;
                    if !marked {
                        self.unmarked_stale_runs += 1;
                    }
                }
            }
        }
    }

    pub fn put(&self, m: &mut MetricMap) {
        let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { f64::NAN };
        let lookups: u64 = self.lookups.iter().sum();
        let hits: u64 = LookupState::ALL.iter().filter(|s| s.is_hit()).map(|s| self.lookups[s.index()]).sum();
        for state in LookupState::ALL {
            m.insert(format!("cache_lookup_total.{}", state.name()), self.lookups[state.index()] as f64);
            m.insert(format!("cache_lookup_ratio.{}", state.name()), ratio(self.lookups[state.index()], lookups));
        }
        m.insert("cache_hit_ratio".into(), ratio(hits, lookups));
        m.insert("cache_single_flight_merge_total".into(), self.merges as f64);
        m.insert("cache_dependency_call_total".into(), self.fills as f64);
        m.insert("cache_stale_served_total".into(), self.stale_served as f64);
        m.insert("cache_stale_run_total".into(), self.stale_runs as f64);
        m.insert("cache_stale_run_ratio".into(), ratio(self.stale_runs, self.runs));
        m.insert("cache_unmarked_stale_run_total".into(), self.unmarked_stale_runs as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_fresh_and_negative_lookups_over_all_lookups() {
        let mut s = CacheStats::default();
        for state in [LookupState::Fresh, LookupState::Fresh, LookupState::Negative, LookupState::Miss] {
            s.observe(CacheObservation::Lookup(state));
        }
        s.observe(CacheObservation::Lookup(LookupState::Stale));
        s.observe(CacheObservation::RunEnded { stale: true, marked: false });
        s.observe(CacheObservation::RunEnded { stale: false, marked: true });
        let mut m = MetricMap::new();
        s.put(&mut m);
        assert_eq!(m["cache_hit_ratio"], 0.6);
        assert_eq!(m["cache_lookup_ratio.fresh"], 0.4);
        assert_eq!(m["cache_lookup_total.stale"], 1.0);
        assert_eq!(m["cache_stale_run_ratio"], 0.5);
        assert_eq!(m["cache_unmarked_stale_run_total"], 1.0);
    }
}
