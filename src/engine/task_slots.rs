//! The state the engine keeps for long-running tasks: a step attempt's task client and a
//! remote task. Plain data in arenas; `tasks.rs` drives them.

use crate::metrics::tasks::Spent;
use crate::runtime::Purpose;
use crate::runtime::task_client::TaskClient;
use crate::sim::{Micros, StreamKey};
use crate::vocab::FailureKind;
use crate::world::task::{LateResult, Lifecycle, TaskCall};

/// The client of one step attempt at a task dependency.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClientSlot {
    pub generation: u32,
    pub run: u32,
    pub run_gen: u32,
    pub step: u8,
    pub serial: u32,
    pub front: u16,
    /// The create request's purpose (a write carries the logical call's key).
    pub purpose: Purpose,
    pub measured: bool,
    pub key: StreamKey,
    pub machine: TaskClient,
    /// The task the create made (the server's record by message id; the client has the
    /// handle only once `machine.has_handle`).
    pub task: Option<(u32, u32)>,
    /// The request out now, and which call it is.
    pub request: Option<(u32, u32)>,
    pub in_flight: TaskCall,
    /// The request a `ClientWake` makes.
    pub pending: TaskCall,
    /// Draws and requests made so far (each names its own stream).
    pub draws: u32,
    pub requests: u32,
    /// Times its task asked for input (each names the scripted user's stream).
    pub asks: u32,
    /// The latest of its task's transitions it has seen (a reply's, a notification's).
    pub seen_seq: u32,
    /// The step still waits for this client's answer.
    pub attached: bool,
    pub deadline_at: Micros,
    /// Its create blocks until the task ends or is interrupted (A2A without returnImmediately).
    pub blocks: bool,
    /// The create was served and its reply is held until then.
    pub held: bool,
}

impl ClientSlot {
    pub fn vacant() -> ClientSlot {
        ClientSlot {
            generation: 0,
            run: 0,
            run_gen: 0,
            step: 0,
            serial: 0,
            front: 0,
            purpose: Purpose::Call,
            measured: false,
            key: StreamKey::root(0),
            machine: TaskClient::new(None, true).0,
            task: None,
            request: None,
            in_flight: TaskCall::Create,
            pending: TaskCall::Get,
            draws: 0,
            requests: 0,
            asks: 0,
            seen_seq: 0,
            attached: false,
            deadline_at: 0,
            blocks: false,
            held: false,
        }
    }
}

/// A task on the remote side.
#[derive(Debug, Clone, Copy)]
pub(super) struct RemoteTask {
    pub generation: u32,
    pub front: u16,
    pub lifecycle: Lifecycle,
    /// Its work at the runner, while there is some.
    pub work: Option<(u32, u32)>,
    /// The client that follows it; None once nobody does.
    pub client: Option<(u32, u32)>,
    pub measured: bool,
    pub run: u32,
    pub run_gen: u32,
    pub step: u8,
    pub serial: u32,
    pub late: LateResult,
    pub write: bool,
    /// The write carries the logical call's key to a dependency that deduplicates by it.
    pub deduplicated: bool,
    /// When the caller stopped waiting (cost from then on is spent for nobody).
    pub left_at: Option<Micros>,
    pub error: Option<FailureKind>,
    pub publish_delay_us: Micros,
    /// The root run's deadline, when the client passes it on.
    pub deadline_at: Option<Micros>,
    /// Its work's service at the runner while its caller still waited.
    pub served_us: Micros,
    /// Since when its work goes on after the task ended (`cancelled` by an MCP 2025-11-25
    /// server while the work continues): its running cost from then on.
    pub unowned_work_since: Option<Micros>,
    /// Its client sent a cancel as its caller left (cost from then on is after a cancel).
    pub cancel_sent: bool,
    /// On the runtime's orphan queue.
    pub tracked_orphan: bool,
    /// Its create's reply reached a client: its handle is known, so a send of the same message
    /// again (the only case `on_repeated_message = "deduplicate"` answers with it) never
    /// happens; a step's retry after its own timeout is a new message.
    pub handed: bool,
    /// Resumed after input-required, its work not yet taken by a runner server: shown working
    /// (A2A TASK_STATE_WORKING after the follow-up message) but counted `pending` and charged
    /// nothing until the work starts (scenario.md 4.5).
    pub queued_after_resume: bool,
    /// Its own work failed (the tool's error, not a protocol's): MCP 2026-07-28 names the end
    /// `completed` (a result with `isError: true`).
    pub work_failed: bool,
    /// Counted in its step's `live_tasks` (made while its run was alive) until it has ended and
    /// its work is over: a task `canceled` while its work goes on still works.
    pub counted_live: bool,
    /// Its record was deleted after its ttl (`on_ttl = "delete"`): the server no longer knows it.
    pub deleted: bool,
    pub orphan: bool,
    pub key: StreamKey,
    /// A stuck_task fault made its work never end (kept for work sent after an answer).
    pub stuck: bool,
    /// The workflow of the run that made it (its work's priority and token counts).
    pub workflow: u16,
    /// Its transitions so far: a push notification carries the count, so that a client drops
    /// one older than what it has seen.
    pub seq: u32,
    /// Its creator registered a webhook with the create: each transition is pushed to the
    /// client that follows it.
    pub push: bool,
}

impl RemoteTask {
    /// Its work still goes on, or it has not ended.
    pub fn still_works(&self) -> bool {
        !self.lifecycle.state.is_terminal() || self.work.is_some()
    }

    /// For whom what it spends after its caller left is spent.
    pub fn spent_after_left(&self) -> Spent {
        match (self.left_at, self.cancel_sent) {
            (None, _) => Spent::ForCaller,
            (Some(_), false) => Spent::AfterCallerLeft,
            (Some(_), true) => Spent::AfterCancel,
        }
    }

    pub fn vacant() -> RemoteTask {
        RemoteTask {
            generation: 0,
            front: 0,
            lifecycle: Lifecycle::new(0),
            work: None,
            client: None,
            measured: false,
            run: 0,
            run_gen: 0,
            step: 0,
            serial: 0,
            late: LateResult::Cache,
            write: false,
            deduplicated: false,
            left_at: None,
            error: None,
            publish_delay_us: 0,
            deadline_at: None,
            served_us: 0,
            unowned_work_since: None,
            cancel_sent: false,
            tracked_orphan: false,
            handed: false,
            queued_after_resume: false,
            work_failed: false,
            counted_live: false,
            deleted: false,
            orphan: false,
            key: StreamKey::root(0),
            stuck: false,
            workflow: 0,
            seq: 0,
            push: false,
        }
    }
}

/// What becomes of a served create's reply.
pub(super) enum CreateReply {
    /// Sent now.
    Now,
    /// Lost on the way (a lost_handle fault): the client never hears.
    Lost,
    /// Held until the task ends or is interrupted (a blocking send).
    Held,
}
