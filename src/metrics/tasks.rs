//! Long-running remote tasks (docs/metrics.md section 2.15): requests by call, tasks created
//! and duplicated, how they ended, time in each live state, cancels and what they found,
//! orphans, late results by effect, and the cost tasks spent after their caller left and
//! after a cancel was sent.
//! Present when some dependency runs tasks.

use super::MetricMap;
use crate::sim::Micros;
use crate::world::task::{CancelObserved, LateResult, TaskCall, TaskState};

/// For whom a task's cost was spent, by when it was spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// While its step still waited for it.
    ForCaller,
    /// After its step stopped waiting, and no cancel was sent (the client walked away).
    AfterCallerLeft,
    /// After its client sent a cancel (which it sends as the step stops waiting).
    AfterCancel,
}

/// One thing about a task or its client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TaskObservation {
    /// A protocol request was sent to the task dependency.
    Request {
        call: TaskCall,
    },
    /// A task was created; `duplicate` when its logical call had created one already.
    Created {
        duplicate: bool,
    },
    /// A create was answered with the task an earlier send of the same message made (the server
    /// deduplicates by message id); `was_orphan` when that task had been counted an orphan,
    /// which it is no longer: a client follows it again.
    Deduplicated {
        was_orphan: bool,
    },
    /// A task left a live state after `duration_us` in it.
    StateLeft {
        state: TaskState,
        duration_us: Micros,
    },
    /// A task ended in a terminal state.
    Ended {
        state: TaskState,
    },
    /// Cost a task accrued while it ran; `spent` says for whom.
    Cost {
        units: f64,
        spent: Spent,
    },
    /// Cost of a task's work attempt and its own calls (already in cost_units_total as they
    /// were sent); `spent` says for whom.
    CallCost {
        units: f64,
        spent: Spent,
    },
    CancelRequested,
    /// The remote side accepted a cancel and kept working.
    CancelIgnored,
    /// The remote side will stop, later.
    CancelLate,
    CancelObserved(CancelObserved),
    /// A task still running when the last client that cared stopped waiting (its true state).
    Orphaned,
    /// A task the runtime put on its orphan queue: its cancel's answer showed it still working,
    /// or showed nothing (what the client knows, whatever the task's true state).
    OrphanTracked,
    /// An orphan outlived the orphan queue's ttl still running.
    OrphanEscalated,
    /// A task succeeded after its caller left, or its caller left without hearing of its
    /// success: the result reaches nobody.
    LateResult(LateResult),
    /// The service `busy_us` of a task's work at `runner`, counted as used for the caller when
    /// the work ended, turned out wasted: its caller left without hearing of the success.
    WorkWasted {
        runner: u16,
        busy_us: Micros,
    },
    /// An outage broke a client's open subscription.
    StreamBroken,
    /// A create request's reply (the task handle) was lost.
    LostHandle,
    /// A create request timed out with no task handle (its reply lost, or a blocking send
    /// whose task did not end within the request's timeout).
    SendTimedOut,
    /// A task outlived its ttl.
    Expired,
    /// A task's record was deleted after its ttl (`on_ttl = "delete"`).
    Deleted,
    /// A client's get, subscription or cancel met a task the server no longer knows
    /// (TaskNotFound): deleted after its ttl.
    NotFound,
    /// A task still not ended when the simulation stopped.
    RunningAtEnd,
    /// A task asked for the user's input (it entered waiting_input).
    InputRequired,
    /// The user's answer reached a task waiting for input, which went back to work.
    InputAnswered,
    /// A push notification of a task's update was sent to its client's webhook.
    PushSent,
    /// A push notification never arrived.
    PushLost,
    /// A push notification arrived a second time.
    PushDuplicated,
    /// A client learned its task's end (or its request for input) from a push notification.
    PushLearned,
}

const CALLS: [TaskCall; 6] =
    [TaskCall::Create, TaskCall::Get, TaskCall::Find, TaskCall::Subscribe, TaskCall::Cancel, TaskCall::Answer];
const ENDS: [TaskState; 4] = [TaskState::Succeeded, TaskState::Failed, TaskState::Canceled, TaskState::Rejected];

fn call_index(call: TaskCall) -> usize {
    match call {
        TaskCall::Create => 0,
        TaskCall::Get => 1,
        TaskCall::Find => 2,
        TaskCall::Subscribe => 3,
        TaskCall::Cancel => 4,
        TaskCall::Answer => 5,
    }
}

fn call_name(call: TaskCall) -> &'static str {
    match call {
        TaskCall::Create => "create",
        TaskCall::Get => "get",
        TaskCall::Find => "find",
        TaskCall::Subscribe => "subscribe",
        TaskCall::Cancel => "cancel",
        TaskCall::Answer => "answer",
    }
}

#[derive(Debug, Clone, Default)]
pub struct TaskStats {
    requests: [u64; 6],
    created: u64,
    duplicates: u64,
    ended: [u64; 4],
    state_time_us: [u128; 4],
    cost_units: f64,
    cost_after_caller_left: f64,
    cost_after_cancel: f64,
    cancel_requested: u64,
    cancel_ignored: u64,
    cancel_late: u64,
    cancel_observed: [u64; CancelObserved::ALL.len()],
    orphans: u64,
    orphans_tracked: u64,
    orphans_escalated: u64,
    late_results: [u64; LateResult::COUNT],
    streams_broken: u64,
    lost_handles: u64,
    send_timeouts: u64,
    deduplicated: u64,
    deleted: u64,
    not_found: u64,
    expired: u64,
    running_at_end: u64,
    input_required: u64,
    input_answered: u64,
    push_sent: u64,
    push_lost: u64,
    push_duplicated: u64,
    push_learned: u64,
}

impl TaskStats {
    pub fn observe(&mut self, o: TaskObservation) {
        match o {
            TaskObservation::Request { call } => self.requests[call_index(call)] += 1,
            TaskObservation::Created { duplicate } => {
                self.created += 1;
                self.duplicates += u64::from(duplicate);
            }
            TaskObservation::StateLeft { state, duration_us } => {
                if let Some(i) = state.live_index() {
                    self.state_time_us[i] += u128::from(duration_us);
                }
            }
            TaskObservation::Ended { state } => {
                if let Some(i) = ENDS.iter().position(|s| *s == state) {
                    self.ended[i] += 1;
                }
            }
            TaskObservation::Cost { units, spent } | TaskObservation::CallCost { units, spent } => {
                debug_assert!(units >= 0.0, "cost never goes below zero");
                self.cost_units += units;
                match spent {
                    Spent::ForCaller => {}
                    Spent::AfterCallerLeft => self.cost_after_caller_left += units,
                    Spent::AfterCancel => {
                        self.cost_after_caller_left += units;
                        self.cost_after_cancel += units;
                    }
                }
            }
            TaskObservation::CancelRequested => self.cancel_requested += 1,
            TaskObservation::CancelIgnored => self.cancel_ignored += 1,
            TaskObservation::CancelLate => self.cancel_late += 1,
            TaskObservation::CancelObserved(seen) => {
                let i = CancelObserved::ALL.iter().position(|c| *c == seen).unwrap_or(4);
                self.cancel_observed[i] += 1;
            }
            TaskObservation::Orphaned => self.orphans += 1,
            TaskObservation::Deduplicated { was_orphan } => {
                self.deduplicated += 1;
                if was_orphan {
                    self.orphans = self.orphans.saturating_sub(1);
                }
            }
            TaskObservation::OrphanTracked => self.orphans_tracked += 1,
            TaskObservation::OrphanEscalated => self.orphans_escalated += 1,
            TaskObservation::LateResult(effect) => self.late_results[effect.index()] += 1,
            // Folded into the runner's wasted service by the recorder.
            TaskObservation::WorkWasted { .. } => {}
            TaskObservation::StreamBroken => self.streams_broken += 1,
            TaskObservation::LostHandle => self.lost_handles += 1,
            TaskObservation::SendTimedOut => self.send_timeouts += 1,
            TaskObservation::Expired => self.expired += 1,
            TaskObservation::Deleted => self.deleted += 1,
            TaskObservation::NotFound => self.not_found += 1,
            TaskObservation::RunningAtEnd => self.running_at_end += 1,
            TaskObservation::InputRequired => self.input_required += 1,
            TaskObservation::InputAnswered => self.input_answered += 1,
            TaskObservation::PushSent => self.push_sent += 1,
            TaskObservation::PushLost => self.push_lost += 1,
            TaskObservation::PushDuplicated => self.push_duplicated += 1,
            TaskObservation::PushLearned => self.push_learned += 1,
        }
    }

    /// The task metrics under their names.
    pub fn put(&self, m: &mut MetricMap) {
        let created = self.created as f64;
        for call in CALLS {
            m.insert(format!("task_request_total.{}", call_name(call)), self.requests[call_index(call)] as f64);
        }
        m.insert("task_created_total".into(), created);
        m.insert("task_duplicate_total".into(), self.duplicates as f64);
        m.insert("task_deduplicated_total".into(), self.deduplicated as f64);
        m.insert("task_polls_per_task".into(), ratio(self.requests[call_index(TaskCall::Get)] as f64, created));
        for (i, state) in ENDS.iter().enumerate() {
            m.insert(format!("task_ended_total.{}", state.name()), self.ended[i] as f64);
        }
        for (i, state) in TaskState::LIVE.iter().enumerate() {
            m.insert(format!("task_state_time_s.{}", state.name()), ratio(self.state_time_us[i] as f64 / 1e6, created));
        }
        m.insert("task_cost_units_total".into(), self.cost_units);
        m.insert("cost_after_caller_left_units_total".into(), self.cost_after_caller_left);
        m.insert("cost_after_cancel_units_total".into(), self.cost_after_cancel);
        m.insert("cancel_requested_total".into(), self.cancel_requested as f64);
        m.insert("cancel_ignored_total".into(), self.cancel_ignored as f64);
        m.insert("cancel_late_total".into(), self.cancel_late as f64);
        for (i, seen) in CancelObserved::ALL.iter().enumerate() {
            m.insert(format!("cancel_observed_total.{}", seen.name()), self.cancel_observed[i] as f64);
        }
        m.insert("orphan_task_total".into(), self.orphans as f64);
        m.insert("orphan_tracked_total".into(), self.orphans_tracked as f64);
        m.insert("orphan_escalated_total".into(), self.orphans_escalated as f64);
        for effect in LateResult::ALL {
            m.insert(format!("late_result_total.{}", effect.name()), self.late_results[effect.index()] as f64);
        }
        m.insert("late_result_total".into(), self.late_results.iter().sum::<u64>() as f64);
        m.insert("task_stream_broken_total".into(), self.streams_broken as f64);
        m.insert("task_lost_handle_total".into(), self.lost_handles as f64);
        m.insert("task_send_timeout_total".into(), self.send_timeouts as f64);
        m.insert("task_expired_total".into(), self.expired as f64);
        m.insert("task_deleted_total".into(), self.deleted as f64);
        m.insert("task_not_found_total".into(), self.not_found as f64);
        m.insert("task_running_at_end_total".into(), self.running_at_end as f64);
        m.insert("task_input_required_total".into(), self.input_required as f64);
        m.insert("task_input_answered_total".into(), self.input_answered as f64);
        m.insert("task_push_sent_total".into(), self.push_sent as f64);
        m.insert("task_push_lost_total".into(), self.push_lost as f64);
        m.insert("task_push_duplicate_total".into(), self.push_duplicated as f64);
        m.insert("task_push_learned_total".into(), self.push_learned as f64);
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { f64::NAN } else { a / b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_per_task_and_state_times_are_per_created_task() {
        let mut s = TaskStats::default();
        for _ in 0..2 {
            s.observe(TaskObservation::Created { duplicate: false });
        }
        for _ in 0..6 {
            s.observe(TaskObservation::Request { call: TaskCall::Get });
        }
        s.observe(TaskObservation::StateLeft { state: TaskState::Running, duration_us: 3_000_000 });
        s.observe(TaskObservation::StateLeft { state: TaskState::Running, duration_us: 1_000_000 });
        let mut m = MetricMap::new();
        s.put(&mut m);
        assert_eq!(m["task_polls_per_task"], 3.0);
        assert_eq!(m["task_state_time_s.running"], 2.0);
        assert_eq!(m["task_request_total.get"], 6.0);
    }

    #[test]
    fn no_task_means_undefined_ratios_not_zero() {
        let mut m = MetricMap::new();
        TaskStats::default().put(&mut m);
        assert!(m["task_polls_per_task"].is_nan());
        assert_eq!(m["orphan_task_total"], 0.0);
    }
}
