//! Hedged requests (Polly's hedging strategy, gRPC's hedging policy; docs/references.md
//! section 6): after `delay_us` without an answer, a read step sends one more attempt to the same
//! dependency, up to `max_hedged_attempts` beyond the attempt. The run machine arms and fires the
//! timer; this module owns the configuration, its compilation and the rule for what may hedge.

use crate::scenario::{Effect, FieldPath, ScenarioError, Source, duration_ms, error_at_path};
use crate::sim::Micros;

/// Polly / gRPC hedging (docs/references.md section 6), for read-only steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hedging {
    pub delay_us: Micros,
    /// Hedges beyond the first attempt (Polly's MaxHedgedAttempts).
    pub max_hedged_attempts: u32,
}

impl Hedging {
    /// Whether a step of this effect that has sent `hedges` hedges for its current attempt may
    /// arm another: reads only (a hedged write could commit twice), up to the maximum.
    pub fn may_hedge(&self, effect: Effect, hedges: u32) -> bool {
        effect == Effect::Read && hedges < self.max_hedged_attempts
    }
}

/// Polly's defaults: Delay 2 s, MaxHedgedAttempts 1 (1..=10).
pub fn compile_hedging(
    source: &Source,
    path: &FieldPath,
    h: Option<&crate::scenario::Hedging>,
) -> Result<Option<Hedging>, ScenarioError> {
    let Some(h) = h else { return Ok(None) };
    let delay_us = duration_ms(source, &path.key("delay_ms"), h.delay_ms.unwrap_or(2_000.0))?;
    let max_hedged_attempts = h.max_hedged_attempts.unwrap_or(1);
    if !(1..=10).contains(&max_hedged_attempts) {
        let message = format!("must be between 1 and 10 (Polly's range), got {max_hedged_attempts}");
        return Err(error_at_path(source, &path.key("max_hedged_attempts"), message));
    }
    Ok(Some(Hedging { delay_us, max_hedged_attempts }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_hedge_and_only_up_to_the_maximum() {
        let h = Hedging { delay_us: 1_000, max_hedged_attempts: 2 };
        assert!(h.may_hedge(Effect::Read, 0));
        assert!(h.may_hedge(Effect::Read, 1));
        assert!(!h.may_hedge(Effect::Read, 2));
        assert!(!h.may_hedge(Effect::Write, 0), "a hedged write could commit twice");
    }
}
