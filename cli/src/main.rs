//! `netmirror`: a fast nmcli- and ip-style view of this host's network state.
//!
//! The binary parses its arguments ([`args`]), asks one library function for the data, and
//! renders it ([`render`]). It holds no logic of its own: the kernel cache is
//! `netmirror-platform`, the D-Bus cache `netmirror-client-cache`.

mod args;
mod batch;
mod bus;
mod failure;
mod heap;
mod kernel;
mod lazy_log;
mod monitor;
mod nexthop;
mod nm;
mod nm_actions;
mod nm_defaults;
mod nm_meta;
mod objects;
mod overview;
mod pipe;
mod progress;
mod render;
mod signals;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::args::{Cli, Command, RouteAction};
use crate::render::Printer;

/// Parses the command line. clap's command tree is left to the process's end instead of being
/// dropped: freeing it costs about as much as building it (a tenth of a short command's CPU).
fn parse() -> Result<Cli, clap::Error> {
    let mut command = Cli::command();
    let parsed = command
        .try_get_matches_from_mut(args::protect_negated_flags(std::env::args_os()))
        .and_then(|matches| Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command)));
    std::mem::forget(command);
    parsed
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(err) => {
            // `--help` and `--version` are "errors" that print to stdout and succeed.
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(failure::USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    init_tracing(cli.verbose);
    // The client cache reads no environment by itself: the CLI opts every cache it builds in
    // to `NETMIRROR_CLIENT_DEBUG` and `NETMIRROR_FATAL_WARNINGS`.
    netmirror_client_cache::DebugConfig::set_process_default(
        netmirror_client_cache::DebugConfig::from_env(),
    );
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => failure::report(&err),
    }
}

/// Installs the log subscriber on stderr: `RUST_LOG` when set, else a level from `-v`.
///
/// `NETMIRROR_CLIENT_DEBUG` (applied to the client caches in `main`): what it enables is let
/// through.
fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    if verbose == 0
        && std::env::var_os("RUST_LOG").is_none()
        && std::env::var_os("NETMIRROR_CLIENT_DEBUG").is_none()
    {
        // Warnings and errors only, which a run that goes well has none of: the subscriber
        // is made at the first one (see `lazy_log`).
        lazy_log::install(|| fmt_subscriber(EnvFilter::new("warn")));
        return;
    }
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    if std::env::var_os("NETMIRROR_CLIENT_DEBUG").is_some()
        && std::env::var_os("RUST_LOG").is_none()
        && let Ok(directive) = "netmirror_client_cache=trace".parse()
    {
        filter = filter.add_directive(directive);
    }
    let _ = fmt_subscriber(filter).try_init();
}

/// The log subscriber on stderr, filtered by `filter`.
fn fmt_subscriber(filter: EnvFilter) -> impl tracing::Subscriber + Send + Sync + 'static {
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        // On a closed or full stderr the subscriber would report its failure with
        // `eprintln!`, which panics there: a log line that cannot be written is dropped.
        .log_internal_errors(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(true)
        .finish()
}

/// Runs one command.
fn run(cli: Cli) -> anyhow::Result<()> {
    let mut printer = Printer::new(&cli.output);
    let result = match cli.command {
        Some(Command::Completions { shell }) => {
            // Into a buffer first: clap_complete panics when its writer fails (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "netmirror", &mut script);
            std::io::stdout().write_all(&script)?;
            Ok(())
        }
        Some(Command::Man) => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            std::io::stdout().write_all(&page)?;
            Ok(())
        }
        Some(Command::Link(args)) => kernel::link(&mut printer, &cli.kernel, &args),
        Some(Command::Addr(args)) => kernel::addr(&mut printer, &cli.kernel, &args),
        Some(Command::Rule(args)) => kernel::rule(&mut printer, &cli.kernel, &args),
        Some(Command::Route(args)) => match &args.action {
            None => kernel::route_show(&mut printer, &cli.kernel, &args.words),
            Some(RouteAction::Show { words }) => {
                kernel::route_show(&mut printer, &cli.kernel, words)
            }
            Some(RouteAction::Count) => kernel::route_count(&mut printer, &cli.kernel),
        },
        Some(Command::Nexthop(args)) => nexthop::show(&mut printer, &cli.kernel, &args),
        Some(Command::Monitor(args)) => monitor::run(&mut printer, &cli.kernel, &args),
        Some(Command::Batch(args)) => batch::run(&mut printer, &cli.kernel, &args),
        Some(Command::Nm(args)) => {
            // `nm device IFACE --kernel` reads the kernel too, in the namespace of `--netns`.
            if !matches!(
                args.action,
                Some(args::NmAction::Device { kernel: true, .. })
            ) {
                no_kernel_options(&cli.kernel, "nm")?;
            }
            nm::run(
                &mut printer,
                &cli.bus.bus(),
                cli.bus.timeout(),
                &cli.kernel,
                &args,
            )
        }
        Some(Command::Objects(args)) => {
            no_kernel_options(&cli.kernel, "objects")?;
            objects::run(&mut printer, &cli.bus.bus(), cli.bus.timeout(), &args)
        }
        None => overview::run(&mut printer, &cli.output, &cli.kernel, cli.bus.timeout()),
    };
    result?;
    printer.flush()
}

/// `--netns`, `-4` and `-6` are about the kernel: with a D-Bus subcommand they are a mistake.
fn no_kernel_options(kernel: &args::KernelArgs, command: &str) -> anyhow::Result<()> {
    if kernel.netns.is_some() || kernel.ipv4 || kernel.ipv6 {
        return Err(
            args::usage_error(format!("--netns, -4 and -6 do not apply to `{command}`")).into(),
        );
    }
    Ok(())
}
