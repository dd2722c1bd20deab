//! A remote task's life as the runtime reasons about it: the normalised states of essay
//! section 20 (`normalized_state: RUNNING`), one pure machine for A2A and MCP alike. The
//! protocols' own names live in [`super::protocol`]; a state is never recorded under a name its
//! protocol does not have.
//!
//! A terminal task never restarts (A2A 1.0: "a task in a terminal state cannot be restarted"):
//! every event after the end is refused, and the refusal says which state it met.

use std::fmt;

/// What an interrupted task waits for (A2A tells the two apart; MCP has only `input_required`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitFor {
    Input,
    Auth,
}

/// The normalised task state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Accepted, waiting for a worker.
    Pending,
    Running,
    /// Interrupted: no progress until the client answers.
    Waiting(WaitFor),
    Succeeded,
    Failed,
    Canceled,
    /// Refused before any work (no capacity, policy).
    Rejected,
}

impl TaskState {
    pub const fn is_terminal(self) -> bool {
        match self {
            TaskState::Succeeded | TaskState::Failed | TaskState::Canceled | TaskState::Rejected => true,
            TaskState::Pending | TaskState::Running | TaskState::Waiting(_) => false,
        }
    }

    /// Pending or running: neither ended nor interrupted (a blocking send still waits).
    pub const fn is_live_work(self) -> bool {
        match self {
            TaskState::Pending | TaskState::Running => true,
            TaskState::Waiting(_)
            | TaskState::Succeeded
            | TaskState::Failed
            | TaskState::Canceled
            | TaskState::Rejected => false,
        }
    }

    /// The name metrics and traces use for the normalised state.
    pub const fn name(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Running => "running",
            TaskState::Waiting(WaitFor::Input) => "waiting_input",
            TaskState::Waiting(WaitFor::Auth) => "waiting_auth",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
            TaskState::Rejected => "rejected",
        }
    }

    /// The non-terminal states, whose durations the metrics report, in a fixed order.
    pub const LIVE: [TaskState; 4] =
        [TaskState::Pending, TaskState::Running, TaskState::Waiting(WaitFor::Input), TaskState::Waiting(WaitFor::Auth)];

    /// Index into [`TaskState::LIVE`]; None for a terminal state.
    pub const fn live_index(self) -> Option<usize> {
        match self {
            TaskState::Pending => Some(0),
            TaskState::Running => Some(1),
            TaskState::Waiting(WaitFor::Input) => Some(2),
            TaskState::Waiting(WaitFor::Auth) => Some(3),
            TaskState::Succeeded | TaskState::Failed | TaskState::Canceled | TaskState::Rejected => None,
        }
    }
}

/// What can happen to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEvent {
    /// A worker takes it.
    Start,
    /// Refused while pending (the remote task queue is full).
    Reject,
    /// The work needs the client's input or authorisation.
    Interrupt(WaitFor),
    /// The client answered; the task goes back to work.
    Resume,
    Complete,
    /// The work failed, or the task outlived its ttl.
    Fail,
    /// A cancel took effect.
    Cancel,
}

/// An event the current state does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IllegalTransition {
    /// The task has ended; it never restarts.
    Terminal { state: TaskState, event: TaskEvent },
    /// Not from this state (e.g. Resume of a running task).
    NotFrom { state: TaskState, event: TaskEvent },
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IllegalTransition::Terminal { state, event } => {
                write!(f, "{event:?} on a task that has ended {}; a terminal task never restarts", state.name())
            }
            IllegalTransition::NotFrom { state, event } => write!(f, "{event:?} is not allowed from {}", state.name()),
        }
    }
}

/// The transition function: the state after `event`, or why it cannot happen.
pub fn next_state(state: TaskState, event: TaskEvent) -> Result<TaskState, IllegalTransition> {
    if state.is_terminal() {
        return Err(IllegalTransition::Terminal { state, event });
    }
    let to = match (state, event) {
        (TaskState::Pending, TaskEvent::Start) => TaskState::Running,
        (TaskState::Pending, TaskEvent::Reject) => TaskState::Rejected,
        // A2A implementations move to INPUT_REQUIRED / AUTH_REQUIRED from WORKING only.
        (TaskState::Running, TaskEvent::Interrupt(w)) => TaskState::Waiting(w),
        (TaskState::Waiting(_), TaskEvent::Resume) => TaskState::Running,
        (TaskState::Running, TaskEvent::Complete) => TaskState::Succeeded,
        (_, TaskEvent::Fail) => TaskState::Failed,
        (_, TaskEvent::Cancel) => TaskState::Canceled,
        (
            TaskState::Pending | TaskState::Running | TaskState::Waiting(_),
            TaskEvent::Start | TaskEvent::Reject | TaskEvent::Interrupt(_) | TaskEvent::Resume | TaskEvent::Complete,
        ) => return Err(IllegalTransition::NotFrom { state, event }),
        (
            TaskState::Succeeded | TaskState::Failed | TaskState::Canceled | TaskState::Rejected,
            TaskEvent::Start | TaskEvent::Reject | TaskEvent::Interrupt(_) | TaskEvent::Resume | TaskEvent::Complete,
        ) => unreachable!("terminal states returned above"),
    };
    Ok(to)
}

/// One task's state with the time it entered it, so time in each state can be summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifecycle {
    pub state: TaskState,
    pub since_us: u64,
}

impl Lifecycle {
    pub fn new(now_us: u64) -> Lifecycle {
        Lifecycle { state: TaskState::Pending, since_us: now_us }
    }

    /// Applies `event` at `now_us`; on success returns the state left and how long it lasted.
    pub fn apply(&mut self, now_us: u64, event: TaskEvent) -> Result<(TaskState, u64), IllegalTransition> {
        let to = next_state(self.state, event)?;
        debug_assert!(now_us >= self.since_us, "a task's clock never runs backwards");
        let left = (self.state, now_us.saturating_sub(self.since_us));
        self.state = to;
        self.since_us = now_us;
        Ok(left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_EVENTS: [TaskEvent; 8] = [
        TaskEvent::Start,
        TaskEvent::Reject,
        TaskEvent::Interrupt(WaitFor::Input),
        TaskEvent::Interrupt(WaitFor::Auth),
        TaskEvent::Resume,
        TaskEvent::Complete,
        TaskEvent::Fail,
        TaskEvent::Cancel,
    ];
    const TERMINAL: [TaskState; 4] =
        [TaskState::Succeeded, TaskState::Failed, TaskState::Canceled, TaskState::Rejected];

    #[test]
    fn the_happy_path_is_submitted_working_completed() {
        let mut t = Lifecycle::new(0);
        assert_eq!(t.apply(10, TaskEvent::Start), Ok((TaskState::Pending, 10)));
        assert_eq!(t.apply(110, TaskEvent::Complete), Ok((TaskState::Running, 100)));
        assert_eq!(t.state, TaskState::Succeeded);
    }

    #[test]
    fn an_interrupted_task_resumes_and_can_be_cancelled_while_waiting() {
        let mut t = Lifecycle::new(0);
        t.apply(1, TaskEvent::Start).unwrap();
        t.apply(2, TaskEvent::Interrupt(WaitFor::Input)).unwrap();
        assert_eq!(t.state, TaskState::Waiting(WaitFor::Input));
        t.apply(3, TaskEvent::Resume).unwrap();
        t.apply(4, TaskEvent::Interrupt(WaitFor::Auth)).unwrap();
        assert_eq!(t.apply(9, TaskEvent::Cancel), Ok((TaskState::Waiting(WaitFor::Auth), 5)));
        assert_eq!(t.state, TaskState::Canceled);
    }

    #[test]
    fn a_terminal_task_never_restarts() {
        for state in TERMINAL {
            for event in ALL_EVENTS {
                assert_eq!(next_state(state, event), Err(IllegalTransition::Terminal { state, event }));
            }
        }
    }

    #[test]
    fn only_a_pending_task_is_rejected_or_started_and_only_a_running_one_completes() {
        assert!(next_state(TaskState::Running, TaskEvent::Start).is_err());
        assert!(next_state(TaskState::Running, TaskEvent::Reject).is_err());
        assert!(next_state(TaskState::Pending, TaskEvent::Complete).is_err());
        assert!(next_state(TaskState::Waiting(WaitFor::Input), TaskEvent::Complete).is_err());
        assert!(next_state(TaskState::Running, TaskEvent::Resume).is_err());
        assert!(
            next_state(TaskState::Pending, TaskEvent::Interrupt(WaitFor::Input)).is_err(),
            "only work is interrupted"
        );
        assert_eq!(next_state(TaskState::Pending, TaskEvent::Reject), Ok(TaskState::Rejected));
    }

    #[test]
    fn cancel_and_fail_end_every_live_state() {
        for state in TaskState::LIVE {
            assert_eq!(next_state(state, TaskEvent::Cancel), Ok(TaskState::Canceled));
            assert_eq!(next_state(state, TaskEvent::Fail), Ok(TaskState::Failed));
        }
    }

    #[test]
    fn a_refused_event_leaves_the_task_as_it_was() {
        let mut t = Lifecycle::new(5);
        assert!(t.apply(6, TaskEvent::Complete).is_err());
        assert_eq!(t, Lifecycle { state: TaskState::Pending, since_us: 5 });
    }
}
