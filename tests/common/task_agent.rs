//! The one-agent task scenario tests/task_specs.rs and tests/task_interactions.rs vary.

/// One agent: creates at `agent` (8 servers), work at `agent_runner` (exponential work of mean
/// `work_ms`, enough workers that nobody waits), one step per run at 2 runs a second for
/// 2000 s (100 s of warm-up); `task` is the inside of the task table after the runner,
/// `extra` is appended (faults), `policy` is `[policy.p]`'s body.
pub fn scenario(task: &str, work_ms: f64, extra: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 2000
warmup_s = 100
seed = 5
replications = 8

[[dependency]]
name = "agent"
kind = "a2a_agent"
servers = 8
service_time = {{ dist = "exponential", mean_ms = 20 }}
status_lookup_time = {{ dist = "exponential", mean_ms = 5 }}
task = {{ runner = "agent_runner"{task} }}

[[dependency]]
name = "agent_runner"
servers = 2000
service_time = {{ dist = "exponential", mean_ms = {work_ms} }}

[[workflow]]
name = "research"
arrivals = {{ rate_per_s = 2 }}
deadline_ms = 3600000

  [[workflow.step]]
  id = "delegate"
  dependency = "agent"
{extra}
[policy.p]
{policy}
"#
    )
}
