//! Priority load shedding (docs/essay.md section 15) with Google's criticality levels
//! (docs/references.md section 5): as load rises, the least important traffic goes first, so the capacity left
//! serves what matters.
//!
//! The rule, a pure function of its inputs: a call of priority `p` carrying `load_units` L is
//! shed when
//!
//! ```text
//! utilization >= shed_at_utilization[p] - lowering   or   queue_ratio >= shed_at_queue_ratio[p] - lowering
//! lowering = max(0, L - 1) * load_unit_step
//! ```
//!
//! - Each threshold is where that priority starts being shed, inclusive, so shedding begins
//!   exactly at it. An infinite threshold means never, even against an infinite signal, which is
//!   how critical_plus is protected by default.
//! - `utilization` is in-flight over capacity; `queue_ratio` is queue length over queue
//!   capacity. The queue signal is off by default (infinite thresholds).
//! - Heavier calls (L above 1) are shed earlier because one of them costs what several light
//!   ones do; lighter calls are not favoured beyond their priority, so a cheap sheddable call
//!   never slips past the sheddable threshold. `load_unit_step` 0 (the default) turns this off.
//! - A NaN signal or load sheds nothing: a broken signal must not drop critical traffic.
//! - `check` insists thresholds never decrease with importance: shedding critical traffic while
//!   sheddable traffic still runs inverts the point of priorities.

use super::compile::Invalid;
use super::compile::{Compile, Scope, Stage};
use super::contract::{Ask, Guard, GuardConfig, Parting, Seat, Verdict};
use crate::runtime::command::Effects;
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::vocab::{Priority, Refusal};
use serde::{Deserialize, Serialize};

/// Indexed by `Priority::index()`: critical_plus, critical, sheddable_plus, sheddable.
pub const DEFAULT_SHED_AT_UTILIZATION: [f64; Priority::COUNT] = [f64::INFINITY, 0.98, 0.9, 0.8];
pub const QUEUE_SIGNAL_OFF: [f64; Priority::COUNT] = [f64::INFINITY; Priority::COUNT];

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadShedder {
    pub shed_at_utilization: [f64; Priority::COUNT],
    pub shed_at_queue_ratio: [f64; Priority::COUNT],
    /// Threshold lowering per load unit above 1.
    pub load_unit_step: f64,
}

impl Default for LoadShedder {
    fn default() -> Self {
        LoadShedder {
            shed_at_utilization: DEFAULT_SHED_AT_UTILIZATION,
            shed_at_queue_ratio: QUEUE_SIGNAL_OFF,
            load_unit_step: 0.0,
        }
    }
}

impl LoadShedder {
    /// True means shed the call.
    pub fn decide(&self, priority: Priority, utilization: f64, queue_ratio: f64, load_units: f64) -> bool {
        let lowering = self.lowering(load_units);
        let i = priority.index();
        crosses(utilization, self.shed_at_utilization[i], lowering)
            || crosses(queue_ratio, self.shed_at_queue_ratio[i], lowering)
    }

    pub fn check(&self) -> Result<(), Invalid> {
        check_thresholds("shed_at_utilization", &self.shed_at_utilization)?;
        check_thresholds("shed_at_queue_ratio", &self.shed_at_queue_ratio)?;
        if !(self.load_unit_step.is_finite() && self.load_unit_step >= 0.0) {
            return Err(Invalid::new(
                "load_unit_step",
                format!("load_unit_step ({}) must be a finite number, 0 or more", self.load_unit_step),
            ));
        }
        Ok(())
    }

    /// `f64::max` drops a NaN operand, so a NaN load lowers nothing.
    fn lowering(&self, load_units: f64) -> f64 {
        (load_units - 1.0).max(0.0) * self.load_unit_step
    }
}

/// An infinite threshold minus anything finite stays infinite and minus infinity is NaN; either
/// way no signal crosses it, which keeps "never" meaning never.
fn crosses(signal: f64, threshold: f64, lowering: f64) -> bool {
    threshold < f64::INFINITY && signal >= threshold - lowering
}

fn check_thresholds(field: &'static str, thresholds: &[f64; Priority::COUNT]) -> Result<(), Invalid> {
    for p in Priority::ALL {
        let t = thresholds[p.index()];
        if t.is_nan() || t < 0.0 {
            return Err(Invalid::new(field, format!("{field}.{p} ({t}) must be 0 or more (inf for never)")));
        }
    }
    // ALL runs from most to least important, so each pair is (more, less) important.
    for pair in Priority::ALL.windows(2) {
        let (more, less) = (pair[0], pair[1]);
        let (t_more, t_less) = (thresholds[more.index()], thresholds[less.index()]);
        if t_more < t_less {
            return Err(Invalid::new(
                field,
                format!(
                    "{field}.{more} ({t_more}) is below {field}.{less} ({t_less}): {more} traffic would be shed first"
                ),
            ));
        }
    }
    Ok(())
}

/// A shedder placed in front of one dependency, whose load it reads. Stateless: the spec is
/// its own live guard.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShedderSpec {
    pub shedder: LoadShedder,
    pub dependency: u16,
}

impl GuardConfig for ShedderSpec {
    type Live = ShedderSpec;

    fn build(&self) -> ShedderSpec {
        *self
    }
}

/// Control traffic keeps its capacity: recovery is never shed.
impl Guard for ShedderSpec {
    fn admit(&mut self, _now: Micros, ask: &Ask, _seat: Seat, _out: &mut impl Effects) -> Verdict {
        let info = ask.info;
        let (utilization, queue_ratio) = ask.loads.signal(usize::from(self.dependency));
        if !info.control && self.shedder.decide(info.priority, utilization, queue_ratio, info.load_units) {
            Verdict::Refuse(Refusal::Shed)
        } else {
            Verdict::Pass
        }
    }

    fn end(&mut self, _now: Micros, _parting: Parting, _out: &mut impl Effects) {}
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// A threshold per priority; absent ones keep their default.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct PriorityThresholds {
    #[serde(default)]
    pub critical_plus: Option<f64>,
    #[serde(default)]
    pub critical: Option<f64>,
    #[serde(default)]
    pub sheddable_plus: Option<f64>,
    #[serde(default)]
    pub sheddable: Option<f64>,
}

/// `[[policy.<name>.load_shedding]]` with `kind = "priority"` (the default): one shedder per
/// dependency it covers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct PriorityTable {
    #[serde(default)]
    pub kind: Option<String>,
    /// The dependency whose load it watches and whose calls it sheds; every one when absent.
    #[serde(default)]
    pub dependency: Option<String>,
    /// Utilization (busy over servers in force) from which each priority is shed.
    #[serde(default)]
    pub shed_at_utilization: Option<PriorityThresholds>,
    /// Queue length over queue capacity from which each priority is shed.
    #[serde(default)]
    pub shed_at_queue_ratio: Option<PriorityThresholds>,
    /// Thresholds fall by this much per load unit above 1: heavy calls are shed first.
    #[serde(default)]
    pub load_unit_step: Option<f64>,
}

crate::scenario::types::tables_only!(PriorityThresholds, PriorityTable);

/// A threshold per priority: the file's where given, the default elsewhere.
fn thresholds(t: Option<&PriorityThresholds>, default: [f64; Priority::COUNT]) -> [f64; Priority::COUNT] {
    let Some(t) = t else { return default };
    let mut out = default;
    for p in Priority::ALL {
        let given = match p {
            Priority::CriticalPlus => t.critical_plus,
            Priority::Critical => t.critical,
            Priority::SheddablePlus => t.sheddable_plus,
            Priority::Sheddable => t.sheddable,
        };
        if let Some(v) = given {
            out[p.index()] = v;
        }
    }
    out
}

pub fn compile<G: From<ShedderSpec>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: PriorityTable = read_table(cx.source, path, raw)?;
    let dependencies = cx.dependencies(&path.key("dependency"), &t.dependency)?;
    let d = LoadShedder::default();
    let shedder = LoadShedder {
        shed_at_utilization: thresholds(t.shed_at_utilization.as_ref(), d.shed_at_utilization),
        shed_at_queue_ratio: thresholds(t.shed_at_queue_ratio.as_ref(), d.shed_at_queue_ratio),
        load_unit_step: t.load_unit_step.unwrap_or(d.load_unit_step),
    };
    cx.check(path, shedder.check())?;
    for d in dependencies {
        cx.push(Stage::Shed, Scope::Dependency(d), ShedderSpec { shedder, dependency: d as u16 });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BELOW: f64 = 1e-9;

    #[test]
    fn each_priority_is_shed_exactly_from_its_threshold() {
        let s = LoadShedder::default();
        assert_eq!(s.check(), Ok(()));
        for p in [Priority::Critical, Priority::SheddablePlus, Priority::Sheddable] {
            let t = s.shed_at_utilization[p.index()];
            assert!(!s.decide(p, t - BELOW, 0.0, 1.0), "{p} below its threshold");
            assert!(s.decide(p, t, 0.0, 1.0), "{p} at its threshold");
            assert!(s.decide(p, t + 0.5, 0.0, 1.0), "{p} above");
        }
    }

    #[test]
    fn less_important_traffic_goes_first() {
        let s = LoadShedder::default();
        let shed: Vec<bool> = Priority::ALL.into_iter().map(|p| s.decide(p, 0.85, 0.0, 1.0)).collect();
        assert_eq!(shed, [false, false, false, true]);
        let shed: Vec<bool> = Priority::ALL.into_iter().map(|p| s.decide(p, 0.95, 0.0, 1.0)).collect();
        assert_eq!(shed, [false, false, true, true]);
    }

    #[test]
    fn critical_plus_is_never_shed_by_default() {
        let s = LoadShedder { load_unit_step: 0.5, ..LoadShedder::default() };
        for signal in [0.0, 1.0, 1e12, f64::INFINITY] {
            assert!(!s.decide(Priority::CriticalPlus, signal, signal, 1.0));
            assert!(!s.decide(Priority::CriticalPlus, signal, signal, f64::INFINITY), "even for infinite load");
        }
    }

    #[test]
    fn heavier_calls_are_shed_earlier_when_the_step_is_set() {
        let off = LoadShedder::default();
        assert!(!off.decide(Priority::Sheddable, 0.7, 0.0, 5.0), "no step, no lowering");
        let s = LoadShedder { load_unit_step: 0.05, ..LoadShedder::default() };
        assert!(!s.decide(Priority::Sheddable, 0.7, 0.0, 1.0));
        assert!(!s.decide(Priority::Sheddable, 0.7, 0.0, 2.0), "threshold 0.75");
        assert!(s.decide(Priority::Sheddable, 0.7, 0.0, 4.0), "threshold 0.65");
        assert!(!s.decide(Priority::Sheddable, 0.79, 0.0, 0.1), "light calls are not favoured");
        assert!(s.decide(Priority::Sheddable, 0.8, 0.0, 0.1));
    }

    #[test]
    fn the_queue_signal_sheds_when_set() {
        let off = LoadShedder::default();
        assert!(!off.decide(Priority::Sheddable, 0.0, 1.0, 1.0), "off by default");
        let s = LoadShedder { shed_at_queue_ratio: [f64::INFINITY, 0.9, 0.7, 0.5], ..LoadShedder::default() };
        assert_eq!(s.check(), Ok(()));
        assert!(!s.decide(Priority::Sheddable, 0.0, 0.5 - BELOW, 1.0));
        assert!(s.decide(Priority::Sheddable, 0.0, 0.5, 1.0));
        assert!(!s.decide(Priority::Critical, 0.0, 0.8, 1.0));
    }

    #[test]
    fn nan_inputs_shed_nothing() {
        let s = LoadShedder { load_unit_step: 0.1, ..LoadShedder::default() };
        assert!(!s.decide(Priority::Sheddable, f64::NAN, f64::NAN, 1.0));
        assert!(!s.decide(Priority::Sheddable, 0.79, 0.0, f64::NAN), "a NaN load lowers nothing");
    }

    #[test]
    fn check_refuses_shedding_critical_before_sheddable() {
        let s = LoadShedder { shed_at_utilization: [f64::INFINITY, 0.7, 0.9, 0.8], ..LoadShedder::default() };
        let e = s.check().unwrap_err();
        assert_eq!(e.field, "shed_at_utilization");
        let e = e.message;
        assert!(e.starts_with("shed_at_utilization.critical (0.7) is below shed_at_utilization.sheddable_plus"), "{e}");
        let q = LoadShedder { shed_at_queue_ratio: [0.5, 0.9, 0.9, 0.9], ..LoadShedder::default() };
        assert!(q.check().unwrap_err().message.starts_with("shed_at_queue_ratio.critical_plus"));
        let equal = LoadShedder { shed_at_utilization: [0.9; Priority::COUNT], ..LoadShedder::default() };
        assert_eq!(equal.check(), Ok(()), "equal thresholds shed together");
    }

    #[test]
    fn check_refuses_nan_negative_thresholds_and_a_bad_step() {
        let mut nan = LoadShedder::default();
        nan.shed_at_utilization[Priority::Sheddable.index()] = f64::NAN;
        assert!(nan.check().unwrap_err().message.starts_with("shed_at_utilization.sheddable"));
        let mut negative = LoadShedder::default();
        negative.shed_at_queue_ratio[Priority::Sheddable.index()] = -0.1;
        assert!(negative.check().unwrap_err().message.starts_with("shed_at_queue_ratio.sheddable"));
        for step in [-0.1, f64::NAN, f64::INFINITY] {
            let s = LoadShedder { load_unit_step: step, ..LoadShedder::default() };
            assert!(s.check().unwrap_err().message.starts_with("load_unit_step"));
        }
    }
}
