fn main() {
    std::process::exit(faultline::cli::main());
}
