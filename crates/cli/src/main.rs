//! The `doctor` binary: everything is in the library's [`doctor::command`].

fn main() -> std::process::ExitCode {
    doctor::command::main()
}
