//! botocore's retry quota (botocore 1.44.18, `botocore/retries/quota.py` and
//! `botocore/retries/standard.py`'s `RetryQuotaChecker`): one bucket shared by every call of
//! one client, here by every SDK call of one policy at one dependency. A retry takes
//! `_THROTTLING_RETRY_COST = 5` after a throttling error and `_RETRY_COST = 14` after any other
//! (timeouts and connection errors included); a retry the bucket cannot pay is not sent. A
//! call that succeeds gives back `_NO_RETRY_INCREMENT = 1` when it made no retry, else what its
//! last retry took (`retry_quota_capacity` in the request context), never past the capacity;
//! a call that fails gives nothing back. A pure counter: the engine owns one per client.

/// The quota's sizes, botocore's names in the comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryQuotaConfig {
    /// `RetryQuota.INITIAL_CAPACITY = 500`: the bucket starts full, and never holds more.
    pub capacity: u32,
    /// `RetryQuotaChecker._RETRY_COST = 14`.
    pub retry_cost: u32,
    /// `RetryQuotaChecker._THROTTLING_RETRY_COST = 5`.
    pub throttling_retry_cost: u32,
    /// `RetryQuotaChecker._NO_RETRY_INCREMENT = 1`.
    pub no_retry_increment: u32,
}

/// botocore 1.44.18's quota.
pub const BOTOCORE_QUOTA: RetryQuotaConfig =
    RetryQuotaConfig { capacity: 500, retry_cost: 14, throttling_retry_cost: 5, no_retry_increment: 1 };

impl RetryQuotaConfig {
    /// What a retry after this error takes.
    pub fn cost(&self, throttling: bool) -> u32 {
        if throttling { self.throttling_retry_cost } else { self.retry_cost }
    }
}

/// One client's bucket (`RetryQuota`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryQuota {
    pub capacity: u32,
    pub available: u32,
}

impl RetryQuota {
    pub fn new(config: &RetryQuotaConfig) -> RetryQuota {
        RetryQuota { capacity: config.capacity, available: config.capacity }
    }

    /// Whether `amount` can be taken now (`RetryQuota.acquire`'s test: not more than is left).
    pub fn can_pay(&self, amount: u32) -> bool {
        amount <= self.available
    }

    /// Takes `amount`; the caller asked [`RetryQuota::can_pay`] first.
    pub fn acquire(&mut self, amount: u32) {
        debug_assert!(self.can_pay(amount));
        self.available -= amount.min(self.available);
    }

    /// Gives back `amount`, truncated at the capacity (`RetryQuota.release`).
    pub fn release(&mut self, amount: u32) {
        self.available += amount.min(self.capacity - self.available);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_five_ordinary_retries_empty_botocores_bucket() {
        let mut q = RetryQuota::new(&BOTOCORE_QUOTA);
        let mut paid = 0;
        while q.can_pay(BOTOCORE_QUOTA.cost(false)) {
            q.acquire(BOTOCORE_QUOTA.cost(false));
            paid += 1;
        }
        assert_eq!((paid, q.available), (35, 10));
        // Throttling retries still fit twice in what is left.
        assert!(q.can_pay(BOTOCORE_QUOTA.cost(true)));
        q.release(14);
        assert_eq!(q.available, 24);
        q.release(1000);
        assert_eq!(q.available, 500, "never past the capacity");
    }
}
