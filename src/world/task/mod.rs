//! Long-running remote work: a dependency whose calls return a task handle at once while the
//! work runs on the remote side (A2A tasks, MCP tasks). The dependency itself answers the
//! protocol's requests (create, get, list, subscribe, cancel) with its servers; the work runs
//! at its `runner`, another dependency whose servers are the remote task capacity and whose
//! queue is the remote task queue.

pub mod lifecycle;
pub mod protocol;

pub use lifecycle::{IllegalTransition, Lifecycle, TaskEvent, TaskState, WaitFor, next_state};
pub use protocol::{
    AnswerReply, CancelAnswer, CancelHandling, IgnoredCancelAnswer, MCP_ALIAS, ProtocolError, RepeatedMessage,
    TaskCall, TaskProtocol, WorkOnCancel,
};

use crate::sim::Micros;

crate::named_enum! {
    /// What the remote side does with a cancel it receives.
    pub enum CancelBehaviour {
        /// Stops the task at once (it ends CANCELED).
        Honor => "honor",
        /// Stops it after `late_cancel_ms`.
        Late => "late",
        /// Accepts the request and keeps working.
        Ignore => "ignore",
    }
}

crate::named_enum! {
    /// What a task dependency does with a task `ttl_ms` after its creation.
    pub enum OnTtl {
        /// A task not ended then is stopped and fails (DEADLINE_EXHAUSTED).
        Fail => "fail",
        /// The task's record is deleted, whatever its state (MCP: "receivers may delete the
        /// task and its results after ttl"); its work, if any, goes on; every later get, cancel
        /// or subscription of it answers TaskNotFound.
        Delete => "delete",
    }
}

crate::named_enum! {
    /// What becomes of a task's result that arrives after its caller stopped waiting (essay
    /// section 21's table).
    pub enum LateResult {
        /// A read artifact: cached for later requests, not returned to the one that left.
        Cache => "cache",
        /// A draft: kept by its idempotency key, never shown twice.
        KeepDraft => "keep_draft",
        /// An external commit: checked against the ledger, then compensation or human review.
        Review => "review",
        /// A model generation: its cost recorded, the output discarded.
        Discard => "discard",
    }
}

/// An asynchronous dependency's task side, compiled.
#[derive(Debug, Clone)]
pub struct TaskModel {
    pub protocol: TaskProtocol,
    /// The dependency that does the work.
    pub runner: usize,
    /// The interval the server advertises (MCP pollIntervalMs); None: the client's own.
    pub poll_interval_us: Option<Micros>,
    /// A task not ended this long after its creation fails (MCP ttlMs); None: never.
    pub ttl_us: Option<Micros>,
    pub cancel: CancelBehaviour,
    pub late_cancel_us: Micros,
    /// Cost units per second of work, accrued while the task runs, whoever still waits for it.
    pub cost_per_s: f64,
    /// What the server does with a message sent again with the same message id.
    pub repeated_message: RepeatedMessage,
    /// What `ttl_us` does to a task.
    pub on_ttl: OnTtl,
    /// What an A2A server answers a cancel whose work goes on (the agent ignores it or stops
    /// later).
    pub ignored_cancel_answer: IgnoredCancelAnswer,
    /// The share of tasks that ask for the user's input once, before their work.
    pub input_required_ratio: f64,
    /// The scripted user who answers a task's request for input: how long it takes from the
    /// moment its client learns of the request (None: it never answers), and the share of
    /// requests it never answers.
    pub input_answer: Option<crate::world::Distribution>,
    pub input_unanswered_ratio: f64,
    /// A push notification's delivery: its delay (None: none), the share lost, and the share
    /// of delivered ones delivered twice.
    pub push_delivery: Option<crate::world::Distribution>,
    pub push_lost_ratio: f64,
    pub push_duplicate_ratio: f64,
}

/// What the client learned of its task from its cancel (the essay's four branches, and the
/// fifth it cannot avoid: no answer that shows a state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelObserved {
    Canceled,
    Completed,
    Failed,
    /// The answer showed the task still working (the cancel was ignored, or takes effect later).
    StillRunning,
    /// No answer showed the task's state: the cancel request was refused or timed out, or the
    /// protocol answers a cancel with a bare acknowledgement (MCP 2026-07-28).
    Unknown,
}

impl CancelObserved {
    pub const ALL: [CancelObserved; 5] = [
        CancelObserved::Canceled,
        CancelObserved::Completed,
        CancelObserved::Failed,
        CancelObserved::StillRunning,
        CancelObserved::Unknown,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            CancelObserved::Canceled => "canceled",
            CancelObserved::Completed => "completed",
            CancelObserved::Failed => "failed",
            CancelObserved::StillRunning => "still_running",
            CancelObserved::Unknown => "unknown",
        }
    }

    /// The client keeps the task on its orphan queue: as far as it knows, the task may still
    /// work (its true state is not the client's to read).
    pub const fn goes_on_orphan_queue(self) -> bool {
        match self {
            CancelObserved::StillRunning | CancelObserved::Unknown => true,
            CancelObserved::Canceled | CancelObserved::Completed | CancelObserved::Failed => false,
        }
    }

    pub fn of(state: TaskState) -> CancelObserved {
        match state {
            TaskState::Canceled => CancelObserved::Canceled,
            TaskState::Succeeded => CancelObserved::Completed,
            TaskState::Failed | TaskState::Rejected => CancelObserved::Failed,
            TaskState::Pending | TaskState::Running | TaskState::Waiting(_) => CancelObserved::StillRunning,
        }
    }
}
