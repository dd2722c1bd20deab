//! The future-event list. Events are ordered by (time, insertion sequence): two events at the
//! same microsecond fire in the order they were scheduled, never in heap order.

use super::time::{self, Micros};
use super::timers::Timers;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::marker::PhantomData;

/// `Tag` only makes each user's heap a type of its own (see [`EventQueue`]).
struct Entry<E, Tag> {
    time: Micros,
    seq: u64,
    event: E,
    tag: PhantomData<Tag>,
}

impl<E, Tag> PartialEq for Entry<E, Tag> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E, Tag> Eq for Entry<E, Tag> {}
impl<E, Tag> Entry<E, Tag> {
    /// Fires strictly before `other`: the heap's order (no two entries share a sequence).
    #[inline(always)]
    fn fires_before(&self, other: &Self) -> bool {
        time::fires_before(self.time, self.seq, other.time, other.seq)
    }
}
// Reversed so that BinaryHeap (a max-heap) pops the earliest (time, seq) first. The heap's
// sift compares with `<=`; spelled out here instead of through `partial_cmp`'s
// `Option<Ordering>`, which cost 6 instructions a comparison (13 % of the heap's pop).
impl<E, Tag> PartialOrd for Entry<E, Tag> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
    #[inline(always)]
    fn lt(&self, other: &Self) -> bool {
        other.fires_before(self)
    }
    #[inline(always)]
    fn le(&self, other: &Self) -> bool {
        !self.fires_before(other)
    }
    #[inline(always)]
    fn gt(&self, other: &Self) -> bool {
        self.fires_before(other)
    }
    #[inline(always)]
    fn ge(&self, other: &Self) -> bool {
        !other.fires_before(self)
    }
}
impl<E, Tag> Ord for Entry<E, Tag> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// `Tag` is any type that tells one simulation loop's queue from another's: the engine passes
/// its tracer type, so the traced and the untraced loops each get their own instance of the
/// heap's `pop`. With one shared instance, called from two loops, LLVM stopped inlining it
/// into the untraced loop (2.4 % more instructions on M/M/c).
///
/// Events that may be called off before they fire (a caller's timeout) are kept apart, in
/// [`Timers`], and leave when cancelled; both share one sequence, so the merged order is the
/// order one heap would give.
pub struct EventQueue<E, Tag = ()> {
    heap: BinaryHeap<Entry<E, Tag>>,
    timers: Timers<E>,
    next_seq: u64,
    now: Micros,
}

impl<E: Copy, Tag> Default for EventQueue<E, Tag> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy, Tag> EventQueue<E, Tag> {
    pub fn new() -> Self {
        Self { heap: BinaryHeap::with_capacity(1024), timers: Timers::new(), next_seq: 0, now: 0 }
    }

    /// The time of the event most recently popped.
    pub fn now(&self) -> Micros {
        self.now
    }

    /// Schedules `event` at `time`. Scheduling in the past is a logic error; it is clamped to
    /// `now` so that virtual time never runs backwards.
    pub fn schedule(&mut self, time: Micros, event: E) {
        let (time, seq) = self.stamp(time);
        self.heap.push(Entry { time, seq, event, tag: PhantomData });
    }

    /// The firing time (never before now: virtual time does not run backwards) and the next
    /// insertion sequence, which events and timers share.
    #[inline]
    fn stamp(&mut self, time: Micros) -> (Micros, u64) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let seq = self.next_seq;
        self.next_seq += 1;
        (time.max(self.now), seq)
    }

    /// Schedules `event` at `time` as the timer of `key` (at most one per key; a pending one
    /// is replaced), to fire unless [`EventQueue::cancel_timer`] calls it off first.
    pub fn schedule_timer(&mut self, time: Micros, key: u32, event: E) {
        let (time, seq) = self.stamp(time);
        self.timers.insert(time, seq, key, event);
    }

    /// Calls off the timer of `key`, if one is pending.
    #[inline]
    pub fn cancel_timer(&mut self, key: u32) {
        self.timers.cancel(key);
    }

    pub fn pop(&mut self) -> Option<(Micros, E)> {
        let timer_first = match (self.timers.first(), self.heap.peek()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some((time, seq)), Some(e)) => time::fires_before(time, seq, e.time, e.seq),
        };
        let (time, event) = if timer_first {
            self.timers.pop()?
        } else {
            let entry = self.heap.pop()?;
            (entry.time, entry.event)
        };
        self.now = time;
        Some((time, event))
    }

    #[cfg(test)]
    fn peek_time(&self) -> Option<Micros> {
        let event = self.heap.peek().map(|e| e.time);
        match (event, self.timers.first()) {
            (Some(e), Some((t, _))) => Some(e.min(t)),
            (e, t) => e.or(t.map(|(t, _)| t)),
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.timers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.timers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q: EventQueue<_> = EventQueue::new();
        for i in 0..100u32 {
            q.schedule(5, i);
        }
        q.schedule(1, 1000);
        assert_eq!(q.pop(), Some((1, 1000)));
        for i in 0..100u32 {
            assert_eq!(q.pop(), Some((5, i)));
        }
        assert!(q.pop().is_none());
    }

    #[test]
    fn timers_merge_with_events_in_time_then_insertion_order_and_cancelled_ones_never_fire() {
        let mut q: EventQueue<&str> = EventQueue::new();
        q.schedule(10, "event 10 first");
        q.schedule_timer(10, 7, "timer 10 second");
        q.schedule(10, "event 10 third");
        q.schedule_timer(5, 8, "timer 5");
        q.schedule_timer(7, 9, "cancelled");
        q.schedule_timer(20, 7, "timer of key 7 replaced");
        q.schedule_timer(10, 7, "timer 10 fourth");
        q.cancel_timer(9);
        q.cancel_timer(1234); // never set: nothing happens
        assert_eq!(q.len(), 4);
        assert_eq!(q.peek_time(), Some(5));
        let order: Vec<&str> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["timer 5", "event 10 first", "event 10 third", "timer 10 fourth"]);
        assert!(q.is_empty());
    }

    #[test]
    fn time_order_wins_over_insertion_order() {
        let mut q: EventQueue<_> = EventQueue::new();
        q.schedule(30, 'c');
        q.schedule(10, 'a');
        q.schedule(20, 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c']);
        assert_eq!(q.now(), 30);
    }

    #[test]
    fn the_spelled_out_comparisons_agree_with_cmp() {
        // The heap's push and pop read only `<=` today; `<`, `>`, `>=`, `==` and `partial_cmp`
        // must still agree with `cmp` (PartialOrd's contract), or a heap operation that reads
        // them (`BinaryHeap::from`, `retain` and `append` sift down with `>=` and `<`) would
        // break the (time, seq) order. Each entry is also compared with itself.
        let entry = |time, seq| Entry::<(), ()> { time, seq, event: (), tag: PhantomData };
        let entries = [entry(1, 4), entry(1, 5), entry(2, 0), entry(2, 3), entry(0, 9)];
        for a in &entries {
            for b in &entries {
                let o = a.cmp(b);
                let label = format!("({}, {}) vs ({}, {})", a.time, a.seq, b.time, b.seq);
                assert_eq!(o, (b.time, b.seq).cmp(&(a.time, a.seq)), "{label}: reversed");
                assert_eq!(a.partial_cmp(b), Some(o), "{label}");
                assert_eq!(a < b, o == Ordering::Less, "{label}: <");
                assert_eq!(a <= b, o != Ordering::Greater, "{label}: <=");
                assert_eq!(a > b, o == Ordering::Greater, "{label}: >");
                assert_eq!(a >= b, o != Ordering::Less, "{label}: >=");
                assert_eq!(a == b, o == Ordering::Equal, "{label}: ==");
            }
        }
    }
}
