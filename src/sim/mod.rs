//! Kernel: integer virtual time, an event queue with a total order, seeded random streams.
//! Knows nothing about agents, dependencies or policies.

pub mod queue;
pub mod rng;
pub mod time;
pub mod timers;

pub use queue::EventQueue;
pub use rng::{KeyedStream, SequentialStream, StreamKey, StreamPart, stable_name_id};
pub use time::{Micros, ms_to_us, round_u64, s_to_us, us_as_f64, us_to_ms, us_to_s};
