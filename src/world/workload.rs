//! The open-loop arrival process of one workflow: Poisson with a piecewise-constant rate,
//! sampled exactly by inverting the integrated rate (no thinning, so one Exp(1) draw per arrival
//! and the sequence is the same under every policy).

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

    /// The next arrival time, or None if the rate stays zero forever.
    pub fn next(&mut self, workload: &WorkloadModel) -> Option<Micros> {
        let mut need = -self.stream.open01().ln(); // Exp(1) of integrated rate still to cover
        let mut t = self.clock_us;
        for &(end_us, rate_per_s) in &workload.phases {
            let end = end_us as f64;
            if t >= end {
                continue;
            }
            let rate_per_us = rate_per_s / 1e6;
            if rate_per_us > 0.0 {
                let candidate = t + need / rate_per_us;
                if candidate < end {
                    self.clock_us = candidate;
                    self.arrivals += 1;
                    return Some(crate::sim::round_u64(candidate));
                }
                need -= rate_per_us * (end - t);
            }
            t = end;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(phases: Vec<(Micros, f64)>) -> WorkloadModel {
        WorkloadModel { name: "w".into(), stream_id: 9, phases, deadline_us: 1, resubmit: None }
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
