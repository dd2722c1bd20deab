//! The side-effect ledger: for each write step of each run, how many effects the dependency
//! committed. A dependency that deduplicates by idempotency key commits once per key; anything
//! beyond the first effect of a step is a duplicate.

/// Ledger entry of one (run, write step).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerEntry {
    pub effects: u8,
    /// Remote tasks of the step still working: a task created while another one works is a
    /// duplicate (the message was sent again).
    pub live_tasks: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// A new effect was applied (a duplicate if `effects` was already above zero).
    Applied { duplicate: bool },
    /// The key had committed already: the dependency returned the first result.
    Deduplicated,
}

impl LedgerEntry {
    /// Records a write reaching commit. `deduplicates` is true when the attempt carries the
    /// logical call's key to a dependency that honours idempotency keys.
    pub fn commit(&mut self, deduplicates: bool) -> Commit {
        if deduplicates && self.effects > 0 {
            return Commit::Deduplicated;
        }
        let duplicate = self.effects > 0;
        self.effects = self.effects.saturating_add(1);
        Commit::Applied { duplicate }
    }

    pub fn committed(&self) -> bool {
        self.effects > 0
    }

    pub fn duplicates(&self) -> u32 {
        u32::from(self.effects.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_deduplicate_and_plain_writes_duplicate() {
        let mut keyed = LedgerEntry::default();
        assert_eq!(keyed.commit(true), Commit::Applied { duplicate: false });
        assert_eq!(keyed.commit(true), Commit::Deduplicated);
        assert_eq!(keyed.duplicates(), 0);

        let mut plain = LedgerEntry::default();
        assert_eq!(plain.commit(false), Commit::Applied { duplicate: false });
        assert_eq!(plain.commit(false), Commit::Applied { duplicate: true });
        assert_eq!(plain.commit(false), Commit::Applied { duplicate: true });
        assert_eq!(plain.duplicates(), 2);
        assert!(plain.committed());
    }
}
