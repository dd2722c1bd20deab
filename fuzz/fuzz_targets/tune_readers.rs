//! The readers of what a tune leaves on disk: shard files (--merge-shards) and the checkpoint
//! (--resume), on any bytes.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::tune_readers(data);
});
