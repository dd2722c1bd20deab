//! The open-loop arrival process of one workflow: Poisson with a piecewise-linear rate
//! (piecewise-constant phases, or k6-style stages that ramp), sampled exactly by inverting the
//! integrated rate (no thinning, so one Exp(1) draw per arrival and the sequence is the same
//! under every policy).

use super::model::WorkloadModel;
use crate::sim::{Micros, SequentialStream};

pub struct ArrivalProcess {
    stream: SequentialStream,
    /// Exact time of the last arrival in microseconds; kept as a float so rounding to whole
    /// microseconds never accumulates.
    clock_us: f64,
    pub arrivals: u32,
}

impl ArrivalProcess {
    pub fn new(seed: u64, workload: &WorkloadModel) -> Self {
        ArrivalProcess { stream: SequentialStream::new(seed, workload.stream_id), clock_us: 0.0, arrivals: 0 }
    }

    /// The next arrival time, or None if the rate stays zero forever (or the workflow's load is
    /// a closed population, which has no phases).
    pub fn next(&mut self, workload: &WorkloadModel) -> Option<Micros> {
        let mut need = -self.stream.open01().ln(); // Exp(1) of integrated rate still to cover
        let mut t = self.clock_us;
        let mut phase_start = 0.0;
        for phase in &workload.phases {
            let end = phase.end_us as f64;
            let start = phase_start;
            phase_start = end;
            if t >= end {
                continue;
            }
            if phase.start_rate_per_s == phase.end_rate_per_s {
                // A constant rate: the arithmetic of the piecewise-constant process, unchanged.
                let rate_per_us = phase.start_rate_per_s / 1e6;
                if rate_per_us > 0.0 {
                    let candidate = t + need / rate_per_us;
                    if candidate < end {
                        return Some(self.arrive(candidate));
                    }
                    need -= rate_per_us * (end - t);
                }
            } else {
                // A linear ramp r(x) = r_t + k (x - t) from t: the mass up to the phase's end is
                // the trapezoid; inside it, solve r_t d + k d^2 / 2 = need for d.
                let k = (phase.end_rate_per_s - phase.start_rate_per_s) / 1e6 / (end - start);
                let r_t = phase.start_rate_per_s / 1e6 + k * (t - start);
                let r_end = phase.end_rate_per_s / 1e6;
                let mass = (r_t + r_end) / 2.0 * (end - t);
                if need < mass {
                    // The root without cancellation: d = 2 need / (r_t + sqrt(r_t^2 + 2 k need)).
                    let root = (r_t * r_t + 2.0 * k * need).max(0.0).sqrt();
                    // Rounding may put it a hair past the phase's end, where it belongs anyway.
                    return Some(self.arrive((t + 2.0 * need / (r_t + root)).min(end)));
                }
                need -= mass;
            }
            t = end;
        }
        None
    }

    fn arrive(&mut self, at_us: f64) -> Micros {
        self.clock_us = at_us;
        self.arrivals += 1;
        crate::sim::round_u64(at_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::model::RatePhaseModel;

    fn workload(phases: Vec<(Micros, f64)>) -> WorkloadModel {
        let phases = phases.into_iter().map(|(end, rate)| RatePhaseModel::constant(end, rate)).collect();
        WorkloadModel { name: "w".into(), stream_id: 9, phases, population: None, deadline_us: 1, resubmit: None }
    }

    #[test]
    fn constant_rate_gives_the_right_count() {
        // Poisson(10 000): standard deviation 100; allow 5 sigma.
        let w = workload(vec![(Micros::MAX, 10.0)]);
        let mut p = ArrivalProcess::new(1, &w);
        let mut n = 0;
        while p.next(&w).is_some_and(|t| t < 1_000_000_000) {
            n += 1;
        }
        assert!((n as f64 - 10_000.0).abs() < 500.0, "{n}");
    }

    #[test]
    fn profile_phases_change_the_rate() {
        // 0-100 s at 50/s, then 0 until 200 s, then 10/s.
        let w = workload(vec![(100_000_000, 50.0), (200_000_000, 0.0), (Micros::MAX, 10.0)]);
        let mut p = ArrivalProcess::new(2, &w);
        let mut counts = [0u32; 3];
        while let Some(t) = p.next(&w) {
            if t >= 300_000_000 {
                break;
            }
            counts[(t / 100_000_000) as usize] += 1;
        }
        assert!((counts[0] as f64 - 5_000.0).abs() < 5.0 * 5_000f64.sqrt(), "{counts:?}");
        assert_eq!(counts[1], 0);
        assert!((counts[2] as f64 - 1_000.0).abs() < 5.0 * 1_000f64.sqrt(), "{counts:?}");
    }

    #[test]
    fn zero_rate_forever_ends_the_process() {
        let w = workload(vec![(Micros::MAX, 0.0)]);
        assert_eq!(ArrivalProcess::new(1, &w).next(&w), None);
    }
}
