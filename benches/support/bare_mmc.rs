//! The bare event loop the engine is measured against (issue 33): an M/M/c queue on a
//! `std::collections::BinaryHeap`, with nothing but what the queue needs. Pop an event; an
//! arrival draws the next arrival and, when a server is free, a service time; a departure takes
//! the next waiting customer. Time is whole microseconds and ties are broken by a sequence
//! number, as in the engine; the draws are SplitMix64 uniforms turned into exponentials by
//! `-mean * ln(u)`, the engine's own formula. What it leaves out is what the engine is for:
//! runs, steps, attempts, timers, policies and the metrics.
// The bench reads the counts; tests/bench_capabilities.rs reads the mean wait as well.
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// What one bare run did: `served` customers (every arrival before `duration_us` is served:
/// the loop drains), `events` popped, and the mean wait in the queue over all of them.
pub struct BareRun {
    pub served: u64,
    pub events: u64,
    pub mean_wait_us: f64,
}

/// SplitMix64 (Steele, Lea and Flood), the mixer of the engine's keyed streams.
struct SplitMix64(u64);

impl SplitMix64 {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform in (0, 1): never 0, so its logarithm is finite.
    #[inline]
    fn open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// An exponential time with this mean, rounded to whole microseconds.
    #[inline]
    fn exponential_us(&mut self, mean_us: f64) -> u64 {
        (-mean_us * self.open01().ln() + 0.5) as i64 as u64
    }
}

const ARRIVAL: u8 = 0;
const DEPARTURE: u8 = 1;

/// Simulates M/M/`servers` with arrivals in [0, `duration_us`) and drains.
pub fn mmc(servers: u32, mean_service_us: f64, arrival_rate_per_s: f64, duration_us: u64, seed: u64) -> BareRun {
    let mut rng = SplitMix64(seed);
    let mean_gap_us = 1e6 / arrival_rate_per_s;
    // (time, sequence, kind): the sequence makes the order of equal times total.
    let mut heap: BinaryHeap<Reverse<(u64, u64, u8)>> = BinaryHeap::with_capacity(servers as usize + 2);
    let mut seq = 0u64;
    let first = rng.exponential_us(mean_gap_us);
    if first < duration_us {
        heap.push(Reverse((first, seq, ARRIVAL)));
    }
    let mut busy = 0u32;
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let (mut served, mut events, mut wait_sum_us) = (0u64, 0u64, 0u64);
    while let Some(Reverse((now, _, kind))) = heap.pop() {
        events += 1;
        if kind == ARRIVAL {
            let next = now + rng.exponential_us(mean_gap_us);
            if next < duration_us {
                seq += 1;
                heap.push(Reverse((next, seq, ARRIVAL)));
            }
            if busy < servers {
                busy += 1;
                seq += 1;
                heap.push(Reverse((now + rng.exponential_us(mean_service_us), seq, DEPARTURE)));
            } else {
                waiting.push_back(now);
            }
        } else {
            served += 1;
            if let Some(arrived) = waiting.pop_front() {
                wait_sum_us += now - arrived;
                seq += 1;
                heap.push(Reverse((now + rng.exponential_us(mean_service_us), seq, DEPARTURE)));
            } else {
                busy -= 1;
            }
        }
    }
    BareRun { served, events, mean_wait_us: wait_sum_us as f64 / served.max(1) as f64 }
}
