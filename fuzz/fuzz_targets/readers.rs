//! The readers of what a sweep leaves on disk: shard files (merge) and checkpoint points and
//! keys (resume), on any bytes.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::readers(data);
});
