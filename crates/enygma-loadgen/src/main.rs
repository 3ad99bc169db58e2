//! `enygma-loadgen`: see `enygma-loadgen --help` and the crate's README.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use clap::Parser;
use enygma_loadgen::{plan_capacity, run_ab, run_callers, run_load, run_retries, Cli, Command};

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Command::Plan(p) = &cli.command {
        return plan_capacity(p);
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
            Command::Run(args) => run_load(args, abort).await,
            Command::Ab(args) => run_ab(args, abort).await,
            Command::Callers(args) => run_callers(args, abort).await,
            Command::Retries(args) => run_retries(args, abort).await,
            Command::Plan(_) => unreachable!(),
        }
    })
}
