//! The launcher alone, as `lode sandbox-exec` runs it (server/cli/src/main.rs), in a binary
//! holding nothing else: for timing the launcher's own work against another commit's.
fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|word| word == lode_sandbox::SANDBOX_EXEC)
    {
        let error = lode_sandbox::launcher_main(&args[2..]);
        eprintln!("lode sandbox: {error}");
        return std::process::ExitCode::from(lode_sandbox::LAUNCHER_FAILURE);
    }
    eprintln!("usage: launcher sandbox-exec PROFILE -- COMMAND");
    std::process::ExitCode::from(2)
}
