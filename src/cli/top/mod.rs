//! `mcp-launch top [--json] [--interval DURATION]`: samples every gateway, daemon and `up`
//! of this user ([`collect`]), and shows the samples live (`tui::top`) or prints one.

mod collect;
mod records;

use std::io::IsTerminal;
use std::time::Duration;

use clap::Args;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::observe::snapshot::Process;
use crate::output;
use crate::tui::top::app::{Effect, Msg};

use self::collect::{Action, Sampler};
use super::{CliError, GlobalArgs, Outcome};

pub use self::records::announce_up;

/// A live view of every gateway, daemon and `up` stack you run, per upstream.
///
/// Per upstream server: state, calls/s, p50/p99 call latency of the last 60 s, errors,
/// restarts, idle time and bytes its results were cut by budgets. Keys: ↑/↓ select, o sort, r restart, s stop
/// (through the owning process), l its process's log, q quit. With --json, one snapshot:
/// two readings --interval apart (rates and p50/p99 cover the time between them:
/// latency_window_ms), printed once (fields in docs/TOP.md).
///
/// Example: mcp-launch top --json
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Time between samples: the view's refresh, and for --json the time rates are measured
    /// over (seconds or a duration: 1, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = |s: &str| INTERVAL.parse(s))]
    pub interval: Duration,
}

/// `--interval`: from a tenth of a second (a view any faster costs more than it shows) to a
/// minute.
const INTERVAL: crate::duration::Setting = crate::duration::Setting::new(
    "--interval",
    Duration::from_secs(1),
    Duration::from_millis(100),
    Duration::from_secs(60),
);

/// Runs `top`.
pub async fn run(
    args: TopArgs,
    global: &GlobalArgs,
    shutdown: CancellationToken,
) -> Result<Outcome, CliError> {
    let mut sampler = Sampler::new();
    if global.json {
        sampler.sample().await;
        tokio::time::sleep(args.interval).await;
        let snapshot = sampler.sample().await;
        let value = serde_json::to_value(&snapshot).map_err(|e| CliError::Output(e.into()))?;
        output::print_answer(true, value)?;
        return Ok(Outcome::Success);
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(CliError::Usage {
            message: "top needs a terminal (its input or output is a pipe or a file)".into(),
            help: "`mcp-launch top --json` prints one snapshot instead".into(),
        });
    }
    let (messages, inbox) = mpsc::unbounded_channel();
    let (controls, requests) = mpsc::unbounded_channel();
    let stop = shutdown.child_token();
    let sampling = tokio::spawn(sample_until(
        sampler,
        args.interval,
        messages,
        requests,
        stop.clone(),
    ));
    let shown = crate::tui::top::run(inbox, controls, stop.clone()).await;
    stop.cancel();
    let _ = sampling.await;
    shown?;
    Ok(Outcome::Success)
}

/// Samples every `interval` (and at once after an action), sending each sample to the view;
/// carries out the view's stop/restart requests, each in a task of its own.
async fn sample_until(
    mut sampler: Sampler,
    interval: Duration,
    messages: mpsc::UnboundedSender<Msg>,
    mut requests: mpsc::UnboundedReceiver<Effect>,
    stop: CancellationToken,
) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (done, mut answers) = mpsc::unbounded_channel::<Result<String, String>>();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
            Some(request) = requests.recv() => {
                if let Effect::Control { process, server, is_stop } = request {
                    let done = done.clone();
                    tokio::spawn(async move {
                        let _ = done.send(control(&process, &server, is_stop).await);
                    });
                }
                continue;
            }
            Some(answer) = answers.recv() => {
                let _ = messages.send(Msg::Done(answer));
            }
        }
        let snapshot = tokio::select! {
            () = stop.cancelled() => return,
            snapshot = sampler.sample() => snapshot,
        };
        if messages.send(Msg::Snapshot(snapshot)).is_err() {
            return;
        }
    }
}

async fn control(process: &Process, server: &str, is_stop: bool) -> Result<String, String> {
    let action = if is_stop {
        Action::Stop
    } else {
        Action::Restart
    };
    collect::control(process, server, action).await
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use clap::Parser;

    #[test]
    fn interval_takes_a_duration_within_its_range() {
        let parsed = Cli::try_parse_from(["mcp-launch", "top", "--interval", "500ms"]).unwrap();
        let Command::Top(args) = parsed.command else {
            panic!("not top");
        };
        assert_eq!(args.interval, std::time::Duration::from_millis(500));
        assert!(Cli::try_parse_from(["mcp-launch", "top", "--interval", "1ms"]).is_err());
    }
}
