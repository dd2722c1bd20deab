//! The public names of task states and calls, per protocol (ANCHORS.md section 8), apart from
//! the normalised states the runtime reasons with. Each mapping is total: every normalised
//! state has a name in each protocol, and where a protocol lacks a state the nearest one it has
//! is used and listed as a departure in docs/references.md.

use super::lifecycle::{TaskState, WaitFor};

crate::named_enum! {
    /// Which specification a task dependency speaks.
    pub enum TaskProtocol {
        A2a => "a2a",
        Mcp => "mcp",
    }
}

/// The calls a client makes about a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskCall {
    /// Creates the task (A2A SendMessage, MCP tools/call answered with a task).
    Create,
    /// Reads its state (A2A GetTask, MCP tasks/get).
    Get,
    /// Finds a task by the client's message id when the handle was lost (A2A ListTasks).
    Find,
    /// Opens a stream of its updates (A2A SubscribeToTask; MCP has no subscription to a task,
    /// so an MCP client polls).
    Subscribe,
    /// Asks it to stop (A2A CancelTask, MCP tasks/cancel).
    Cancel,
}

impl TaskProtocol {
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
            // error, no task): the nearest is `failed`.
            TaskProtocol::Mcp => match state {
                TaskState::Pending | TaskState::Running => "working",
                TaskState::Waiting(WaitFor::Input | WaitFor::Auth) => "input_required",
                TaskState::Succeeded => "completed",
                TaskState::Failed | TaskState::Rejected => "failed",
                TaskState::Canceled => "cancelled",
            },
        }
    }

    /// The call's method name on the wire.
    pub const fn call_name(self, call: TaskCall) -> &'static str {
        match self {
            TaskProtocol::A2a => match call {
                TaskCall::Create => "SendMessage",
                TaskCall::Get => "GetTask",
                TaskCall::Find => "ListTasks",
                TaskCall::Subscribe => "SubscribeToTask",
                TaskCall::Cancel => "CancelTask",
            },
            TaskProtocol::Mcp => match call {
                TaskCall::Create => "tools/call",
                TaskCall::Get | TaskCall::Subscribe => "tasks/get",
                TaskCall::Find => "tasks/list",
                TaskCall::Cancel => "tasks/cancel",
            },
        }
    }

    /// Whether the protocol can stream a task's updates (MCP clients poll).
    pub const fn can_subscribe(self) -> bool {
        match self {
            TaskProtocol::A2a => true,
            TaskProtocol::Mcp => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::task::lifecycle::TaskState;

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
            assert!(mcp.contains(&TaskProtocol::Mcp.state_name(state)), "{state:?}");
        }
    }

    #[test]
    fn terminal_states_keep_terminal_names() {
        for state in ALL.into_iter().filter(|s| s.is_terminal()) {
            assert!(!matches!(TaskProtocol::Mcp.state_name(state), "working" | "input_required"));
            assert!(!matches!(TaskProtocol::A2a.state_name(state), "TASK_STATE_WORKING" | "TASK_STATE_SUBMITTED"));
        }
    }
}
