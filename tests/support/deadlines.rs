//! An agent's deadline for one tool call, seen from both ends: the
//! scripted model asks for `acp_turn`'s `long_task` (which works for
//! `seconds`, reporting progress every `progress_every` seconds if asked),
//! and the turn shows whether progress could reach the agent, when the
//! host saw the call stopped (the agent cancelled it, or closed its stream
//! or connection) or done, and when the agent told its ACP client that the
//! call failed, with what.
//!
//! `scripts/agent-deadlines` runs each agent's ignored `*_deadline_*` test,
//! which measures the default deadline for up to five minutes; the tests
//! that run in CI shorten the deadline through the agent's own setting.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use serde_json::Value;

use super::agents::{run_turn_within, Agent, Turn};
use super::scripted_model::{Api, ScriptedModel, ToolCallScript};

/// The prompt that asks for `long_task`.
pub const LONG_TASK: &str = "Run the long task.";

/// The script for [`LONG_TASK`]: one call of `long_task` with `arguments`.
pub fn long_task_script(arguments: Value) -> Vec<ToolCallScript> {
    vec![ToolCallScript {
        trigger: "long task",
        calls: vec![("long_task", arguments)],
    }]
}

/// How a `long_task` ended, as the host saw it, in seconds from its start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ended {
    /// It worked its time and answered.
    Done(f64),
    /// It was stopped: the agent cancelled it, or closed its stream or
    /// connection.
    Stopped(f64),
}

/// What one `long_task` turn showed.
pub struct LongTask {
    /// Whether the call carried a `progressToken` on a stream that can
    /// carry progress (`CallRequest::progress_reaches_client`).
    pub progress_reaches_client: bool,
    pub ended: Ended,
    /// When (seconds from the call) the agent told its ACP client the call
    /// failed, and the update's text; `None` if it never did.
    pub agent_failed: Option<(f64, String)>,
    pub turn: Turn,
}

impl LongTask {
    /// The deadline the turn showed, in seconds: when the host saw the
    /// call stopped, or else when the agent gave up on it; `None` when
    /// the call was done and the agent took its answer.
    pub fn deadline(&self) -> Option<f64> {
        match (self.ended, &self.agent_failed) {
            (Ended::Stopped(at), _) => Some(at),
            (Ended::Done(_), Some((at, _))) => Some(*at),
            (Ended::Done(_), None) => None,
        }
    }
}

/// Runs a `long_task` turn (`args` for `acp_turn`, [`LONG_TASK`] among
/// them) against `agent` and `model`, for at most `limit`.
pub async fn run_long_task(
    agent: &Agent,
    model: &ScriptedModel,
    args: &[&str],
    limit: Duration,
) -> LongTask {
    let mut called = None;
    let mut agent_failed = None;
    let turn = run_turn_within(agent, model, args, limit, |line| {
        let now = Instant::now();
        if line.starts_with("[host] tool call long_task ") {
            called = Some(now);
        }
        if let Some(at) = called {
            if agent_failed.is_none()
                && line.starts_with("[tool update]")
                && line.contains("failed")
            {
                let seconds = now.duration_since(at).as_secs_f64();
                agent_failed = Some((seconds, line.to_owned()));
            }
        }
    })
    .await;
    let seconds_in = |tag: &str| {
        turn.lines(tag).first().map(|line| {
            let number = line[tag.len()..].trim_end_matches(" s");
            number.parse::<f64>().unwrap()
        })
    };
    let ended = match (
        seconds_in("[host] long_task done after "),
        seconds_in("[host] long_task stopped after "),
    ) {
        (Some(done), None) => Ended::Done(done),
        (None, Some(stopped)) => Ended::Stopped(stopped),
        other => panic!(
            "long_task neither done nor stopped once: {other:?}\n{}",
            turn.stdout
        ),
    };
    let reaches = turn.lines("[host] long_task: progress reaches the client: ");
    assert_eq!(reaches.len(), 1, "{}", turn.stdout);
    LongTask {
        progress_reaches_client: reaches[0].ends_with("true"),
        ended,
        agent_failed,
        turn,
    }
}

/// A deadline as README.md's agent table gives it: `N s`, or "more than
/// 5 minutes" when the measuring call was never cut off.
pub fn deadline_cell(seconds: Option<f64>) -> String {
    match seconds {
        Some(seconds) => format!("{seconds:.0} s"),
        None => "more than 5 minutes".to_owned(),
    }
}

/// Checks README.md's agent table gives `agent` the deadline measured: a
/// cell that starts `N s` for a call cut off `N` to `N + 31` seconds in
/// (an agent may check its timer on an interval: Claude Code's idle timer
/// every 30 s), or says "more than 5 minutes" for one never cut off.
pub fn observe_deadline(agent: &str, measured: Option<f64>) {
    let row = "deadline for one tool call";
    let cell = super::agents::readme_cell(agent, row);
    let given: Option<f64> = cell.split(" s").next().and_then(|n| n.parse().ok());
    let agrees = match (measured, given) {
        (None, _) => cell.contains("more than 5 minutes"),
        (Some(measured), Some(given)) => (given - 1.0..=given + 31.0).contains(&measured),
        (Some(_), None) => false,
    };
    assert!(
        agrees,
        "README.md's agent table, {agent} / {row}: {cell:?} is not what was measured: {}",
        deadline_cell(measured)
    );
}

/// How long a measuring turn may take: a `long_task` of five and a half
/// minutes, and the agent's start and answer around it.
pub const MEASURING_LIMIT: Duration = Duration::from_secs(420);

/// Measures `agent`'s deadline for one tool call (`scripts/agent-deadlines`),
/// `make` giving the agent its scripted `api`, `args` the rest of
/// `acp_turn`'s: a `long_task` of 305 s without progress; then, if that was
/// cut off after `D` seconds, one of `D` + 30 s reporting progress every 2 s,
/// which is done only if progress extends the deadline. Prints what it
/// found, then checks README.md's agent table says it (rows "deadline for
/// one tool call" and "progress extends the deadline").
pub async fn measure_deadline(
    agent: &str,
    api: Api,
    make: impl Fn(&ScriptedModel) -> Agent,
    args: &[&str],
) {
    let turn = |arguments: Value| async {
        let model = ScriptedModel::speaking(api, long_task_script(arguments)).await;
        let mut all = args.to_vec();
        all.extend(["--prompt", LONG_TASK]);
        run_long_task(&make(&model), &model, &all, MEASURING_LIMIT).await
    };
    let silent = turn(serde_json::json!({"seconds": 305})).await;
    let deadline = silent.deadline();
    println!(
        "DEADLINE {agent}: {} | progress reaches the client: {} | the host saw the call {:?} | the agent reported it failed: {:?}",
        deadline_cell(deadline),
        silent.progress_reaches_client,
        silent.ended,
        silent.agent_failed,
    );
    let extends = match deadline {
        Some(at) => {
            let seconds = (at + 30.0).round();
            let reporting =
                turn(serde_json::json!({"seconds": seconds, "progress_every": 2})).await;
            let kept =
                matches!(reporting.ended, Ended::Done(_)) && reporting.agent_failed.is_none();
            println!(
                "EXTENDS {agent}: {kept} | a {seconds} s call reporting progress: the host saw it {:?} | the agent reported it failed: {:?}",
                reporting.ended, reporting.agent_failed
            );
            Some(kept)
        }
        None => None,
    };
    observe_deadline(agent, deadline);
    if let Some(kept) = extends {
        // The cell's first word is the answer: `yes` or `no` (a cell that
        // says "not measured" is neither).
        let row = "progress extends the deadline";
        let cell = super::agents::readme_cell(agent, row);
        let said = cell.split([':', ' ']).next().unwrap_or_default();
        let measured = if kept { "yes" } else { "no" };
        assert_eq!(
            said, measured,
            "README.md's agent table, {agent} / {row}: {cell:?}"
        );
    }
}

/// For an agent whose deadline `make` shortened well below `seconds`: a
/// `long_task` of `seconds` reporting progress every 2 s is done, with no
/// failure reported by the agent, and the same task silent is cut off
/// before its time. `args` are `acp_turn`'s beside the prompt.
pub async fn assert_progress_outlives_deadline(
    api: Api,
    seconds: u64,
    make: impl Fn(&ScriptedModel) -> Agent,
    args: &[&str],
) {
    for progress in [true, false] {
        let arguments = match progress {
            true => serde_json::json!({"seconds": seconds, "progress_every": 2}),
            false => serde_json::json!({"seconds": seconds}),
        };
        let model = ScriptedModel::speaking(api, long_task_script(arguments)).await;
        let mut all = vec!["--prompt", LONG_TASK];
        all.extend_from_slice(args);
        let run = run_long_task(&make(&model), &model, &all, Duration::from_secs(170)).await;
        assert!(run.progress_reaches_client, "{}", run.turn.stdout);
        match progress {
            true => assert!(
                matches!(run.ended, Ended::Done(_)) && run.agent_failed.is_none(),
                "kept alive by progress: {:?} {:?}\n{}",
                run.ended,
                run.agent_failed,
                run.turn.stdout
            ),
            false => assert!(
                run.deadline().is_some_and(|at| at < seconds as f64 - 1.0),
                "stopped without progress: {:?} {:?}\n{}",
                run.ended,
                run.agent_failed,
                run.turn.stdout
            ),
        }
    }
}
