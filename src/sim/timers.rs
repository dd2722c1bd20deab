//! Timers that may be cancelled before they fire: a binary min-heap on (time, seq) that knows
//! where each timer sits, so a cancelled one leaves the heap at once instead of firing stale.
//!
//! A caller's timeout is the case it is for. Every attempt with a timeout schedules one, and
//! most attempts end before it: in the incident under the naive policy a third of all events
//! were stale timeouts, each a pop from the shared event heap that made every other event's
//! pop deeper. Here a timeout is removed when its attempt ends, from a heap that holds only
//! the live ones.

use super::time::Micros;

/// No timer for this key.
const NONE: u32 = u32::MAX;

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
        (self.time, self.seq) < (other.time, other.seq)
    }
}

/// At most one pending timer per key (a small integer, such as an arena index).
pub struct Timers<E> {
    /// Every timer fires no earlier than its parent, (i - 1) / 2.
    heap: Vec<Timer<E>>,
    /// Per key, the index of its timer in `heap`, or [`NONE`].
    index_of: Vec<u32>,
}

impl<E: Copy> Default for Timers<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Timers<E> {
    pub fn new() -> Self {
        Timers { heap: Vec::new(), index_of: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The (time, seq) of the earliest timer.
    #[inline]
    pub fn first(&self) -> Option<(Micros, u64)> {
        self.heap.first().map(|t| (t.time, t.seq))
    }

    /// Sets the timer of `key`; one already pending for it is replaced.
    pub fn insert(&mut self, time: Micros, seq: u64, key: u32, event: E) {
        self.cancel(key);
        let k = key as usize;
        if k >= self.index_of.len() {
            self.index_of.resize(k + 1, NONE);
        }
        let hole = self.heap.len();
        let timer = Timer { time, seq, key, event };
        self.heap.push(timer);
        self.rise(hole, timer);
    }

    /// Removes the timer of `key`, if one is pending; true when there was one.
    #[inline]
    pub fn cancel(&mut self, key: u32) -> bool {
        match self.index_of.get(key as usize) {
            Some(&i) if i != NONE => {
                self.remove_at(i as usize);
                true
            }
            _ => false,
        }
    }

    /// Takes the earliest timer: its time and event.
    pub fn pop(&mut self) -> Option<(Micros, E)> {
        let first = *self.heap.first()?;
        self.remove_at(0);
        Some((first.time, first.event))
    }

    fn remove_at(&mut self, i: usize) {
        let removed = self.heap[i].key;
        self.index_of[removed as usize] = NONE;
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
        self.index_of[timer.key as usize] = i as u32;
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

    /// Random inserts, cancels and pops against a plain list of what is pending.
    #[test]
    fn pops_the_earliest_pending_timer_under_any_mix_of_inserts_and_cancels() {
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
                    let time = now + next(40);
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
}
