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
    /// The runtime attempts (by serial, modulo 64) whose own idempotency key committed, for
    /// an SDK's resends under `idempotency_key = "per_attempt"`: one key per runtime attempt.
    pub attempt_keys: u64,
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

    /// Records a write whose request carries runtime attempt `serial`'s own key (an SDK
    /// client resends one runtime attempt's request with its key, as openai-python reuses one
    /// idempotency key across its retries): the dependency deduplicates that key's second
    /// commit; another attempt's key is a new effect, a duplicate when one committed before.
    pub fn commit_attempt_key(&mut self, serial: u32) -> Commit {
        let bit = 1u64 << (serial % 64);
        if self.attempt_keys & bit != 0 {
            return Commit::Deduplicated;
        }
        self.attempt_keys |= bit;
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
    fn an_attempt_key_deduplicates_its_own_resends_only() {
        let mut e = LedgerEntry::default();
        assert_eq!(e.commit_attempt_key(0), Commit::Applied { duplicate: false });
        assert_eq!(e.commit_attempt_key(0), Commit::Deduplicated);
        assert_eq!(e.commit_attempt_key(1), Commit::Applied { duplicate: true });
        assert_eq!(e.commit_attempt_key(1), Commit::Deduplicated);
        assert_eq!(e.duplicates(), 1);
    }

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
