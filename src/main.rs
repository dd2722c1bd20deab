use std::sync::atomic::Ordering;

/// Rust's runtime reopens a closed standard output on /dev/null before `main`, after which
/// writes succeed silently; this runs first (from .init_array) and tells the CLI, which then
/// exits 1 as it does for any output it cannot deliver.
#[used]
#[unsafe(link_section = ".init_array")]
static CHECK_STDOUT_AT_START: extern "C" fn() = check_stdout_at_start;

extern "C" fn check_stdout_at_start() {
    // SAFETY: fcntl(F_GETFD) only reads the descriptor table.
    if unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1 {
        faultline::cli::STDOUT_CLOSED_AT_START.store(true, Ordering::Relaxed);
    }
}

fn main() {
    std::process::exit(faultline::cli::main());
}
