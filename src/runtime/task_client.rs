//! The client side of a long-running remote task (essay sections 19 to 21): how a runtime
//! creates a task, learns its fate by polling or by a subscription, finds a task whose handle it
//! lost instead of sending the message again, and asks a task to stop when nobody waits for it
//! any more. A pure machine: it is told what came back and answers with the next request to
//! make; the engine makes the requests at the dependency, where each one is real load.
//!
//! The essay's cancellation path is kept as states: CANCEL_REQUESTED (the caller stopped
//! waiting), the cancel dispatched to the remote side, and the task state observed in the
//! cancel's answer, one of CANCELED, COMPLETED, FAILED or STILL_RUNNING (then the task goes to
//! the orphan queue). CANCELED is not ROLLED_BACK: what the task committed stays committed.

use crate::scenario::{FieldPath, ScenarioError, Source, TaskClientSpec, duration_ms, error_at_path, parse_named};
use crate::sim::Micros;
use crate::vocab::FailureKind;
pub use crate::world::task::CancelObserved;
use crate::world::task::{CancelAnswer, ProtocolError, TaskCall, TaskProtocol, TaskState, WaitFor};

crate::named_enum! {
    /// How the client learns a task's state.
    pub enum Observe {
        /// GetTask / tasks/get every poll interval.
        Poll => "poll",
        /// SubscribeToTask: one request, then the task's updates on a stream that an outage
        /// breaks (A2A only; MCP clients poll).
        Subscribe => "subscribe",
        /// A push notification config sent with the create: the server POSTs each update to
        /// the client's webhook (A2A only), and the client polls at its poll interval as a
        /// fallback for a notification that never comes.
        Push => "push",
    }
}

crate::named_enum! {
    /// The randomisation of a wait (AWS's names): none, full (uniform in [0, d)) or equal
    /// (d/2 plus uniform in [0, d/2)).
    pub enum Jitter {
        None => "none",
        Full => "full",
        Equal => "equal",
    }
}

crate::named_enum! {
    /// What the step does when its task asks for input (A2A TASK_STATE_INPUT_REQUIRED, MCP
    /// `input_required`).
    pub enum OnInputRequired {
        /// The step is told at once (INVALID_INPUT, UNAUTHORIZED) and the client lets go of the
        /// task.
        GiveUp => "give_up",
        /// The step keeps waiting (its timeout and deadline still run) while the scripted user
        /// answers; the client sends the answer and follows the task again.
        Wait => "wait",
    }
}

crate::named_enum! {
    /// What a client does when its create request times out without a task handle.
    pub enum OnSendTimeout {
        /// Look the task up by the message id (A2A ListTasks) before anything is sent again.
        Find => "find",
        /// Report a timeout: the step's retry sends the message again, creating a second task
        /// when the first one exists.
        Resend => "resend",
    }
}

/// A policy's task client (`[policy.P.task_client]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskClientConfig {
    pub observe: Observe,
    /// The client's own poll interval: used when the server advertises none, or always when
    /// `honor_poll_interval` is false.
    pub poll_interval_us: Micros,
    pub honor_poll_interval: bool,
    /// While the task works, each poll wait is the previous one times this, up to
    /// `poll_max_interval_us` (Google's long-running operations: 5 s, x1.5, 45 s). 1: a fixed
    /// interval.
    pub poll_multiplier: f64,
    pub poll_max_interval_us: Option<Micros>,
    /// A poll, subscription or lookup refused with a Retry-After (a rate limit's 429) is made
    /// again no sooner than it says (a 503 from a `down` front end that carries one too).
    pub honor_retry_after: bool,
    /// The longest Retry-After honoured: a longer one is waited this long. None: no cap.
    pub retry_after_max_us: Option<Micros>,
    pub jitter: Jitter,
    /// The wait after a failed request (a poll, a subscription, a lookup), then multiplied by
    /// `retry_multiplier` after each further failure, up to `retry_max_interval_us`.
    pub retry_interval_us: Micros,
    pub retry_multiplier: f64,
    pub retry_max_interval_us: Micros,
    /// Each protocol request's own timeout.
    pub request_timeout_us: Micros,
    pub on_send_timeout: OnSendTimeout,
    /// A2A 1.0's `returnImmediately` (0.3's `blocking: false`): the create answers with the task
    /// as made. false: an A2A create blocks until the task ends or is interrupted (an MCP create
    /// answers at once whatever this says, `TaskProtocol::create_blocks`).
    pub return_immediately: bool,
    /// Send CancelTask when the caller stops waiting.
    pub cancel_on_abandon: bool,
    /// What the step does when its task asks for input.
    pub on_input_required: OnInputRequired,
    /// The root run's deadline travels with the task; the remote side stops its own calls past it.
    pub propagate_deadline: bool,
    /// How long an orphan is kept on the orphan queue before it is escalated.
    pub orphan_ttl_us: Micros,
}

impl Default for TaskClientConfig {
    fn default() -> Self {
        TaskClientConfig {
            observe: Observe::Poll,
            poll_interval_us: 1_000_000,
            honor_poll_interval: true,
            poll_multiplier: 1.0,
            poll_max_interval_us: None,
            honor_retry_after: true,
            retry_after_max_us: None,
            jitter: Jitter::None,
            retry_interval_us: 1_000_000,
            retry_multiplier: 1.0,
            retry_max_interval_us: 30_000_000,
            request_timeout_us: 10_000_000,
            on_send_timeout: OnSendTimeout::Find,
            return_immediately: false,
            cancel_on_abandon: true,
            on_input_required: OnInputRequired::GiveUp,
            propagate_deadline: false,
            orphan_ttl_us: 3_600_000_000,
        }
    }
}

impl TaskClientConfig {
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.retry_multiplier.is_finite() && self.retry_multiplier >= 1.0) {
            return Err(("retry_multiplier", format!("must be at least 1, got {}", self.retry_multiplier)));
        }
        if self.retry_max_interval_us < self.retry_interval_us {
            return Err(("retry_max_interval_ms", "must be at least retry_interval_ms".into()));
        }
        if !(self.poll_multiplier.is_finite() && self.poll_multiplier >= 1.0) {
            return Err(("poll_multiplier", format!("must be at least 1, got {}", self.poll_multiplier)));
        }
        if self.poll_max_interval_us.is_some_and(|max| max < self.poll_interval_us) {
            return Err(("poll_max_interval_ms", "must be at least poll_interval_ms".into()));
        }
        for (field, value) in [
            ("poll_interval_ms", self.poll_interval_us),
            ("retry_interval_ms", self.retry_interval_us),
            ("request_timeout_ms", self.request_timeout_us),
        ] {
            if value == 0 {
                return Err((field, "must be greater than 0".into()));
            }
        }
        Ok(())
    }
}

/// Compiles `[policy.P.task_client]` (`path` names it), every field located on error.
pub fn compile_task_client(
    source: &Source,
    path: &FieldPath,
    spec: Option<&TaskClientSpec>,
) -> Result<TaskClientConfig, ScenarioError> {
    let d = TaskClientConfig::default();
    let Some(t) = spec else { return Ok(d) };
    let ms = |field: &str, value: Option<f64>, default: Micros| match value {
        Some(v) => duration_ms(source, &path.key(field), v),
        None => Ok(default),
    };
    let config = TaskClientConfig {
        observe: parse_named(source, &path.key("observe"), t.observe.as_deref(), d.observe)?,
        poll_interval_us: ms("poll_interval_ms", t.poll_interval_ms, d.poll_interval_us)?,
        honor_poll_interval: t.honor_poll_interval.unwrap_or(d.honor_poll_interval),
        poll_multiplier: t.poll_multiplier.unwrap_or(d.poll_multiplier),
        poll_max_interval_us: match t.poll_max_interval_ms {
            Some(v) => Some(duration_ms(source, &path.key("poll_max_interval_ms"), v)?),
            None => d.poll_max_interval_us,
        },
        honor_retry_after: t.honor_retry_after.unwrap_or(d.honor_retry_after),
        retry_after_max_us: match t.retry_after_max_ms {
            Some(v) => Some(duration_ms(source, &path.key("retry_after_max_ms"), v)?),
            None => d.retry_after_max_us,
        },
        jitter: parse_named(source, &path.key("jitter"), t.jitter.as_deref(), d.jitter)?,
        retry_interval_us: ms("retry_interval_ms", t.retry_interval_ms, d.retry_interval_us)?,
        retry_multiplier: t.retry_multiplier.unwrap_or(d.retry_multiplier),
        retry_max_interval_us: ms("retry_max_interval_ms", t.retry_max_interval_ms, d.retry_max_interval_us)?,
        request_timeout_us: ms("request_timeout_ms", t.request_timeout_ms, d.request_timeout_us)?,
        on_send_timeout: parse_named(
            source,
            &path.key("on_send_timeout"),
            t.on_send_timeout.as_deref(),
            d.on_send_timeout,
        )?,
        return_immediately: t.return_immediately.unwrap_or(d.return_immediately),
        cancel_on_abandon: t.cancel_on_abandon.unwrap_or(d.cancel_on_abandon),
        on_input_required: parse_named(
            source,
            &path.key("on_input_required"),
            t.on_input_required.as_deref(),
            d.on_input_required,
        )?,
        propagate_deadline: t.propagate_deadline.unwrap_or(d.propagate_deadline),
        orphan_ttl_us: ms("orphan_ttl_ms", t.orphan_ttl_ms, d.orphan_ttl_us)?,
    };
    config.check().map_err(|(field, message)| error_at_path(source, &path.key(field), message))?;
    if t.retry_after_max_ms.is_some() && !config.honor_retry_after {
        let message = "retry_after_max_ms caps an honoured Retry-After, and honor_retry_after is false";
        return Err(error_at_path(source, &path.key("retry_after_max_ms"), message));
    }
    Ok(config)
}

/// Where the client stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPhase {
    /// The create request is out.
    Creating,
    /// The handle was lost: the lookup by message id is out (or waits to be retried).
    Finding,
    /// Waiting for the next poll, or a poll is out.
    Polling,
    /// The subscription request is out (or waits to be retried).
    Subscribing,
    /// The stream is open: updates arrive without requests.
    Subscribed,
    /// The task waits for the user's input and the step waits with it: the scripted user's
    /// answer is due (or never comes), or its request is out.
    AwaitingInput,
    /// The step was told the task needs the user (input or authorisation); the client still
    /// holds the task until it lets go of it (`abandon`).
    Interrupted,
    /// CANCEL_REQUESTED: the cancel is dispatched, its answer not yet in.
    CancelRequested,
    /// The cancel was refused because the task had ended: a get is out to learn how.
    CancelChecking,
    /// The caller stopped waiting and no cancel was sent (or could be): nothing more to do.
    Detached,
    /// The step got its answer, or the cancel's outcome was observed.
    Done,
}

/// What the client does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAction {
    /// Make this request now.
    Request(TaskCall),
    /// Make this request after a wait (a poll interval, a retry pause).
    RequestAfter(TaskCall, Micros),
    /// The task's fate for the step that waits.
    Answer(TaskAnswer),
    /// Nothing until the next input (a stream is open, or the client is done).
    Wait,
    /// The task waits for input: the scripted user is asked, and its answer, if it comes, is
    /// sent as a `TaskCall::Answer`.
    AskUser,
}

/// What a cancel's answer leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelStep {
    /// The client knows what it will know.
    Observed(CancelObserved),
    /// It makes this request to learn more (a get after a refused cancel).
    Check(TaskCall),
}

/// What the step that waits is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAnswer {
    /// The task ended in this state (or is interrupted and needs the user).
    Ended(TaskState),
    /// The create request failed with this kind: no task was made.
    NotCreated(FailureKind),
    /// The create request timed out and the client cannot (or does not) find the task.
    TimedOut,
    /// A get or subscription answered TaskNotFound: the server deleted the task (after its
    /// ttl), and its outcome with it.
    Lost,
}

/// One step attempt's client of one remote task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskClient {
    pub phase: ClientPhase,
    /// The task handle is known.
    pub has_handle: bool,
    /// Failed requests in a row (for the retry pause).
    pub failures: u32,
    /// Poll waits since the handle arrived (for the poll backoff).
    pub polls: u32,
    /// The server's advertised poll interval (MCP pollIntervalMs), if any.
    pub server_poll_us: Option<Micros>,
    /// The protocol can stream a task's updates (A2A); otherwise a subscriber polls (MCP).
    pub can_subscribe: bool,
    /// The protocol can look a task up by the client's own message id (A2A ListTasks);
    /// otherwise (MCP: tasks/list takes only a cursor, and 2026-07-28 has none) a client told
    /// to find a lost task reports the timeout and the step's retry sends the message again.
    pub can_find: bool,
    /// The protocol can push a task's updates to a webhook (A2A); otherwise a push client polls.
    pub can_push: bool,
}

impl TaskClient {
    /// A client whose create request is being sent.
    pub fn new(server_poll_us: Option<Micros>, can_subscribe: bool) -> (TaskClient, ClientAction) {
        let client = TaskClient {
            phase: ClientPhase::Creating,
            has_handle: false,
            failures: 0,
            polls: 0,
            server_poll_us,
            can_subscribe,
            can_find: true,
            can_push: can_subscribe,
        };
        (client, ClientAction::Request(TaskCall::Create))
    }

    /// A client of `protocol`, with what that protocol lets a client do.
    pub fn for_protocol(server_poll_us: Option<Micros>, protocol: TaskProtocol) -> (TaskClient, ClientAction) {
        let (mut client, first) = TaskClient::new(server_poll_us, protocol.can_subscribe());
        client.can_find = protocol.can_find();
        client.can_push = protocol.can_push();
        (client, first)
    }

    /// Whether the client registers a webhook with its create and is told of the task's
    /// updates by push notifications.
    pub fn pushed_to(&self, cfg: &TaskClientConfig) -> bool {
        cfg.observe == Observe::Push && self.can_push
    }

    /// Whether the step still waits for this client's answer.
    pub fn waits(&self) -> bool {
        match self.phase {
            ClientPhase::Creating
            | ClientPhase::Finding
            | ClientPhase::Polling
            | ClientPhase::Subscribing
            | ClientPhase::Subscribed
            | ClientPhase::AwaitingInput => true,
            ClientPhase::Interrupted
            | ClientPhase::CancelRequested
            | ClientPhase::CancelChecking
            | ClientPhase::Detached
            | ClientPhase::Done => false,
        }
    }

    /// The create was answered: with the task as made (`state` pending, when the send returns
    /// at once), or, a blocking send, with the task ended or interrupted, which the step hears
    /// at once with no request more.
    pub fn on_created(&mut self, cfg: &TaskClientConfig, state: TaskState, u: f64) -> ClientAction {
        match state {
            TaskState::Pending | TaskState::Running => self.on_handle(cfg, u),
            TaskState::Waiting(_)
            | TaskState::Succeeded
            | TaskState::Failed
            | TaskState::Canceled
            | TaskState::Rejected => {
                self.assert_waits("a blocking send's answer");
                self.has_handle = true;
                self.on_state(cfg, state, u)
            }
        }
    }

    /// The task exists and its handle is known: start tracking it.
    pub fn on_handle(&mut self, cfg: &TaskClientConfig, u: f64) -> ClientAction {
        self.assert_waits("a handle");
        self.has_handle = true;
        self.failures = 0;
        match cfg.observe {
            Observe::Subscribe if self.can_subscribe => {
                self.phase = ClientPhase::Subscribing;
                ClientAction::Request(TaskCall::Subscribe)
            }
            Observe::Poll | Observe::Subscribe | Observe::Push => {
                self.phase = ClientPhase::Polling;
                ClientAction::RequestAfter(TaskCall::Get, self.poll_wait(cfg, u))
            }
        }
    }

    /// The create request timed out: the task may exist.
    pub fn on_create_timed_out(&mut self, cfg: &TaskClientConfig) -> ClientAction {
        self.assert_waits("a create timeout");
        match (cfg.on_send_timeout, self.can_find) {
            (OnSendTimeout::Find, true) => {
                self.phase = ClientPhase::Finding;
                ClientAction::Request(TaskCall::Find)
            }
            (OnSendTimeout::Find, false) | (OnSendTimeout::Resend, _) => self.answer(TaskAnswer::TimedOut),
        }
    }

    /// The create request failed: no task was made.
    pub fn on_create_failed(&mut self, kind: FailureKind) -> ClientAction {
        self.assert_waits("a create failure");
        self.answer(TaskAnswer::NotCreated(kind))
    }

    /// The lookup by message id answered: `found` when the task exists.
    pub fn on_found(&mut self, cfg: &TaskClientConfig, found: bool, u: f64) -> ClientAction {
        self.assert_waits("a lookup answer");
        if found { self.on_handle(cfg, u) } else { self.answer(TaskAnswer::TimedOut) }
    }

    /// A poll's answer or a stream's update: the task's current state.
    pub fn on_state(&mut self, cfg: &TaskClientConfig, state: TaskState, u: f64) -> ClientAction {
        self.assert_waits("a task state");
        self.failures = 0;
        match state {
            TaskState::Succeeded | TaskState::Failed | TaskState::Canceled | TaskState::Rejected => {
                self.answer(TaskAnswer::Ended(state))
            }
            TaskState::Waiting(WaitFor::Input | WaitFor::Auth) => match cfg.on_input_required {
                OnInputRequired::GiveUp => {
                    self.phase = ClientPhase::Interrupted;
                    ClientAction::Answer(TaskAnswer::Ended(state))
                }
                OnInputRequired::Wait => {
                    self.phase = ClientPhase::AwaitingInput;
                    ClientAction::AskUser
                }
            },
            TaskState::Pending | TaskState::Running => match self.phase {
                ClientPhase::Polling => ClientAction::RequestAfter(TaskCall::Get, self.poll_wait(cfg, u)),
                ClientPhase::Subscribing | ClientPhase::Subscribed => {
                    self.phase = ClientPhase::Subscribed;
                    ClientAction::Wait
                }
                // The answer's reply showed the task back at work: follow it as after the handle.
                ClientPhase::AwaitingInput => self.on_handle(cfg, u),
                ClientPhase::Creating
                | ClientPhase::Finding
                | ClientPhase::Interrupted
                | ClientPhase::CancelRequested
                | ClientPhase::CancelChecking
                | ClientPhase::Detached
                | ClientPhase::Done => unreachable!("assert_waits let only tracking phases through"),
            },
        }
    }

    /// A get or subscription answered TaskNotFound (the task was deleted): the client cannot
    /// learn its fate and tells the step so.
    pub fn on_not_found(&mut self) -> ClientAction {
        self.assert_waits("a TaskNotFound");
        self.answer(TaskAnswer::Lost)
    }

    /// The subscription was refused because the task had ended (A2A UnsupportedOperationError):
    /// the client reads the task with a get at once.
    pub fn on_subscribe_refused(&mut self) -> ClientAction {
        self.assert_waits("a refused subscription");
        debug_assert_eq!(self.phase, ClientPhase::Subscribing, "only a subscription is refused so");
        self.failures = 0;
        self.phase = ClientPhase::Polling;
        ClientAction::Request(TaskCall::Get)
    }

    /// The answer was acknowledged with an empty result (MCP 2026-07-28's tasks/update): the
    /// reply says nothing of the task, so the client follows it again as after its handle.
    pub fn on_answer_acknowledged(&mut self, cfg: &TaskClientConfig, u: f64) -> ClientAction {
        self.assert_waits("an acknowledged answer");
        debug_assert_eq!(self.phase, ClientPhase::AwaitingInput, "only an answer is acknowledged so");
        self.on_handle(cfg, u)
    }

    /// The answer the client sent was refused because the task had ended (A2A
    /// UnsupportedOperationError): the client reads the task with a get at once.
    pub fn on_answer_refused(&mut self) -> ClientAction {
        self.assert_waits("a refused answer");
        debug_assert_eq!(self.phase, ClientPhase::AwaitingInput, "only an answer is refused so");
        self.failures = 0;
        self.phase = ClientPhase::Polling;
        ClientAction::Request(TaskCall::Get)
    }

    /// A poll, subscription or lookup failed (refused, or timed out): try again after a pause,
    /// no shorter than the refusal's `retry_after_us` when the client honours it. A Retry-After
    /// longer than the pause is a floor the client's jitter spreads above, as above an honoured
    /// poll interval: waited exactly, it would bring every client refused in the same second
    /// back in the same second, jitter or not.
    pub fn on_request_failed(
        &mut self,
        cfg: &TaskClientConfig,
        u: f64,
        retry_after_us: Option<Micros>,
    ) -> ClientAction {
        self.assert_waits("a failed request");
        self.failures = self.failures.saturating_add(1);
        let call = match self.phase {
            ClientPhase::Polling => TaskCall::Get,
            ClientPhase::Subscribing | ClientPhase::Subscribed => {
                self.phase = ClientPhase::Subscribing;
                TaskCall::Subscribe
            }
            ClientPhase::Finding => TaskCall::Find,
            ClientPhase::AwaitingInput => TaskCall::Answer,
            ClientPhase::Creating
            | ClientPhase::Interrupted
            | ClientPhase::CancelRequested
            | ClientPhase::CancelChecking
            | ClientPhase::Detached
            | ClientPhase::Done => unreachable!("create failures and cancels have their own inputs"),
        };
        let wait = self.retry_wait(cfg, u);
        let cap = cfg.retry_after_max_us.unwrap_or(Micros::MAX);
        let floor = retry_after_us.filter(|_| cfg.honor_retry_after).map_or(0, |r| r.min(cap));
        let pause = if floor > wait { jittered_above(floor, cfg.jitter, u) } else { wait };
        ClientAction::RequestAfter(call, pause)
    }

    /// The stream broke (an outage closed the connection); the task goes on regardless.
    pub fn on_stream_broken(&mut self, cfg: &TaskClientConfig, u: f64) -> ClientAction {
        debug_assert_eq!(self.phase, ClientPhase::Subscribed, "only an open stream breaks");
        self.on_request_failed(cfg, u, None)
    }

    /// The caller stopped waiting (its timeout, its run's end, its deadline). Returns the
    /// cancel to send, if any.
    pub fn abandon(&mut self, cfg: &TaskClientConfig) -> ClientAction {
        debug_assert!(
            self.waits() || self.phase == ClientPhase::Interrupted,
            "an abandon reached a client in {:?}",
            self.phase
        );
        if cfg.cancel_on_abandon && self.has_handle {
            self.phase = ClientPhase::CancelRequested;
            ClientAction::Request(TaskCall::Cancel)
        } else {
            self.phase = ClientPhase::Detached;
            ClientAction::Wait
        }
    }

    /// The cancel was answered: with the task (its state as the cancel left it), with a bare
    /// acknowledgement (nothing learned), or with an error. An error that says the task had
    /// ended (A2A TaskNotCancelableError, MCP -32602) is followed by a get to learn how.
    pub fn on_cancel_answered(&mut self, answer: CancelAnswer) -> CancelStep {
        debug_assert_eq!(self.phase, ClientPhase::CancelRequested, "a cancel answer needs a cancel");
        let seen = match answer {
            CancelAnswer::Task(state) => CancelObserved::of(state),
            CancelAnswer::Error(ProtocolError::TaskNotCancelable) => {
                self.phase = ClientPhase::CancelChecking;
                return CancelStep::Check(TaskCall::Get);
            }
            CancelAnswer::Acknowledged
            | CancelAnswer::Error(ProtocolError::TaskNotFound | ProtocolError::UnsupportedOperation) => {
                CancelObserved::Unknown
            }
        };
        self.phase = ClientPhase::Done;
        CancelStep::Observed(seen)
    }

    /// The get after a refused cancel answered with the task's state (None: it failed).
    pub fn on_cancel_checked(&mut self, state: Option<TaskState>) -> CancelObserved {
        debug_assert_eq!(self.phase, ClientPhase::CancelChecking, "a check needs a refused cancel");
        self.phase = ClientPhase::Done;
        state.map_or(CancelObserved::Unknown, CancelObserved::of)
    }

    /// The cancel request itself failed: the task's fate is unknown, so it is an orphan.
    pub fn on_cancel_failed(&mut self) -> CancelObserved {
        debug_assert_eq!(self.phase, ClientPhase::CancelRequested, "a cancel answer needs a cancel");
        self.phase = ClientPhase::Done;
        CancelObserved::Unknown
    }

    fn answer(&mut self, answer: TaskAnswer) -> ClientAction {
        self.phase = ClientPhase::Done;
        ClientAction::Answer(answer)
    }

    fn assert_waits(&self, what: &str) {
        debug_assert!(self.waits(), "{what} reached a client in {:?}", self.phase);
    }

    /// The wait before the next poll: the client's own interval, backed off by
    /// `poll_multiplier` for each poll already made, up to `poll_max_interval_us`. When the
    /// server advertises an interval and the client honours it, the larger of the two is a
    /// floor: the jitter adds to it instead of taking from it, so a poll never comes sooner
    /// than the server asked. Otherwise the client's own, jittered.
    fn poll_wait(&mut self, cfg: &TaskClientConfig, u: f64) -> Micros {
        let growth = cfg.poll_multiplier.powi(self.polls.min(1024) as i32);
        let cap = cfg.poll_max_interval_us.map_or(f64::INFINITY, |c| c as f64);
        let own = (cfg.poll_interval_us as f64 * growth).min(cap).min(Micros::MAX as f64 / 4.0) as Micros;
        self.polls = self.polls.saturating_add(1);
        match self.server_poll_us {
            Some(server) if cfg.honor_poll_interval => jittered_above(server.max(own), cfg.jitter, u),
            Some(_) | None => jittered(own, cfg.jitter, u),
        }
    }

    fn retry_wait(&self, cfg: &TaskClientConfig, u: f64) -> Micros {
        let growth = cfg.retry_multiplier.powi(self.failures.saturating_sub(1).min(64) as i32);
        let base = (cfg.retry_interval_us as f64 * growth).min(cfg.retry_max_interval_us as f64);
        jittered(base as Micros, cfg.jitter, u)
    }
}

/// `wait` with `jitter` applied, given a uniform draw `u` in [0, 1). At least 1 µs, so a
/// request is never remade in the instant it failed.
pub fn jittered(wait: Micros, jitter: Jitter, u: f64) -> Micros {
    debug_assert!((0.0..1.0).contains(&u), "a unit draw is in [0, 1)");
    let w = wait as f64;
    let value = match jitter {
        Jitter::None => w,
        Jitter::Full => u * w,
        Jitter::Equal => w / 2.0 + u * w / 2.0,
    };
    (value as Micros).max(1)
}

/// `wait` with `jitter` applied upwards: `wait` plus what `jittered` would take from it, so
/// never less than `wait` (full: in (d, 2d], equal: in (d, 1.5d]).
pub fn jittered_above(wait: Micros, jitter: Jitter, u: f64) -> Micros {
    wait.saturating_add(wait - jittered(wait, jitter, u).min(wait))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poller() -> TaskClientConfig {
        TaskClientConfig::default()
    }

    #[test]
    fn a_send_timeout_is_never_a_resend_when_the_client_finds() {
        let cfg = poller();
        let (mut c, first) = TaskClient::new(None, true);
        assert_eq!(first, ClientAction::Request(TaskCall::Create));
        assert_eq!(c.on_create_timed_out(&cfg), ClientAction::Request(TaskCall::Find));
        assert_eq!(c.phase, ClientPhase::Finding);
        // Found: tracked by polls at the client's interval, no second create.
        assert_eq!(c.on_found(&cfg, true, 0.5), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
        assert!(c.has_handle);
    }

    #[test]
    fn a_blocking_send_answers_the_step_with_the_end_and_makes_no_request_more() {
        let cfg = poller();
        assert!(!cfg.return_immediately, "A2A's SendMessage blocks by default");
        let (mut c, _) = TaskClient::new(None, true);
        assert_eq!(
            c.on_created(&cfg, TaskState::Succeeded, 0.0),
            ClientAction::Answer(TaskAnswer::Ended(TaskState::Succeeded))
        );
        assert!(c.has_handle && !c.waits());
        let (mut c, _) = TaskClient::new(None, true);
        let waiting = TaskState::Waiting(WaitFor::Input);
        assert_eq!(c.on_created(&cfg, waiting, 0.0), ClientAction::Answer(TaskAnswer::Ended(waiting)));
        assert_eq!(c.abandon(&cfg), ClientAction::Request(TaskCall::Cancel), "it has the handle to cancel");
        // Answered at once with the task as made: followed as before.
        let (mut c, _) = TaskClient::new(None, true);
        assert_eq!(c.on_created(&cfg, TaskState::Pending, 0.0), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
    }

    #[test]
    fn a_resending_client_reports_the_timeout_and_a_lost_task_is_not_found() {
        let resend = TaskClientConfig { on_send_timeout: OnSendTimeout::Resend, ..poller() };
        let (mut c, _) = TaskClient::new(None, true);
        assert_eq!(c.on_create_timed_out(&resend), ClientAction::Answer(TaskAnswer::TimedOut));
        let (mut c, _) = TaskClient::new(None, true);
        c.on_create_timed_out(&poller());
        assert_eq!(c.on_found(&poller(), false, 0.1), ClientAction::Answer(TaskAnswer::TimedOut));
        assert!(!c.waits());
    }

    #[test]
    fn the_server_interval_is_honoured_unless_shorter_than_the_clients_and_only_when_asked() {
        let (mut c, _) = TaskClient::new(Some(3_000_000), true);
        assert_eq!(c.on_handle(&poller(), 0.0), ClientAction::RequestAfter(TaskCall::Get, 3_000_000));
        let eager = TaskClientConfig { honor_poll_interval: false, ..poller() };
        let (mut c, _) = TaskClient::new(Some(3_000_000), true);
        assert_eq!(c.on_handle(&eager, 0.0), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
        let (mut c, _) = TaskClient::new(Some(200_000), true);
        assert_eq!(c.on_handle(&poller(), 0.0), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
    }

    #[test]
    fn polling_goes_on_while_the_task_works_and_answers_at_its_end() {
        let cfg = poller();
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        assert_eq!(c.on_state(&cfg, TaskState::Running, 0.0), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
        assert_eq!(
            c.on_state(&cfg, TaskState::Succeeded, 0.0),
            ClientAction::Answer(TaskAnswer::Ended(TaskState::Succeeded))
        );
        assert_eq!(c.phase, ClientPhase::Done);
    }

    #[test]
    fn input_required_is_answered_not_waited_on() {
        let cfg = poller();
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        let waiting = TaskState::Waiting(WaitFor::Input);
        assert_eq!(c.on_state(&cfg, waiting, 0.0), ClientAction::Answer(TaskAnswer::Ended(waiting)));
        assert!(!c.waits(), "the step has its answer");
        assert_eq!(c.abandon(&cfg), ClientAction::Request(TaskCall::Cancel), "and the task is let go of");
    }

    #[test]
    fn a_client_that_waits_for_input_asks_the_user_and_follows_the_task_again_after_the_answer() {
        let cfg = TaskClientConfig { on_input_required: OnInputRequired::Wait, ..poller() };
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        assert_eq!(c.on_state(&cfg, TaskState::Waiting(WaitFor::Input), 0.0), ClientAction::AskUser);
        assert_eq!(c.phase, ClientPhase::AwaitingInput);
        assert!(c.waits(), "the step still waits, its timeout running");
        // The answer failed: sent again after the retry pause.
        assert_eq!(c.on_request_failed(&cfg, 0.0, None), ClientAction::RequestAfter(TaskCall::Answer, 1_000_000));
        // Its reply shows the task back at work: polled again.
        assert_eq!(c.on_state(&cfg, TaskState::Running, 0.0), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
        assert_eq!(c.phase, ClientPhase::Polling);
        // A2A refused it (the task had ended): a get follows.
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        c.on_state(&cfg, TaskState::Waiting(WaitFor::Auth), 0.0);
        assert_eq!(c.on_answer_refused(), ClientAction::Request(TaskCall::Get));
        // The step stops waiting meanwhile: the task is cancelled.
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        c.on_state(&cfg, TaskState::Waiting(WaitFor::Input), 0.0);
        assert_eq!(c.abandon(&cfg), ClientAction::Request(TaskCall::Cancel));
    }

    #[test]
    fn failed_requests_back_off_geometrically_to_the_cap() {
        let cfg = TaskClientConfig {
            retry_interval_us: 1_000,
            retry_multiplier: 2.0,
            retry_max_interval_us: 5_000,
            ..poller()
        };
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        let waits: Vec<_> = (0..5)
            .map(|_| match c.on_request_failed(&cfg, 0.0, None) {
                ClientAction::RequestAfter(TaskCall::Get, w) => w,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(waits, [1_000, 2_000, 4_000, 5_000, 5_000]);
        // A success resets the count.
        c.on_state(&cfg, TaskState::Running, 0.0);
        assert_eq!(c.on_request_failed(&cfg, 0.0, None), ClientAction::RequestAfter(TaskCall::Get, 1_000));
    }

    #[test]
    fn polls_back_off_while_the_task_works_as_long_running_operations_clients_do() {
        // Google's LRO client: 5 s, x1.5, capped at 45 s.
        let lro = TaskClientConfig {
            poll_interval_us: 5_000_000,
            poll_multiplier: 1.5,
            poll_max_interval_us: Some(45_000_000),
            ..poller()
        };
        let (mut c, _) = TaskClient::new(None, true);
        let mut waits = vec![c.on_handle(&lro, 0.0)];
        for _ in 0..7 {
            waits.push(c.on_state(&lro, TaskState::Running, 0.0));
        }
        let waits: Vec<Micros> = waits
            .into_iter()
            .map(|a| match a {
                ClientAction::RequestAfter(TaskCall::Get, w) => w / 1000,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(waits, [5_000, 7_500, 11_250, 16_875, 25_312, 37_968, 45_000, 45_000]);
        // A failed poll does not move the backoff; the server's interval stays a floor.
        let (mut c, _) = TaskClient::new(Some(9_000_000), true);
        assert_eq!(c.on_handle(&lro, 0.0), ClientAction::RequestAfter(TaskCall::Get, 9_000_000));
        c.on_request_failed(&lro, 0.0, None);
        assert_eq!(c.on_state(&lro, TaskState::Running, 0.0), ClientAction::RequestAfter(TaskCall::Get, 9_000_000));
        assert_eq!(c.on_state(&lro, TaskState::Running, 0.0), ClientAction::RequestAfter(TaskCall::Get, 11_250_000));
        let bad = TaskClientConfig { poll_multiplier: 0.5, ..poller() };
        assert_eq!(bad.check().unwrap_err().0, "poll_multiplier");
        let bad = TaskClientConfig { poll_max_interval_us: Some(10), ..poller() };
        assert_eq!(bad.check().unwrap_err().0, "poll_max_interval_ms");
    }

    #[test]
    fn a_retry_after_is_a_floor_on_the_retry_pause_when_honoured() {
        let cfg = poller();
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        assert_eq!(
            c.on_request_failed(&cfg, 0.0, Some(7_000_000)),
            ClientAction::RequestAfter(TaskCall::Get, 7_000_000)
        );
        assert_eq!(c.on_request_failed(&cfg, 0.0, Some(10)), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
        let deaf = TaskClientConfig { honor_retry_after: false, ..cfg };
        assert_eq!(
            c.on_request_failed(&deaf, 0.0, Some(7_000_000)),
            ClientAction::RequestAfter(TaskCall::Get, 1_000_000)
        );
        let capped = TaskClientConfig { retry_after_max_us: Some(5_000_000), ..cfg };
        assert_eq!(
            c.on_request_failed(&capped, 0.0, Some(7_000_000)),
            ClientAction::RequestAfter(TaskCall::Get, 5_000_000)
        );
        // Jitter spreads above the floor (full: in (d, 2d]), never below it.
        let full = TaskClientConfig { jitter: Jitter::Full, ..cfg };
        assert_eq!(
            c.on_request_failed(&full, 0.5, Some(8_000_000)),
            ClientAction::RequestAfter(TaskCall::Get, 12_000_000)
        );
        let sub = TaskClientConfig { observe: Observe::Subscribe, ..cfg };
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&sub, 0.0);
        assert_eq!(
            c.on_request_failed(&sub, 0.0, Some(7_000_000)),
            ClientAction::RequestAfter(TaskCall::Subscribe, 7_000_000)
        );
    }

    #[test]
    fn a_push_client_polls_as_its_fallback_and_only_a2a_pushes() {
        let cfg = TaskClientConfig { observe: Observe::Push, poll_interval_us: 30_000_000, ..poller() };
        let (mut c, _) = TaskClient::for_protocol(None, TaskProtocol::A2a);
        assert!(c.pushed_to(&cfg) && !c.pushed_to(&poller()));
        assert_eq!(c.on_handle(&cfg, 0.0), ClientAction::RequestAfter(TaskCall::Get, 30_000_000));
        for protocol in [TaskProtocol::Mcp20251125, TaskProtocol::Mcp20260728] {
            let (c, _) = TaskClient::for_protocol(None, protocol);
            assert!(!c.pushed_to(&cfg), "{protocol:?}");
        }
    }

    #[test]
    fn a_subscriber_polls_where_the_protocol_has_no_stream() {
        let cfg = TaskClientConfig { observe: Observe::Subscribe, ..poller() };
        let (mut c, _) = TaskClient::new(None, false);
        assert_eq!(c.on_handle(&cfg, 0.0), ClientAction::RequestAfter(TaskCall::Get, 1_000_000));
    }

    #[test]
    fn an_mcp_client_cannot_find_a_lost_task_and_reports_the_timeout() {
        let cfg = poller();
        assert_eq!(cfg.on_send_timeout, OnSendTimeout::Find);
        let (mut a2a, _) = TaskClient::for_protocol(None, TaskProtocol::A2a);
        assert_eq!(a2a.on_create_timed_out(&cfg), ClientAction::Request(TaskCall::Find));
        for protocol in [TaskProtocol::Mcp20251125, TaskProtocol::Mcp20260728] {
            let (mut mcp, _) = TaskClient::for_protocol(None, protocol);
            assert_eq!(mcp.on_create_timed_out(&cfg), ClientAction::Answer(TaskAnswer::TimedOut), "{protocol:?}");
        }
    }

    #[test]
    fn a_subscription_refused_for_an_ended_task_is_followed_by_a_get() {
        let cfg = TaskClientConfig { observe: Observe::Subscribe, ..poller() };
        let (mut c, _) = TaskClient::new(None, true);
        assert_eq!(c.on_handle(&cfg, 0.0), ClientAction::Request(TaskCall::Subscribe));
        assert_eq!(c.on_subscribe_refused(), ClientAction::Request(TaskCall::Get));
        assert_eq!(c.phase, ClientPhase::Polling);
        assert_eq!(
            c.on_state(&cfg, TaskState::Succeeded, 0.0),
            ClientAction::Answer(TaskAnswer::Ended(TaskState::Succeeded))
        );
    }

    #[test]
    fn a_broken_stream_is_resubscribed_after_the_retry_pause() {
        let cfg = TaskClientConfig { observe: Observe::Subscribe, ..poller() };
        let (mut c, _) = TaskClient::new(None, true);
        assert_eq!(c.on_handle(&cfg, 0.0), ClientAction::Request(TaskCall::Subscribe));
        assert_eq!(c.on_state(&cfg, TaskState::Running, 0.0), ClientAction::Wait);
        assert_eq!(c.phase, ClientPhase::Subscribed);
        assert_eq!(c.on_stream_broken(&cfg, 0.0), ClientAction::RequestAfter(TaskCall::Subscribe, 1_000_000));
        assert_eq!(c.phase, ClientPhase::Subscribing);
    }

    #[test]
    fn a_cancel_refused_for_an_ended_task_is_checked_with_a_get_and_an_acknowledgement_says_nothing() {
        let cfg = poller();
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        c.abandon(&cfg);
        let refused = CancelAnswer::Error(ProtocolError::TaskNotCancelable);
        assert_eq!(c.on_cancel_answered(refused), CancelStep::Check(TaskCall::Get));
        assert_eq!(c.phase, ClientPhase::CancelChecking);
        assert!(!c.waits());
        assert_eq!(c.on_cancel_checked(Some(TaskState::Succeeded)), CancelObserved::Completed);
        assert_eq!(c.phase, ClientPhase::Done);
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        c.abandon(&cfg);
        c.on_cancel_answered(refused);
        assert_eq!(c.on_cancel_checked(None), CancelObserved::Unknown, "the get failed");
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        c.abandon(&cfg);
        assert_eq!(c.on_cancel_answered(CancelAnswer::Acknowledged), CancelStep::Observed(CancelObserved::Unknown));
    }

    #[test]
    fn a_failed_cancel_request_leaves_the_fate_unknown_and_the_task_on_the_orphan_queue() {
        let cfg = poller();
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        c.abandon(&cfg);
        let seen = c.on_cancel_failed();
        assert_eq!(seen, CancelObserved::Unknown);
        assert!(seen.goes_on_orphan_queue());
        assert!(CancelObserved::StillRunning.goes_on_orphan_queue());
        for known in [CancelObserved::Canceled, CancelObserved::Completed, CancelObserved::Failed] {
            assert!(!known.goes_on_orphan_queue(), "{known:?}");
        }
    }

    #[test]
    fn abandon_requests_a_cancel_only_with_a_handle_and_the_policy_and_observes_its_outcome() {
        let cfg = poller();
        let (mut c, _) = TaskClient::new(None, true);
        assert_eq!(c.abandon(&cfg), ClientAction::Wait, "no handle: nothing to cancel");
        assert_eq!(c.phase, ClientPhase::Detached);
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&cfg, 0.0);
        assert_eq!(c.abandon(&cfg), ClientAction::Request(TaskCall::Cancel));
        assert_eq!(c.phase, ClientPhase::CancelRequested);
        assert_eq!(
            c.on_cancel_answered(CancelAnswer::Task(TaskState::Running)),
            CancelStep::Observed(CancelObserved::StillRunning)
        );
        let quiet = TaskClientConfig { cancel_on_abandon: false, ..cfg };
        let (mut c, _) = TaskClient::new(None, true);
        c.on_handle(&quiet, 0.0);
        assert_eq!(c.abandon(&quiet), ClientAction::Wait);
    }

    #[test]
    fn the_cancel_outcome_maps_every_state_to_the_essays_four_branches() {
        assert_eq!(CancelObserved::of(TaskState::Canceled), CancelObserved::Canceled);
        assert_eq!(CancelObserved::of(TaskState::Succeeded), CancelObserved::Completed);
        assert_eq!(CancelObserved::of(TaskState::Rejected), CancelObserved::Failed);
        assert_eq!(CancelObserved::of(TaskState::Waiting(WaitFor::Auth)), CancelObserved::StillRunning);
    }

    #[test]
    fn jitter_keeps_its_range() {
        for i in 0..100 {
            let u = f64::from(i) / 100.0;
            assert_eq!(jittered(1000, Jitter::None, u), 1000);
            assert!(jittered(1000, Jitter::Full, u) <= 1000);
            assert!((500..=1000).contains(&jittered(1000, Jitter::Equal, u)));
        }
        assert_eq!(jittered(1000, Jitter::Full, 0.0), 1, "never zero");
    }

    #[test]
    fn an_honoured_server_interval_is_a_floor_that_jitter_spreads_above() {
        for jitter in Jitter::ALL {
            let cfg = TaskClientConfig { jitter, ..poller() };
            for i in 0..100 {
                let u = f64::from(i) / 100.0;
                let (mut c, _) = TaskClient::new(Some(2_000_000), true);
                let ClientAction::RequestAfter(TaskCall::Get, wait) = c.on_handle(&cfg, u) else { panic!() };
                let top = match jitter {
                    Jitter::None => 2_000_000,
                    Jitter::Full => 4_000_000,
                    Jitter::Equal => 3_000_000,
                };
                assert!((2_000_000..=top).contains(&wait), "{jitter:?} {u}: {wait}");
            }
        }
        assert_eq!(jittered_above(1000, Jitter::Full, 0.25), 1750);
        assert_eq!(jittered_above(1000, Jitter::Equal, 0.5), 1250);
        // Without an advertised interval (or not honouring it) the client's own is jittered down.
        let full = TaskClientConfig { jitter: Jitter::Full, ..poller() };
        let (mut c, _) = TaskClient::new(None, true);
        assert_eq!(c.on_handle(&full, 0.25), ClientAction::RequestAfter(TaskCall::Get, 250_000));
        let eager = TaskClientConfig { honor_poll_interval: false, ..full };
        let (mut c, _) = TaskClient::new(Some(2_000_000), true);
        assert_eq!(c.on_handle(&eager, 0.25), ClientAction::RequestAfter(TaskCall::Get, 250_000));
    }
}
