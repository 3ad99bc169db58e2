//! `enygma-loadgen`: see `enygma-loadgen --help` and the crate's README.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use clap::Parser;
use enygma_loadgen::cli::{Cli, Command};
use enygma_loadgen::{ab, callers, plan, run};

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Command::Plan(p) = &cli.command {
        return plan::main(p);
    }
    // One thread is plenty for a few hundred requests per second and disturbs the server
    // (which shares the machine) least; the RSS sampler has its own thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let abort = Arc::new(AtomicBool::new(false));
        let a = abort.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: finishing in-flight requests, writing a partial report (Ctrl-C again to quit)");
                a.store(true, Ordering::Relaxed);
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(130);
                }
            }
        });
        match cli.command {
            Command::Run(args) => run::main(args, abort).await,
            Command::Ab(args) => ab::main(args, abort).await,
            Command::Callers(args) => callers::main(args, abort).await,
            Command::Plan(_) => unreachable!(),
        }
    })
}
