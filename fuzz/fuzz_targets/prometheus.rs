//! calibrate --prometheus on any bytes as a Prometheus text file: the histograms read, then
//! given to a traced dependency and compiled into a scenario, in memory.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::prometheus_text(data);
});
