//! The public face of a task, per protocol and revision (ANCHORS.md section 8): the names of
//! its states and calls, the errors a server answers with, and what a server does with a cancel
//! it receives, apart from the normalised states the runtime reasons with. Each mapping is
//! total: every normalised state has a name in each protocol, and where a protocol lacks a state
//! the nearest one it has is used and listed as a departure in docs/references.md. Where a
//! protocol lacks a call, `has` says so and the scenario's checks keep the client from making it.

use super::CancelBehaviour;
use super::lifecycle::{TaskState, WaitFor};
use crate::sim::Micros;

crate::named_enum! {
    /// Which specification, at which revision, a task dependency speaks.
    pub enum TaskProtocol {
        /// A2A 1.0 (a2a.proto, specification.md).
        A2a => "a2a",
        /// MCP 2025-11-25, the tasks utility (experimental).
        Mcp20251125 => "mcp-2025-11-25",
        /// MCP 2026-07-28, the tasks extension `io.modelcontextprotocol/tasks`.
        Mcp20260728 => "mcp-2026-07-28",
    }
}

crate::named_enum! {
    /// What an A2A server answers a cancel of a live task whose agent does not stop it at once
    /// (`cancel = "ignore"` or `"late"`, or a cancel fault): a2a-sdk 1.3.0's two request
    /// handlers answer it differently (tests/sdk_probes.rs asks them).
    pub enum IgnoredCancelAnswer {
        /// The task as CANCELED, at once, and it stays so while its work goes on
        /// (a2a-sdk's DefaultRequestHandler).
        Canceled => "canceled",
        /// TaskNotCancelableError (-32002), the task still WORKING (a2a-sdk's
        /// LegacyRequestHandler).
        NotCancelable => "not_cancelable",
        /// The task as it is, still WORKING (what the specification's CancelTask allows: "the
        /// updated task"; faultline's answer before the probes).
        Working => "working",
    }
}

crate::named_enum! {
    /// What a server does with a message sent again with the same message id (a client's resend
    /// after a timeout).
    pub enum RepeatedMessage {
        /// A second task, working beside the first (a2a-sdk 1.3.0: it keeps no record of
        /// message ids; every MCP tools/call is a new request).
        SecondTask => "second_task",
        /// The task the first send made, answered again: no second task.
        Deduplicate => "deduplicate",
    }
}

/// `protocol = "mcp"` in a file is this revision (the first MCP revision with tasks, the one
/// faultline named `mcp` before revisions were told apart).
pub const MCP_ALIAS: (&str, TaskProtocol) = ("mcp", TaskProtocol::Mcp20251125);

/// The protocol errors a task server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolError {
    /// No such task (never made, or purged).
    TaskNotFound,
    /// A cancel of a task that has ended.
    TaskNotCancelable,
    /// A subscription to a task that has ended (A2A).
    UnsupportedOperation,
}

/// What a server answers a cancel with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAnswer {
    /// The task as the cancel left it (A2A's Task, MCP 2025-11-25's task).
    Task(TaskState),
    /// An empty result (MCP 2026-07-28): nothing about the task.
    Acknowledged,
    Error(ProtocolError),
}

/// What becomes of a task's work when a cancel is received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkOnCancel {
    /// Nothing changes (an ended task, or a cancel ignored while the state is kept).
    Untouched,
    /// The work leaves the runner now.
    Stop,
    /// The work leaves the runner this long after the cancel.
    StopAfter(Micros),
}

/// A cancel received, as the protocol's server handles it: whether the task's state becomes
/// `canceled` now, what happens to its work, and the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelHandling {
    pub canceled_now: bool,
    pub work: WorkOnCancel,
    /// With `WorkOnCancel::StopAfter`: the state becomes `canceled` then, too (unless it is
    /// already).
    pub answer: CancelAnswer,
}

/// The calls a client makes about a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskCall {
    /// Creates the task (A2A SendMessage, MCP tools/call answered with a task).
    Create,
    /// Reads its state (A2A GetTask, MCP tasks/get).
    Get,
    /// Finds a task by the client's own tag when the handle was lost (A2A ListTasks filtered by
    /// the context id the client chose; MCP has no such lookup).
    Find,
    /// Opens a stream of its updates (A2A SubscribeToTask; MCP has no subscription to a task,
    /// so an MCP client polls).
    Subscribe,
    /// Asks it to stop (A2A CancelTask, MCP tasks/cancel).
    Cancel,
    /// Carries the user's answer to a task waiting for input (A2A SendMessage with the task's
    /// id and context id; MCP 2025-11-25 tasks/result, on whose stream the server's
    /// elicitation/create is answered; MCP 2026-07-28 tasks/update with inputResponses,
    /// acknowledged with an empty result).
    Answer,
}

/// What a server answers the user's answer to a task with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerReply {
    /// The task was waiting for input and goes back to work.
    pub resumed: bool,
    /// The state the reply shows the client; None for an empty acknowledgement (MCP
    /// 2026-07-28's tasks/update), after which the client polls to learn the state.
    pub shows: Option<TaskState>,
}

impl TaskProtocol {
    /// Reads a file's `protocol`: a revision's name, or the alias `mcp`.
    pub fn parse_with_alias(text: &str) -> Option<TaskProtocol> {
        if text == MCP_ALIAS.0 { Some(MCP_ALIAS.1) } else { TaskProtocol::parse(text) }
    }

    pub const fn is_mcp(self) -> bool {
        match self {
            TaskProtocol::A2a => false,
            TaskProtocol::Mcp20251125 | TaskProtocol::Mcp20260728 => true,
        }
    }

    /// The state's name on the wire.
    pub const fn state_name(self, state: TaskState) -> &'static str {
        match self {
            TaskProtocol::A2a => match state {
                TaskState::Pending => "TASK_STATE_SUBMITTED",
                TaskState::Running => "TASK_STATE_WORKING",
                TaskState::Waiting(WaitFor::Input) => "TASK_STATE_INPUT_REQUIRED",
                TaskState::Waiting(WaitFor::Auth) => "TASK_STATE_AUTH_REQUIRED",
                TaskState::Succeeded => "TASK_STATE_COMPLETED",
                TaskState::Failed => "TASK_STATE_FAILED",
                TaskState::Canceled => "TASK_STATE_CANCELED",
                TaskState::Rejected => "TASK_STATE_REJECTED",
            },
            // MCP creates a task already `working`, has one interrupted status, spells
            // `cancelled` with two l's, and has no rejected task (a refused tools/call is an
            // error, no task): the nearest is `failed`. Both revisions have the same statuses.
            TaskProtocol::Mcp20251125 | TaskProtocol::Mcp20260728 => match state {
                TaskState::Pending | TaskState::Running => "working",
                TaskState::Waiting(WaitFor::Input | WaitFor::Auth) => "input_required",
                TaskState::Succeeded => "completed",
                TaskState::Failed | TaskState::Rejected => "failed",
                TaskState::Canceled => "cancelled",
            },
        }
    }

    /// The state's name on the wire for a task whose own work failed when `work_failed` (the
    /// tool's error, not a protocol's). MCP 2026-07-28 ends it `completed` with a result marked
    /// `isError: true` (SEP-2663: "The `failed` status MUST NOT be used to represent
    /// non-JSON-RPC errors, such as a tool result that completed with `isError: true`");
    /// 2025-11-25 and A2A name it `failed` (2025-11-25: `failed` "includes cases where the tool
    /// call result has `isError` set to true"). The normalised state stays `failed`.
    pub const fn end_name(self, state: TaskState, work_failed: bool) -> &'static str {
        match (self, state) {
            (TaskProtocol::Mcp20260728, TaskState::Failed) if work_failed => "completed",
            (TaskProtocol::A2a | TaskProtocol::Mcp20251125 | TaskProtocol::Mcp20260728, _) => self.state_name(state),
        }
    }

    /// Whether the protocol has this call.
    pub const fn has(self, call: TaskCall) -> bool {
        match call {
            TaskCall::Create | TaskCall::Get | TaskCall::Cancel | TaskCall::Answer => true,
            TaskCall::Find | TaskCall::Subscribe => !self.is_mcp(),
        }
    }

    /// The call's method name on the wire; `has` says whether the protocol has the call at all
    /// (an MCP client told to subscribe polls with tasks/get).
    pub const fn call_name(self, call: TaskCall) -> &'static str {
        match self {
            TaskProtocol::A2a => match call {
                TaskCall::Create => "SendMessage",
                TaskCall::Get => "GetTask",
                TaskCall::Find => "ListTasks",
                TaskCall::Subscribe => "SubscribeToTask",
                TaskCall::Cancel => "CancelTask",
                // A follow-up message on the same task ("the client continues the interaction
                // by sending a new message with the same taskId and contextId").
                TaskCall::Answer => "SendMessage",
            },
            // "When the requestor encounters the input_required status, it SHOULD preemptively
            // call tasks/result"; the 2026-07-28 extension (SEP-2663): "task inputRequests are
            // surfaced via tasks/get and fulfilled via tasks/update".
            TaskProtocol::Mcp20251125 | TaskProtocol::Mcp20260728 => match call {
                TaskCall::Create => "tools/call",
                TaskCall::Answer if matches!(self, TaskProtocol::Mcp20251125) => "tasks/result",
                TaskCall::Answer => "tasks/update",
                TaskCall::Get | TaskCall::Subscribe => "tasks/get",
                // 2025-11-25's tasks/list takes only a cursor (no lookup by request id), and
                // 2026-07-28 has none: an MCP client never looks a task up (`can_find`), it
                // resends.
                TaskCall::Find => "tasks/list",
                TaskCall::Cancel => "tasks/cancel",
            },
        }
    }

    /// Whether the protocol can stream a task's updates (MCP clients poll).
    pub const fn can_subscribe(self) -> bool {
        self.has(TaskCall::Subscribe)
    }

    /// Whether the server can POST a task's updates to a webhook the client registers with its
    /// send (A2A push notifications). MCP's `notifications/tasks/status` rides the session and
    /// "requestors MUST NOT rely on" it: an MCP client polls.
    pub const fn can_push(self) -> bool {
        !self.is_mcp()
    }

    /// Whether a client can find a task it lost the handle of by a tag of its own.
    pub const fn can_find(self) -> bool {
        self.has(TaskCall::Find)
    }

    /// The error's JSON-RPC code and its name in the specification.
    pub const fn error(self, error: ProtocolError) -> (i32, &'static str) {
        match self {
            TaskProtocol::A2a => match error {
                ProtocolError::TaskNotFound => (-32001, "TaskNotFoundError"),
                ProtocolError::TaskNotCancelable => (-32002, "TaskNotCancelableError"),
                ProtocolError::UnsupportedOperation => (-32004, "UnsupportedOperationError"),
            },
            // MCP answers an unknown task and a cancel of an ended one with Invalid params.
            TaskProtocol::Mcp20251125 | TaskProtocol::Mcp20260728 => match error {
                ProtocolError::TaskNotFound | ProtocolError::TaskNotCancelable => (-32602, "Invalid params"),
                ProtocolError::UnsupportedOperation => (-32601, "Method not found"),
            },
        }
    }

    /// Whether a create's reply waits for the task to end or to be interrupted. A2A 1.0's
    /// SendMessage blocks unless the client sets `returnImmediately` (0.3's `blocking: false`);
    /// an MCP task-augmented tools/call answers CreateTaskResult at once (2025-11-25: "MUST
    /// return ... immediately"), whatever the client asks.
    pub const fn create_blocks(self, return_immediately: bool) -> bool {
        match self {
            TaskProtocol::A2a => !return_immediately,
            TaskProtocol::Mcp20251125 | TaskProtocol::Mcp20260728 => false,
        }
    }

    /// The state a create answered at once shows: the task as made (A2A SUBMITTED, MCP
    /// `working`).
    pub const fn created_state(self) -> TaskState {
        TaskState::Pending
    }

    /// What a server does with a repeated message id unless told otherwise: a second task in
    /// both protocols (a2a-sdk 1.3.0 keeps no record of message ids; MCP has none).
    pub const fn default_repeated_message(self) -> RepeatedMessage {
        RepeatedMessage::SecondTask
    }

    /// Whether the protocol lets a server deduplicate by message id (A2A's Message has a
    /// `messageId`; an MCP tools/call has only its JSON-RPC id, never reused).
    pub const fn has_message_id(self) -> bool {
        !self.is_mcp()
    }

    /// A get, cancel or subscription of a task the server does not hold (never made, or
    /// deleted after its ttl): TaskNotFound (A2A -32001, MCP -32602).
    pub const fn unknown_task(self, call: TaskCall) -> ProtocolError {
        match call {
            TaskCall::Get
            | TaskCall::Cancel
            | TaskCall::Subscribe
            | TaskCall::Find
            | TaskCall::Create
            | TaskCall::Answer => ProtocolError::TaskNotFound,
        }
    }

    /// How the server handles a cancel of a task in `state`, whose work the remote side treats
    /// by `behaviour` (the dependency's `cancel`, or a cancel fault, with the delay of `late`);
    /// `ignored` is an A2A server's answer when that work does not stop at once.
    ///
    /// A2A: an ended task is TaskNotCancelableError; a live one stopped at once is CANCELED; one
    /// whose work goes on (later or never stopped) is answered as `ignored` says. MCP 2025-11-25: an ended task is
    /// -32602; a live one is `cancelled` before the answer and stays so whether its work stops,
    /// stops later or goes on. MCP 2026-07-28: an empty acknowledgement, whatever the state; the
    /// cancel is cooperative and eventually consistent (stopped at once, later or never).
    pub const fn cancel(
        self,
        state: TaskState,
        behaviour: CancelBehaviour,
        late_us: Micros,
        ignored: IgnoredCancelAnswer,
    ) -> CancelHandling {
        let work = match behaviour {
            CancelBehaviour::Honor => WorkOnCancel::Stop,
            CancelBehaviour::Late => WorkOnCancel::StopAfter(late_us),
            CancelBehaviour::Ignore => WorkOnCancel::Untouched,
        };
        let untouched = WorkOnCancel::Untouched;
        let honoured = matches!(behaviour, CancelBehaviour::Honor);
        match (self, state.is_terminal()) {
            (TaskProtocol::A2a | TaskProtocol::Mcp20251125, true) => CancelHandling {
                canceled_now: false,
                work: untouched,
                answer: CancelAnswer::Error(ProtocolError::TaskNotCancelable),
            },
            (TaskProtocol::Mcp20260728, true) => {
                CancelHandling { canceled_now: false, work: untouched, answer: CancelAnswer::Acknowledged }
            }
            (TaskProtocol::A2a, false) => match (honoured, ignored) {
                (true, _) | (false, IgnoredCancelAnswer::Canceled) => {
                    CancelHandling { canceled_now: true, work, answer: CancelAnswer::Task(TaskState::Canceled) }
                }
                (false, IgnoredCancelAnswer::NotCancelable) => CancelHandling {
                    canceled_now: false,
                    work,
                    answer: CancelAnswer::Error(ProtocolError::TaskNotCancelable),
                },
                (false, IgnoredCancelAnswer::Working) => {
                    CancelHandling { canceled_now: false, work, answer: CancelAnswer::Task(state) }
                }
            },
            (TaskProtocol::Mcp20251125, false) => {
                CancelHandling { canceled_now: true, work, answer: CancelAnswer::Task(TaskState::Canceled) }
            }
            (TaskProtocol::Mcp20260728, false) => {
                CancelHandling { canceled_now: honoured, work, answer: CancelAnswer::Acknowledged }
            }
        }
    }

    /// How the server answers the user's answer to a task in `state`. A task waiting for input
    /// goes back to work (A2A: "the client continues the interaction by sending a new message
    /// with the same taskId"; MCP: "when the receiver receives all required input, the task
    /// SHOULD transition out of input_required status (typically back to working)"), and the
    /// reply shows it working. A2A refuses a message to a task in a terminal state
    /// (UnsupportedOperationError); MCP 2025-11-25's tasks/result of an ended task returns its
    /// final result. MCP 2026-07-28's tasks/update is acknowledged with an empty result whatever
    /// the state ("On success, the server MUST acknowledge the request with an empty result";
    /// answers to requests it no longer holds are ignored), so its reply shows nothing. A live
    /// task that waits for nothing takes the message and goes on as it was.
    pub const fn answer(self, state: TaskState) -> Result<AnswerReply, ProtocolError> {
        match (self, state) {
            (TaskProtocol::Mcp20260728, TaskState::Waiting(_)) => Ok(AnswerReply { resumed: true, shows: None }),
            (TaskProtocol::Mcp20260728, _) => Ok(AnswerReply { resumed: false, shows: None }),
            (_, TaskState::Waiting(_)) => Ok(AnswerReply { resumed: true, shows: Some(TaskState::Running) }),
            (TaskProtocol::A2a, s) if s.is_terminal() => Err(ProtocolError::UnsupportedOperation),
            (TaskProtocol::A2a | TaskProtocol::Mcp20251125, s) => Ok(AnswerReply { resumed: false, shows: Some(s) }),
        }
    }

    /// Whether an answer to a task the server does not hold is acknowledged all the same (MCP
    /// 2026-07-28: "The server MUST acknowledge the request with an empty result, even if the
    /// task ID does not represent a valid task"); otherwise it is TaskNotFound.
    pub const fn acknowledges_any_answer(self) -> bool {
        match self {
            TaskProtocol::Mcp20260728 => true,
            TaskProtocol::A2a | TaskProtocol::Mcp20251125 => false,
        }
    }

    /// How the server answers a subscription to a task in `state`: A2A refuses an ended task
    /// (UnsupportedOperationError); otherwise the stream opens with the task's state.
    pub const fn subscribe(self, state: TaskState) -> Result<TaskState, ProtocolError> {
        if state.is_terminal() { Err(ProtocolError::UnsupportedOperation) } else { Ok(state) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::task::lifecycle::{TaskEvent, TaskState, next_state};

    const ALL: [TaskState; 8] = [
        TaskState::Pending,
        TaskState::Running,
        TaskState::Waiting(WaitFor::Input),
        TaskState::Waiting(WaitFor::Auth),
        TaskState::Succeeded,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::Rejected,
    ];

    #[test]
    fn a2a_names_are_the_eight_task_states_of_a2a_1_0() {
        let names: Vec<&str> = ALL.iter().map(|s| TaskProtocol::A2a.state_name(*s)).collect();
        assert_eq!(
            names,
            [
                "TASK_STATE_SUBMITTED",
                "TASK_STATE_WORKING",
                "TASK_STATE_INPUT_REQUIRED",
                "TASK_STATE_AUTH_REQUIRED",
                "TASK_STATE_COMPLETED",
                "TASK_STATE_FAILED",
                "TASK_STATE_CANCELED",
                "TASK_STATE_REJECTED"
            ]
        );
    }

    #[test]
    fn mcp_names_are_only_its_five_statuses() {
        let mcp = ["working", "input_required", "completed", "failed", "cancelled"];
        for state in ALL {
            assert!(mcp.contains(&TaskProtocol::Mcp20251125.state_name(state)), "{state:?}");
        }
    }

    #[test]
    fn terminal_states_keep_terminal_names() {
        for state in ALL.into_iter().filter(|s| s.is_terminal()) {
            assert!(!matches!(TaskProtocol::Mcp20251125.state_name(state), "working" | "input_required"));
            assert!(!matches!(TaskProtocol::A2a.state_name(state), "TASK_STATE_WORKING" | "TASK_STATE_SUBMITTED"));
        }
    }

    const LIVE: [TaskState; 4] =
        [TaskState::Pending, TaskState::Running, TaskState::Waiting(WaitFor::Input), TaskState::Waiting(WaitFor::Auth)];
    const ENDED: [TaskState; 4] = [TaskState::Succeeded, TaskState::Failed, TaskState::Canceled, TaskState::Rejected];
    const BEHAVIOURS: [CancelBehaviour; 3] = [CancelBehaviour::Honor, CancelBehaviour::Late, CancelBehaviour::Ignore];

    #[test]
    fn the_mcp_alias_is_the_2025_11_25_revision_and_every_revision_parses() {
        assert_eq!(TaskProtocol::parse_with_alias("mcp"), Some(TaskProtocol::Mcp20251125));
        for p in TaskProtocol::ALL {
            assert_eq!(TaskProtocol::parse_with_alias(p.name()), Some(p));
        }
        assert_eq!(TaskProtocol::parse_with_alias("mcp-2025-06-18"), None, "no tasks before 2025-11-25");
    }

    #[test]
    fn a2a_cancel_of_an_ended_task_is_task_not_cancelable_and_changes_nothing() {
        for state in ENDED {
            for b in BEHAVIOURS {
                let h = TaskProtocol::A2a.cancel(state, b, 5, IgnoredCancelAnswer::Working);
                assert_eq!(h.answer, CancelAnswer::Error(ProtocolError::TaskNotCancelable));
                assert!(!h.canceled_now);
                assert_eq!(h.work, WorkOnCancel::Untouched);
            }
        }
        assert_eq!(TaskProtocol::A2a.error(ProtocolError::TaskNotCancelable), (-32002, "TaskNotCancelableError"));
        assert_eq!(TaskProtocol::A2a.error(ProtocolError::UnsupportedOperation), (-32004, "UnsupportedOperationError"));
        assert_eq!(TaskProtocol::A2a.error(ProtocolError::TaskNotFound), (-32001, "TaskNotFoundError"));
    }

    #[test]
    fn a2a_cancel_of_a_live_task_shows_it_as_the_cancel_left_it() {
        let working = IgnoredCancelAnswer::Working;
        for state in LIVE {
            for answer in IgnoredCancelAnswer::ALL {
                let honour = TaskProtocol::A2a.cancel(state, CancelBehaviour::Honor, 0, answer);
                assert_eq!((honour.canceled_now, honour.work), (true, WorkOnCancel::Stop));
                assert_eq!(honour.answer, CancelAnswer::Task(TaskState::Canceled));
            }
            let late = TaskProtocol::A2a.cancel(state, CancelBehaviour::Late, 7, working);
            assert_eq!((late.canceled_now, late.work), (false, WorkOnCancel::StopAfter(7)));
            assert_eq!(late.answer, CancelAnswer::Task(state), "still working, for now");
            let ignored = TaskProtocol::A2a.cancel(state, CancelBehaviour::Ignore, 0, working);
            assert_eq!((ignored.canceled_now, ignored.work), (false, WorkOnCancel::Untouched));
            assert_eq!(ignored.answer, CancelAnswer::Task(state));
        }
    }

    #[test]
    fn a2a_sdk_handlers_answer_a_cancel_whose_work_goes_on_canceled_or_not_cancelable() {
        for state in LIVE {
            for (b, work) in [
                (CancelBehaviour::Late, WorkOnCancel::StopAfter(7)),
                (CancelBehaviour::Ignore, WorkOnCancel::Untouched),
            ] {
                // DefaultRequestHandler: CANCELED at once, the work untouched by it.
                let h = TaskProtocol::A2a.cancel(state, b, 7, IgnoredCancelAnswer::Canceled);
                assert_eq!(
                    h,
                    CancelHandling { canceled_now: true, work, answer: CancelAnswer::Task(TaskState::Canceled) }
                );
                // LegacyRequestHandler: -32002, the task still working.
                let h = TaskProtocol::A2a.cancel(state, b, 7, IgnoredCancelAnswer::NotCancelable);
                assert_eq!(
                    h,
                    CancelHandling {
                        canceled_now: false,
                        work,
                        answer: CancelAnswer::Error(ProtocolError::TaskNotCancelable)
                    }
                );
            }
        }
    }

    #[test]
    fn only_an_a2a_send_blocks_and_only_without_return_immediately() {
        assert!(TaskProtocol::A2a.create_blocks(false));
        assert!(!TaskProtocol::A2a.create_blocks(true));
        for p in [TaskProtocol::Mcp20251125, TaskProtocol::Mcp20260728] {
            assert!(!p.create_blocks(false) && !p.create_blocks(true), "{p:?}");
            assert!(!p.has_message_id());
            assert_eq!(p.unknown_task(TaskCall::Get), ProtocolError::TaskNotFound);
            assert_eq!(p.error(p.unknown_task(TaskCall::Cancel)).0, -32602);
        }
        assert!(TaskProtocol::A2a.has_message_id());
        assert_eq!(TaskProtocol::A2a.error(TaskProtocol::A2a.unknown_task(TaskCall::Get)).0, -32001);
        assert_eq!(TaskProtocol::A2a.default_repeated_message(), RepeatedMessage::SecondTask);
        assert_eq!(TaskProtocol::A2a.state_name(TaskProtocol::A2a.created_state()), "TASK_STATE_SUBMITTED");
    }

    #[test]
    fn mcp_2025_11_25_cancels_a_live_task_before_it_answers_whatever_the_work_does() {
        // "MUST transition the task to cancelled status before sending the response", and "MUST
        // remain in cancelled status even if execution continues".
        for state in LIVE {
            for (b, work) in [
                (CancelBehaviour::Honor, WorkOnCancel::Stop),
                (CancelBehaviour::Late, WorkOnCancel::StopAfter(9)),
                (CancelBehaviour::Ignore, WorkOnCancel::Untouched),
            ] {
                let h = TaskProtocol::Mcp20251125.cancel(state, b, 9, IgnoredCancelAnswer::Working);
                assert_eq!(
                    h,
                    CancelHandling { canceled_now: true, work, answer: CancelAnswer::Task(TaskState::Canceled) }
                );
            }
        }
        // "MUST reject cancellation requests for tasks already in a terminal status ... -32602".
        for state in ENDED {
            let h = TaskProtocol::Mcp20251125.cancel(state, CancelBehaviour::Honor, 0, IgnoredCancelAnswer::Working);
            assert_eq!(h.answer, CancelAnswer::Error(ProtocolError::TaskNotCancelable));
            assert!(!h.canceled_now);
        }
        assert_eq!(TaskProtocol::Mcp20251125.error(ProtocolError::TaskNotCancelable).0, -32602);
        assert_eq!(TaskProtocol::Mcp20251125.error(ProtocolError::TaskNotFound).0, -32602);
        // MCP has no subscription: asking for one is Method not found.
        assert_eq!(TaskProtocol::Mcp20251125.error(ProtocolError::UnsupportedOperation), (-32601, "Method not found"));
    }

    #[test]
    fn mcp_2026_07_28_acknowledges_every_cancel_and_applies_it_cooperatively() {
        for state in LIVE.into_iter().chain(ENDED) {
            for b in BEHAVIOURS {
                let h = TaskProtocol::Mcp20260728.cancel(state, b, 3, IgnoredCancelAnswer::Working);
                assert_eq!(h.answer, CancelAnswer::Acknowledged, "{state:?} {b:?}");
                assert_eq!(h.canceled_now, !state.is_terminal() && b == CancelBehaviour::Honor);
            }
        }
        let late = TaskProtocol::Mcp20260728.cancel(
            TaskState::Running,
            CancelBehaviour::Late,
            3,
            IgnoredCancelAnswer::Working,
        );
        assert_eq!(late.work, WorkOnCancel::StopAfter(3));
    }

    #[test]
    fn each_call_has_its_specifications_method_name() {
        let names = |p: TaskProtocol| {
            [TaskCall::Create, TaskCall::Get, TaskCall::Find, TaskCall::Subscribe, TaskCall::Cancel, TaskCall::Answer]
                .map(|c| p.call_name(c))
        };
        assert_eq!(
            names(TaskProtocol::A2a),
            ["SendMessage", "GetTask", "ListTasks", "SubscribeToTask", "CancelTask", "SendMessage"]
        );
        assert_eq!(
            names(TaskProtocol::Mcp20251125),
            ["tools/call", "tasks/get", "tasks/list", "tasks/get", "tasks/cancel", "tasks/result"]
        );
        assert_eq!(
            names(TaskProtocol::Mcp20260728),
            ["tools/call", "tasks/get", "tasks/list", "tasks/get", "tasks/cancel", "tasks/update"]
        );
    }

    #[test]
    fn an_answer_resumes_a_waiting_task_and_a2a_refuses_one_to_an_ended_task() {
        // MCP: "From input_required: may move to working, completed, failed, or cancelled";
        // A2A: a message to a task in a terminal state is UnsupportedOperationError.
        // MCP 2026-07-28's tasks/update is acknowledged with an empty result, whatever the state.
        for p in TaskProtocol::ALL {
            let shown = |s| if p == TaskProtocol::Mcp20260728 { None } else { Some(s) };
            for w in [WaitFor::Input, WaitFor::Auth] {
                assert_eq!(
                    p.answer(TaskState::Waiting(w)),
                    Ok(AnswerReply { resumed: true, shows: shown(TaskState::Running) }),
                    "{p:?}"
                );
            }
            for s in [TaskState::Pending, TaskState::Running] {
                assert_eq!(p.answer(s), Ok(AnswerReply { resumed: false, shows: shown(s) }), "{p:?} {s:?}");
            }
            assert!(p.has(TaskCall::Answer));
        }
        for s in ENDED {
            assert_eq!(TaskProtocol::A2a.answer(s), Err(ProtocolError::UnsupportedOperation));
            assert_eq!(TaskProtocol::Mcp20251125.answer(s), Ok(AnswerReply { resumed: false, shows: Some(s) }));
            assert_eq!(TaskProtocol::Mcp20260728.answer(s), Ok(AnswerReply { resumed: false, shows: None }));
        }
        // The lifecycle agrees: waiting resumes to running, and an ended task never resumes.
        for w in [WaitFor::Input, WaitFor::Auth] {
            assert_eq!(next_state(TaskState::Waiting(w), TaskEvent::Resume), Ok(TaskState::Running));
        }
        for s in ENDED {
            assert!(next_state(s, TaskEvent::Resume).is_err());
        }
    }

    #[test]
    fn only_a2a_subscribes_and_finds_and_it_refuses_a_subscription_to_an_ended_task() {
        assert!(TaskProtocol::A2a.can_subscribe() && TaskProtocol::A2a.can_find());
        for p in [TaskProtocol::Mcp20251125, TaskProtocol::Mcp20260728] {
            assert!(!p.can_subscribe() && !p.can_find(), "{p:?}");
            assert!(p.has(TaskCall::Get) && p.has(TaskCall::Cancel) && p.has(TaskCall::Create));
        }
        for state in ENDED {
            assert_eq!(TaskProtocol::A2a.subscribe(state), Err(ProtocolError::UnsupportedOperation));
        }
        for state in LIVE {
            assert_eq!(TaskProtocol::A2a.subscribe(state), Ok(state));
        }
    }
}
