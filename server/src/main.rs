fn main() -> std::process::ExitCode {
    culint::cli::main()
}
