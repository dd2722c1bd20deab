//! Timers that may be cancelled before they fire: a binary min-heap on (time, seq) that knows
//! where each timer sits, so a cancelled one leaves the heap at once instead of firing stale,
//! beside a queue (the lane) for timers set in firing order.
//!
//! A caller's timeout is the case it is for. Every attempt with a timeout schedules one, and
//! most attempts end before it: in the incident under the naive policy a third of all events
//! were stale timeouts, each a pop from the shared event heap that made every other event's
//! pop deeper. Here a timeout is removed when its attempt ends, from a heap that holds only
//! the live ones.
//!
//! Most timeouts are `now + timeout_ms` with one `timeout_ms`, so each is set no earlier than
//! the one before it. Such a timer goes to the back of the lane, in O(1) instead of a heap's
//! climb, and a cancelled one is marked dead where it is (O(1) instead of a heap's repair) and
//! dropped when it reaches the front. Only a timer earlier than the lane's last (a deadline
//! clipped by propagation, a second timeout) goes to the heap. The earliest timer is the
//! earlier of the two fronts, so the firing order is exactly the one heap's.

use super::time::{self, Micros};
use std::collections::VecDeque;

/// No timer for this key (in `index_of`), or a dead timer in the lane (as its key).
const NONE: u32 = u32::MAX;
/// No timer for this key, in `place_of`.
const NOWHERE: u64 = u64::MAX;
/// Marks a place in the lane (its position counted from the lane's first timer ever); without
/// it a place is an index in the heap.
const IN_LANE: u64 = 1 << 63;

#[derive(Clone, Copy)]
struct Timer<E> {
    time: Micros,
    seq: u64,
    key: u32,
    event: E,
}

impl<E> Timer<E> {
    #[inline(always)]
    fn before(&self, other: &Self) -> bool {
        time::fires_before(self.time, self.seq, other.time, other.seq)
    }
}

/// At most one pending timer per key (a small integer, such as an arena index).
pub struct Timers<E> {
    /// Every timer fires no earlier than its parent, (i - 1) / 2.
    heap: Vec<Timer<E>>,
    /// Timers in firing order, dead ones (key [`NONE`]) among them but never at the front.
    lane: VecDeque<Timer<E>>,
    /// The position of `lane`'s front among every timer the lane ever held.
    lane_start: u64,
    /// Live timers in the lane.
    lane_live: usize,
    /// Per key, where its timer is ([`IN_LANE`] | position, or an index in `heap`), or
    /// [`NOWHERE`].
    place_of: Vec<u64>,
}

impl<E: Copy> Default for Timers<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Timers<E> {
    pub fn new() -> Self {
        Timers { heap: Vec::new(), lane: VecDeque::new(), lane_start: 0, lane_live: 0, place_of: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.lane_live
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The (time, seq) of the earliest timer.
    #[inline]
    pub fn first(&self) -> Option<(Micros, u64)> {
        self.earliest().map(|t| (t.time, t.seq))
    }

    #[inline]
    fn earliest(&self) -> Option<&Timer<E>> {
        match (self.heap.first(), self.lane.front()) {
            (Some(h), Some(l)) => Some(if h.before(l) { h } else { l }),
            (h, l) => h.or(l),
        }
    }

    /// Sets the timer of `key`; one already pending for it is replaced.
    pub fn insert(&mut self, time: Micros, seq: u64, key: u32, event: E) {
        self.cancel(key);
        let k = key as usize;
        if k >= self.place_of.len() {
            self.place_of.resize(k + 1, NOWHERE);
        }
        let timer = Timer { time, seq, key, event };
        if self.lane.back().is_none_or(|last| !timer.before(last)) {
            self.place_of[k] = IN_LANE | (self.lane_start + self.lane.len() as u64);
            self.lane.push_back(timer);
            self.lane_live += 1;
        } else {
            let hole = self.heap.len();
            self.heap.push(timer);
            self.rise(hole, timer);
        }
    }

    /// Removes the timer of `key`, if one is pending; true when there was one.
    #[inline]
    pub fn cancel(&mut self, key: u32) -> bool {
        match self.place_of.get(key as usize) {
            Some(&NOWHERE) | None => false,
            Some(&place) if place & IN_LANE != 0 => {
                self.kill_in_lane(key, place & !IN_LANE);
                true
            }
            Some(&place) => {
                self.remove_at(place as usize);
                true
            }
        }
    }

    /// Takes the earliest timer: its time and event.
    pub fn pop(&mut self) -> Option<(Micros, E)> {
        let from_heap = match (self.heap.first(), self.lane.front()) {
            (Some(h), Some(l)) => h.before(l),
            (h, _) => h.is_some(),
        };
        if from_heap {
            let first = self.heap[0];
            self.remove_at(0);
            Some((first.time, first.event))
        } else {
            let first = *self.lane.front()?;
            self.kill_in_lane(first.key, self.lane_start);
            Some((first.time, first.event))
        }
    }

    /// Marks the lane's timer of `key` at `position` dead, then drops dead timers from the
    /// front so that the front is live (or the lane empty).
    fn kill_in_lane(&mut self, key: u32, position: u64) {
        self.place_of[key as usize] = NOWHERE;
        let i = (position - self.lane_start) as usize;
        debug_assert_eq!(self.lane[i].key, key, "the lane's timer at a key's place is that key's");
        self.lane[i].key = NONE;
        self.lane_live -= 1;
        while self.lane.front().is_some_and(|t| t.key == NONE) {
            self.lane.pop_front();
            self.lane_start += 1;
        }
    }

    fn remove_at(&mut self, i: usize) {
        let removed = self.heap[i].key;
        self.place_of[removed as usize] = NOWHERE;
        let last = self.heap.pop().expect("index i is in the heap");
        if i == self.heap.len() {
            return; // the last one itself
        }
        if i > 0 && last.before(&self.heap[(i - 1) / 2]) {
            self.rise(i, last);
        } else {
            self.sink(i, last);
        }
    }

    fn place(&mut self, i: usize, timer: Timer<E>) {
        self.place_of[timer.key as usize] = i as u64;
        self.heap[i] = timer;
    }

    /// Puts `timer` in the hole at `hole` or above it, moving later parents down.
    fn rise(&mut self, mut hole: usize, timer: Timer<E>) {
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if !timer.before(&self.heap[parent]) {
                break;
            }
            self.place(hole, self.heap[parent]);
            hole = parent;
        }
        self.place(hole, timer);
    }

    /// Puts `timer` in the hole at `hole` or below it, moving earlier children up.
    fn sink(&mut self, mut hole: usize, timer: Timer<E>) {
        let len = self.heap.len();
        loop {
            let mut child = 2 * hole + 1;
            if child >= len {
                break;
            }
            if child + 1 < len && self.heap[child + 1].before(&self.heap[child]) {
                child += 1;
            }
            if !self.heap[child].before(&timer) {
                break;
            }
            self.place(hole, self.heap[child]);
            hole = child;
        }
        self.place(hole, timer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random inserts, cancels and pops against a plain list of what is pending; `offset` says
    /// how far after `now` each timer is set, from a draw in 0..40.
    fn check_against_a_list(offset: impl Fn(u64) -> u64) {
        let mut state = 0x853C_49E6_748F_EA9Bu64;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let mut timers: Timers<u64> = Timers::new();
        let mut pending: Vec<(Micros, u64, u32)> = Vec::new();
        let (mut seq, mut now) = (0u64, 0);
        for step in 0..100_000u64 {
            match next(10) {
                0..=4 => {
                    let key = next(600) as u32;
                    let time = now + offset(next(40));
                    pending.retain(|p| p.2 != key);
                    timers.insert(time, seq, key, seq);
                    pending.push((time, seq, key));
                    seq += 1;
                }
                5..=6 => {
                    let key = next(600) as u32;
                    let had = pending.iter().any(|p| p.2 == key);
                    pending.retain(|p| p.2 != key);
                    assert_eq!(timers.cancel(key), had, "step {step}");
                }
                _ => {
                    let expected = pending.iter().copied().min_by_key(|p| (p.0, p.1));
                    if let Some(e) = expected {
                        pending.retain(|p| p.2 != e.2);
                        now = e.0;
                    }
                    assert_eq!(timers.first(), expected.map(|e| (e.0, e.1)));
                    assert_eq!(timers.pop(), expected.map(|e| (e.0, e.1)), "step {step}");
                }
            }
            assert_eq!(timers.len(), pending.len());
        }
    }

    /// Timers anywhere in the next 40 us: about half go to the heap.
    #[test]
    fn pops_the_earliest_pending_timer_under_any_mix_of_inserts_and_cancels() {
        check_against_a_list(|draw| draw);
    }

    /// One timeout for every timer: all of them go to the lane, which must drop its dead ones
    /// and keep its places right as its front moves.
    #[test]
    fn timers_set_in_firing_order_pop_from_the_lane_in_that_order() {
        check_against_a_list(|_| 25);
    }

    /// A constant timeout, one timer in eight clipped earlier (a deadline under propagation):
    /// lane and heap both hold timers, and the earlier front fires first.
    #[test]
    fn a_clipped_timer_goes_to_the_heap_and_fires_before_the_lanes_later_ones() {
        check_against_a_list(|draw| if draw % 8 == 0 { draw / 8 } else { 25 });
        let mut timers: Timers<&str> = Timers::new();
        timers.insert(100, 0, 1, "lane, first");
        timers.insert(50, 1, 2, "heap: earlier than the lane's last");
        timers.insert(100, 2, 3, "lane: same time, later seq");
        assert_eq!((timers.heap.len(), timers.lane.len()), (1, 2));
        assert!(timers.cancel(1));
        assert_eq!(timers.lane.len(), 1, "the dead front is dropped");
        assert_eq!(timers.pop(), Some((50, "heap: earlier than the lane's last")));
        assert_eq!(timers.pop(), Some((100, "lane: same time, later seq")));
        assert!(timers.is_empty() && !timers.cancel(3));
    }
}
