//! Token-shaped model calls (docs/metrics.md section 2.16): tokens by type in the
//! OpenTelemetry GenAI vocabulary (`gen_ai.client.token.usage` by `gen_ai.token.type`), calls
//! cut at their maximum output (finish reason `length`), requests refused for their context
//! window or for a quota they can never pass, and what the calls cost in money. Present when
//! some dependency has a `[dependency.tokens]` table.

use super::MetricMap;
use crate::sim::us_to_ms;
use hdrhistogram::Histogram;

/// One thing about a token-shaped call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TokenObservation {
    /// The provider started serving a call. `first_chunk_us` is how long after the attempt
    /// was sent its first token comes, `operation_us` its last (queueing included; both
    /// saturate at about 71 minutes).
    Served { dependency: u16, truncated: bool, input: u32, output: u32, first_chunk_us: u32, operation_us: u32 },
    /// What the served call costs in money (a separate observation keeps each one small).
    Billed { dependency: u16, money: f64 },
    /// Refused as invalid: the input is larger than the model's context window.
    ContextWindowExceeded,
    /// Refused as invalid: the call needs more tokens than a quota bucket ever holds.
    LargerThanQuota,
    /// A streaming caller gave up: the first token had not come by its first_token_timeout_ms.
    FirstTokenTimedOut,
}

#[derive(Debug, Clone)]
pub struct TokenStats {
    /// Time to first chunk of served calls, in microseconds (3 significant figures).
    first_chunk_us: Histogram<u64>,
    first_chunk_sum_us: f64,
    /// Send to last token of served calls (OpenTelemetry's gen_ai.client.operation.duration).
    operation_us: Histogram<u64>,
    operation_sum_us: f64,
    input: u64,
    output: u64,
    calls: u64,
    truncated: u64,
    money: f64,
    context_window_exceeded: u64,
    larger_than_quota: u64,
    first_token_timeouts: u64,
    /// (input, output, money) per dependency.
    by_dependency: Vec<(u64, u64, f64)>,
}

impl TokenStats {
    pub fn new(dependencies: usize) -> TokenStats {
        TokenStats {
            first_chunk_us: Histogram::new_with_bounds(1, 100_000_000_000, 3)
                .expect("static histogram bounds are valid"),
            first_chunk_sum_us: 0.0,
            operation_us: Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("static histogram bounds are valid"),
            operation_sum_us: 0.0,
            input: 0,
            output: 0,
            calls: 0,
            truncated: 0,
            money: 0.0,
            context_window_exceeded: 0,
            larger_than_quota: 0,
            first_token_timeouts: 0,
            by_dependency: vec![(0, 0, 0.0); dependencies],
        }
    }

    pub fn observe(&mut self, o: TokenObservation) {
        match o {
            TokenObservation::Billed { dependency, money } => {
                self.money += money;
                self.by_dependency[dependency as usize].2 += money;
            }
            TokenObservation::Served { dependency, truncated, input, output, first_chunk_us, operation_us } => {
                self.first_chunk_us.saturating_record(u64::from(first_chunk_us.max(1)));
                self.first_chunk_sum_us += f64::from(first_chunk_us);
                self.operation_us.saturating_record(u64::from(operation_us.max(1)));
                self.operation_sum_us += f64::from(operation_us);
                self.input += u64::from(input);
                self.output += u64::from(output);
                self.calls += 1;
                self.truncated += u64::from(truncated);
                let d = &mut self.by_dependency[dependency as usize];
                d.0 += u64::from(input);
                d.1 += u64::from(output);
            }
            TokenObservation::ContextWindowExceeded => self.context_window_exceeded += 1,
            TokenObservation::LargerThanQuota => self.larger_than_quota += 1,
            TokenObservation::FirstTokenTimedOut => self.first_token_timeouts += 1,
        }
    }

    /// Money spent, for the cost per success.
    pub fn money(&self) -> f64 {
        self.money
    }

    /// `token_dependencies` lists the dependencies with a token shape, by index.
    /// `successes` are the measured root runs that succeeded (for the cost per success).
    pub fn put(&self, dependencies: &[String], token_dependencies: &[usize], successes: f64, m: &mut MetricMap) {
        m.insert("gen_ai.client.token.usage.input_total".into(), self.input as f64);
        m.insert("gen_ai.client.token.usage.output_total".into(), self.output as f64);
        m.insert("gen_ai.client.calls_served_total".into(), self.calls as f64);
        m.insert("gen_ai.response.finish_reasons.length_total".into(), self.truncated as f64);
        let calls = self.calls as f64;
        let quantile =
            |q: f64| if self.calls > 0 { us_to_ms(self.first_chunk_us.value_at_quantile(q)) } else { f64::NAN };
        let mean = if self.calls > 0 { self.first_chunk_sum_us / calls / 1e3 } else { f64::NAN };
        m.insert("gen_ai.client.time_to_first_chunk_ms.mean".into(), mean);
        m.insert("gen_ai.client.time_to_first_chunk_ms.p50".into(), quantile(0.50));
        m.insert("gen_ai.client.time_to_first_chunk_ms.p95".into(), quantile(0.95));
        let operation =
            |q: f64| if self.calls > 0 { us_to_ms(self.operation_us.value_at_quantile(q)) } else { f64::NAN };
        let operation_mean = if self.calls > 0 { self.operation_sum_us / calls / 1e3 } else { f64::NAN };
        m.insert("gen_ai.client.operation.duration_ms.mean".into(), operation_mean);
        m.insert("gen_ai.client.operation.duration_ms.p50".into(), operation(0.50));
        m.insert("gen_ai.client.operation.duration_ms.p95".into(), operation(0.95));
        m.insert("context_window_exceeded_total".into(), self.context_window_exceeded as f64);
        m.insert("token_quota_too_large_total".into(), self.larger_than_quota as f64);
        m.insert("first_token_timeout_total".into(), self.first_token_timeouts as f64);
        m.insert("cost_money_total".into(), self.money);
        m.insert("cost_money_per_success".into(), if successes > 0.0 { self.money / successes } else { f64::NAN });
        for &d in token_dependencies {
            let (input, output, money) = self.by_dependency[d];
            let name = &dependencies[d];
            m.insert(format!("dependency.{name}.input_tokens_total"), input as f64);
            m.insert(format!("dependency.{name}.output_tokens_total"), output as f64);
            m.insert(format!("dependency.{name}.cost_money_total"), money);
        }
    }
}
