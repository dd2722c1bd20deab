//! The lifecycle of one logical call (a step of a root run): blocked on its predecessors,
//! waiting for a concurrency token, active with attempts in flight, sleeping before a retry,
//! and its ends. Plain data with the transitions the run machine makes on it.

use crate::sim::Micros;
use crate::vocab::FailureKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepPhase {
    /// Predecessors still running.
    Blocked,
    /// Ready, but the run has no free concurrency token.
    Waiting,
    /// Holds a concurrency token; attempts in flight or about to be sent.
    Active,
    /// Backing off before a retry.
    Sleeping,
    Done,
    /// A soft step given up: the run goes on without it.
    Omitted,
    /// The run ended while this step was still going.
    Abandoned,
}

impl StepPhase {
    /// Still holding or waiting for run resources.
    pub fn is_open(self) -> bool {
        match self {
            StepPhase::Waiting | StepPhase::Active | StepPhase::Sleeping => true,
            StepPhase::Blocked | StepPhase::Done | StepPhase::Omitted | StepPhase::Abandoned => false,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct StepState {
    pub phase: StepPhase,
    pub preds_left: u32,
    pub primary_attempts: u32,
    pub fallback_attempts: u32,
    /// Every attempt of this logical call so far (primary, fallback, lookups, hedges): names
    /// its random stream.
    pub serial: u32,
    pub on_fallback: bool,
    /// Which fallback candidate it is on (read while `on_fallback`).
    pub candidate: u8,
    /// The run's mode sent it to its fallback first (not a failure of its dependency).
    pub fallback_first: bool,
    /// An attempt at its primary dependency was tried (sent, or refused by a guard).
    pub tried_primary: bool,
    pub looking_up: bool,
    /// Status lookups sent for this step; bounded by the step's max_attempts.
    pub lookups: u32,
    /// Some write attempt of this step timed out: its effect may still land.
    pub effect_unknown: bool,
    /// The deadline left this step no time for an attempt or a retry.
    pub out_of_time: bool,
    /// A RESULT_INVALID answer was sent back for repair once.
    pub repaired: bool,
    /// Attempts of this step whose result the run still waits for.
    pub in_flight: u32,
    /// Hedges sent for the current attempt (beyond the first).
    pub hedges: u32,
    /// Generation of the step's timers: a wake-up that does not match is stale.
    pub wake: u32,
    /// The wake-up token of the pending hedge timer, if any.
    pub hedge_wake: Option<u32>,
    pub previous_sleep_us: Micros,
    pub last_failure: Option<FailureKind>,
}

impl StepState {
    pub fn new(preds: u32) -> StepState {
        StepState {
            phase: StepPhase::Blocked,
            preds_left: preds,
            primary_attempts: 0,
            fallback_attempts: 0,
            serial: 0,
            on_fallback: false,
            candidate: 0,
            fallback_first: false,
            tried_primary: false,
            looking_up: false,
            lookups: 0,
            effect_unknown: false,
            out_of_time: false,
            repaired: false,
            in_flight: 0,
            hedges: 0,
            wake: 0,
            hedge_wake: None,
            previous_sleep_us: 0,
            last_failure: None,
        }
    }

    /// Attempts at the dependency now in use (primary or fallback), including the failed one.
    pub fn attempts_made(&self) -> u32 {
        if self.on_fallback { self.fallback_attempts } else { self.primary_attempts }
    }

    /// A retry repeats a call at the same dependency. The first call to a fallback is a new
    /// path, not a retry, as a fallback strategy wrapped around a retry strategy behaves in
    /// Polly or resilience4j.
    pub fn next_is_retry(&self) -> bool {
        self.attempts_made() > 0
    }

    pub fn count_attempt(&mut self) {
        if self.on_fallback {
            self.fallback_attempts += 1;
        } else {
            self.primary_attempts += 1;
        }
    }

    /// Takes the serial number of a new attempt.
    pub fn next_serial(&mut self) -> u32 {
        let serial = self.serial;
        self.serial += 1;
        serial
    }

    /// Starts a new timer generation; earlier timers of this step become stale.
    pub fn next_wake(&mut self) -> u32 {
        self.wake = self.wake.wrapping_add(1);
        self.wake
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_attempts_are_counted_apart() {
        let mut s = StepState::new(0);
        assert!(!s.next_is_retry());
        s.count_attempt();
        assert!(s.next_is_retry());
        s.on_fallback = true;
        assert!(!s.next_is_retry(), "the first fallback call is not a retry");
        s.count_attempt();
        assert_eq!((s.primary_attempts, s.fallback_attempts), (1, 1));
        assert_eq!((s.next_serial(), s.next_serial()), (0, 1));
        let w = s.next_wake();
        assert_ne!(s.next_wake(), w, "a new timer makes the old one stale");
    }
}
