//! Scenario parsing, validation, overrides and a short run of one policy, on any bytes.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::scenario(data);
});
