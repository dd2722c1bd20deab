//! A closed population's figures (docs/metrics.md 2.12): users present over the measured
//! window, the think times they drew, the runs they gave up on and the users who left.

use super::MetricMap;
use crate::sim::{Micros, us_as_f64};

#[derive(Debug, Clone, Default)]
pub struct UserStats {
    active: u32,
    since_us: Micros,
    /// User-microseconds over the measured window.
    active_area: f64,
    /// The most users present at once in the measured window.
    max_active: u32,
    think_sum_us: f64,
    thinks: u64,
    pub abandoned: u64,
    pub left: u64,
}

impl UserStats {
    /// The population changed to `active` users at `now`.
    pub fn set_active(&mut self, now: Micros, window: (Micros, Micros), active: u32) {
        self.advance(now, window);
        self.active = active;
        if (window.0..window.1).contains(&now) {
            self.max_active = self.max_active.max(active);
        }
    }

    pub fn thought(&mut self, think_us: Micros) {
        self.think_sum_us += us_as_f64(think_us);
        self.thinks += 1;
    }

    fn advance(&mut self, now: Micros, window: (Micros, Micros)) {
        let start = self.since_us.max(window.0);
        let end = now.min(window.1);
        if end > start {
            // Users held through the window's start count from it on.
            if start == window.0 && self.since_us < window.0 {
                self.max_active = self.max_active.max(self.active);
            }
            self.active_area += us_as_f64(end - start) * f64::from(self.active);
        }
        self.since_us = now;
    }

    pub fn finish(&mut self, end_us: Micros, window: (Micros, Micros)) {
        self.advance(end_us, window);
    }

    pub fn put(&self, window: (Micros, Micros), m: &mut MetricMap) {
        let span = us_as_f64(window.1.saturating_sub(window.0));
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
        m.insert("users_active.mean".into(), ratio(self.active_area, span));
        m.insert("users_active.max".into(), f64::from(self.max_active));
        m.insert("think_time_s.mean".into(), ratio(self.think_sum_us / 1e6, self.thinks as f64));
        m.insert("abandoned_run_total".into(), self.abandoned as f64);
        m.insert("user_left_total".into(), self.left as f64);
    }
}
