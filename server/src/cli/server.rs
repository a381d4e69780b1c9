//! `culint server`: the language server over stdio.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::lsp;

#[derive(clap::Args)]
pub struct ServerArgs {
    /// Append the server's log to this file instead of stderr.
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
}

pub fn run(args: ServerArgs) -> ExitCode {
    if let Some(path) = &args.log_file
        && let Err(error) = lsp::log::to_file(path)
    {
        eprintln!("culint server: cannot open the log file {}: {error}", path.display());
        return ExitCode::from(super::EXIT_USAGE);
    }
    // Lints run on rayon's pool, other engine work on the blocking pool. Both are bounded by the
    // cores, so a burst of opened files queues instead of spawning hundreds of threads, each with
    // its own allocator arena. Stdin and stdout have threads of their own (see `lsp::stdio`).
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = match tokio::runtime::Builder::new_multi_thread().max_blocking_threads(cores).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("culint server: cannot start the async runtime: {error}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let ending = runtime.block_on(async { lsp::serve(std::io::stdin(), lsp::stdio::stdout()?).await });
    // Engine work still running on the blocking pool is not waited for: `exit` means now. The
    // thread reading stdin, blocked in a read that nothing can interrupt, ends with the process.
    runtime.shutdown_background();
    match ending {
        Ok(lsp::Ending::Orderly) => ExitCode::SUCCESS,
        // The protocol's exit code for `exit` without a preceding `shutdown`.
        Ok(lsp::Ending::Abrupt) => ExitCode::from(1),
        Err(error) => {
            eprintln!("culint server: cannot start its input and output threads: {error}");
            ExitCode::from(super::EXIT_USAGE)
        }
    }
}
