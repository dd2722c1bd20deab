//! The closed set of things that can happen. Small and `Copy`: the queue moves them by value.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The next open-loop arrival of a workflow.
    Arrival { workflow: u16 },
    /// A user resubmits a failed run.
    Resubmit { workflow: u16, arrival: u32, resubmission: u8 },
    /// A closed population's target number of users changes (its next schedule entry).
    PopulationStep { workflow: u16 },
    /// A user of a closed population ends its think time (`cycle` names the wait it ends).
    UserWake { workflow: u16, user: u32, cycle: u32 },
    /// A user stops waiting for its run's answer (`abandon_after_ms`), unless it came.
    UserAbandon { workflow: u16, user: u32, cycle: u32 },
    /// An attempt leaves its station: service done, or an immediate rejection.
    ServiceEnd { job: u32, generation: u32 },
    /// The caller's timeout for an attempt.
    Timeout { job: u32, generation: u32 },
    /// A step's backoff sleep is over.
    StepWake { run: u32, run_gen: u32, step: u8, wake: u32 },
    /// An attempt's max_wait_ms in a station's queue is over.
    QueueExpiry { job: u32, generation: u32 },
    /// A guard asked to be woken (a breaker's automatic transition, a bulkhead waiter's expiry).
    GuardWake,
    /// A remote agent's pause between its own attempts is over.
    RemoteWake { job: u32, generation: u32 },
    /// A capacity fault starts or ends somewhere: recompute servers in force.
    CapacityChange { dependency: u16 },
    /// An SDK client's sleep before its next hidden attempt is over.
    SdkWake { call: u32, generation: u32 },
    /// The runtime's timeout for an attempt made through an SDK client (the whole SDK call).
    SdkTimeout { call: u32, generation: u32 },
    /// A cache hit's answer, after the lookup's time (engine::cache).
    CacheAnswer { call: u32, generation: u32 },
    /// The runtime's timeout for an attempt waiting on another's call to the dependency.
    CacheTimeout { call: u32, generation: u32 },
    /// End of a time-series window: sample queue depths.
    WindowEnd,
    /// The degradation modes read their signals (every `evaluation_interval_ms`).
    ModeTick,
    /// A task client's pause is over: it makes its pending request (a poll, a retry).
    ClientWake { client: u32, generation: u32 },
    /// The step's timeout for its attempt at a task dependency.
    ClientTimeout { client: u32, generation: u32 },
    /// Something scheduled for a remote task: a late cancel, a late publication, its ttl.
    TaskWake { task: u32, generation: u32, cause: TaskWakeCause },
    /// An outage began at a task dependency: its open subscriptions break.
    StreamsBroken { dependency: u16 },
    /// A push notification (A2A's webhook POST) reaches the client: the task's `seq`-th
    /// transition, to `state`.
    PushDelivered { client: u32, generation: u32, seq: u32, state: crate::world::task::TaskState },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskWakeCause {
    /// A cancel accepted earlier takes effect now.
    LateCancel,
    /// The task publishes the end of its work now (a late_result fault).
    Publish,
    /// The task outlived its ttl.
    Ttl,
    /// An orphan on the orphan queue is escalated.
    OrphanTtl,
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_stay_small() {
        assert!(std::mem::size_of::<super::Event>() <= 20, "{}", std::mem::size_of::<super::Event>());
    }
}
