//! A trailing window of counters kept as a fixed ring of time slices, the shape of Finagle's
//! `WindowedAdder` and of Envoy admission control's one-second history. Slices are aligned to
//! multiples of the slice length in virtual time (Finagle re-anchors at each expiry instead), so
//! which events still count depends only on their times, never on when someone looked.
//!
//! An event recorded in slice `i` counts until the slice `i + slices` begins: the window spans
//! between `(slices - 1)` and `slices` slice lengths, as in both sources.

use crate::sim::Micros;

/// `LANES` counters per slice (requests and accepts, say) with their running totals.
#[derive(Debug, Clone)]
pub(super) struct SliceRing<const LANES: usize> {
    slots: Vec<[i64; LANES]>,
    totals: [i64; LANES],
    slice_us: Micros,
    /// Absolute index (time / slice_us) of the newest slice.
    head: u64,
}

impl<const LANES: usize> SliceRing<LANES> {
    /// The only allocation: `slices` slots. Zero arguments are raised to one so that no input
    /// can make the ring divide by zero or index an empty slot list.
    pub(super) fn new(slice_us: Micros, slices: usize) -> Self {
        SliceRing { slots: vec![[0; LANES]; slices.max(1)], totals: [0; LANES], slice_us: slice_us.max(1), head: 0 }
    }

    pub(super) fn add(&mut self, now: Micros, lane: usize, amount: i64) {
        self.advance(now);
        let at = self.position(self.head);
        // Wrapping keeps `totals` equal to the sum of the slots whatever the counts; real
        // counts stay far below 2^63, so it never actually wraps.
        self.slots[at][lane] = self.slots[at][lane].wrapping_add(amount);
        self.totals[lane] = self.totals[lane].wrapping_add(amount);
        debug_assert!(self.slots.len() > 1_024 || self.sums_match(), "the totals are the sums of the slices");
    }

    /// Debug check: each lane's running total equals the sum of its slices.
    fn sums_match(&self) -> bool {
        (0..LANES)
            .all(|lane| self.slots.iter().fold(0i64, |sum, slot| sum.wrapping_add(slot[lane])) == self.totals[lane])
    }

    pub(super) fn total(&mut self, now: Micros, lane: usize) -> i64 {
        self.advance(now);
        self.totals[lane]
    }

    /// Moves the head to `now`'s slice, clearing the slices that fall out on the way. A `now`
    /// earlier than the head (which the engine never produces) is treated as the head itself.
    fn advance(&mut self, now: Micros) {
        let target = now / self.slice_us;
        if target <= self.head {
            return;
        }
        let steps = (target - self.head).min(self.slots.len() as u64);
        for step in 1..=steps {
            let at = self.position(self.head + step);
            self.expire(at);
        }
        self.head = target;
    }

    fn expire(&mut self, at: usize) {
        for lane in 0..LANES {
            self.totals[lane] = self.totals[lane].wrapping_sub(self.slots[at][lane]);
        }
        self.slots[at] = [0; LANES];
    }

    fn position(&self, index: u64) -> usize {
        (index % self.slots.len() as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_live_for_as_many_slices_as_the_ring_has() {
        let mut ring = SliceRing::<1>::new(1_000, 10);
        ring.add(500, 0, 3);
        ring.add(9_999, 0, 4);
        assert_eq!(ring.total(9_999, 0), 7);
        assert_eq!(ring.total(10_000, 0), 4, "slice 0 expires when slice 10 begins");
        assert_eq!(ring.total(18_999, 0), 4);
        assert_eq!(ring.total(19_000, 0), 0, "slice 9 expires when slice 19 begins");
    }

    #[test]
    fn a_long_silence_clears_everything_and_earlier_times_land_in_the_head() {
        let mut ring = SliceRing::<2>::new(1_000, 4);
        ring.add(0, 0, 5);
        ring.add(0, 1, 2);
        assert_eq!(ring.total(1_000_000_000, 0), 0);
        assert_eq!(ring.total(1_000_000_000, 1), 0);
        ring.add(5, 1, 1);
        assert_eq!(ring.total(1_000_000_000, 1), 1);
    }

    #[test]
    fn degenerate_sizes_do_not_panic() {
        let mut ring = SliceRing::<1>::new(0, 0);
        ring.add(0, 0, 1);
        ring.add(u64::MAX, 0, -1);
        assert_eq!(ring.total(u64::MAX, 0), -1);
    }
}
