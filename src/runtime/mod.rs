//! The agent runtime under test: root runs over the workflow graph, the four shared budgets,
//! deadline propagation, retry decisions and write reconciliation. Policy logic lives in plain
//! functions and state machines here; the engine feeds them events.

pub mod admission;
pub mod attempt;
pub mod backoff;
pub mod budget;
pub mod cache_use;
pub mod command;
pub mod deadline;
pub mod decision;
pub mod degradation;
pub mod delegation;
pub mod failure_domain;
pub mod fan_out;
pub mod guard;
pub mod hedging;
pub mod mechanisms;
pub mod policy;
pub mod quorum;
pub mod quorum_step;
pub mod run;
pub mod sdk_client;
pub mod sdk_compile;
pub mod sdk_preset;
pub mod sdk_quota;
pub mod sdk_rate_limiter;
pub mod step;
pub mod step_policy;
pub mod task_client;
pub mod trace;
pub mod validator;
pub mod workflow;

pub use attempt::{AttemptResult, Purpose};
pub use backoff::{Backoff, BackoffKind, Jitter};
pub use budget::{BudgetLimits, RunBudget, Spend};
pub use command::{Command, Effects, Outbox};
pub use deadline::{AttemptTimeout, attempt_timeout, retry_fits};
pub use decision::{Decision, FailedAttempt, GiveUp, OnEffectUnknown, RetryRules, decide};
pub use policy::{PolicyModel, compile_policies};
pub use run::{RunContext, RunMachine};
pub use step_policy::{StepPolicy, StepRoutes};
pub use trace::{
    AttemptTrace, DrawRecorder, NoTrace, RunStart, RunSummary, RunTracer, SlotSink, StationExit, StepEnd, TraceCaller,
    TraceEvent, TraceSink, Tracer,
};
pub use workflow::{MAX_STEPS, StepModel, WorkflowModel, compile_workflows};
