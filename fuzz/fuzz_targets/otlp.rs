//! calibrate on any bytes as an OTLP/JSON trace file: reading, inference, fits, the scenario
//! made and its compilation, in memory.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::otlp(data);
});
