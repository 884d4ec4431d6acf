//! The standard test surface: every tool the integration tests call, and
//! counters for what reached it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use embacle_tool_host::call::CancelSignal;
use embacle_tool_host::{Tool, ToolCall, ToolOutcome, ToolSurface};
use serde_json::{json, Value};

/// The tools the recording surface offers, in listing order.
pub const TOOL_NAMES: [&str; 9] = [
    "echo",
    "refuse",
    "fail",
    "panic",
    "slow",
    "withdrawable",
    "count",
    "hang",
    "quiet",
];

/// Why `refuse` refuses.
pub const REFUSAL: &str = "daily quota reached";

/// The structured payload of `refuse`'s refusal.
pub fn refusal_payload() -> Value {
    json!({"quota": 10, "resetsInSeconds": 3600})
}

/// A surface that counts what reaches it and can withdraw tools.
///
/// `echo` answers its `text`; `refuse` refuses with a structured payload;
/// `fail` fails; `panic` panics; `slow` waits for [`Self::slow_release`];
/// `withdrawable` answers JSON; `count` reports progress; `hang` never
/// finishes; `quiet` is silent for 350 ms, then answers.
pub struct RecordingSurface {
    tools: Vec<Tool>,
    hidden: Mutex<BTreeSet<String>>,
    /// Calls that reached the surface, by any tool.
    pub calls: AtomicUsize,
    /// Names of the tools called, in order.
    pub seen: Mutex<Vec<String>>,
    /// Set by the test to learn when `slow` has started.
    pub slow_started: tokio::sync::Notify,
    /// Held by `slow` until the test releases it.
    pub slow_release: tokio::sync::Semaphore,
    /// Notified when a `hang` call has started.
    pub hang_started: tokio::sync::Notify,
    /// Raised when a `hang` call's future is dropped (it never finishes).
    pub hang_dropped: AtomicBool,
    /// The last `hang` call's cancellation signal, for detached work.
    hang_signal: Mutex<Option<CancelSignal>>,
}

/// Raises its flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl RecordingSurface {
    pub fn new() -> Arc<Self> {
        let text_schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let no_args = json!({"type": "object", "additionalProperties": false});
        let tools = TOOL_NAMES
            .iter()
            .map(|name| {
                let schema = if *name == "echo" {
                    &text_schema
                } else {
                    &no_args
                };
                Tool::new(*name, format!("test tool {name}"), schema.clone()).unwrap()
            })
            .collect();
        Arc::new(Self {
            tools,
            hidden: Mutex::new(BTreeSet::new()),
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            slow_started: tokio::sync::Notify::new(),
            slow_release: tokio::sync::Semaphore::new(0),
            hang_started: tokio::sync::Notify::new(),
            hang_dropped: AtomicBool::new(false),
            hang_signal: Mutex::new(None),
        })
    }

    /// Withdraws a tool: it leaves the list and stops being callable.
    pub fn withdraw(&self, name: &str) {
        self.hidden.lock().unwrap().insert(name.to_owned());
    }

    /// Puts a withdrawn tool back.
    pub fn restore(&self, name: &str) {
        self.hidden.lock().unwrap().remove(name);
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// True once a `hang` call's future has been dropped.
    pub fn hang_was_dropped(&self) -> bool {
        self.hang_dropped.load(Ordering::SeqCst)
    }

    /// True once the last `hang` call's cancellation signal was raised.
    pub fn hang_was_cancelled(&self) -> bool {
        self.hang_signal
            .lock()
            .unwrap()
            .as_ref()
            .expect("a hang call started")
            .is_cancelled()
    }

    fn record(&self, name: &str) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(name.to_owned());
    }
}

impl ToolSurface for RecordingSurface {
    /// `count` and `hang` use the call context; every other tool goes
    /// through `call`.
    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        match call.name() {
            // Three progress reports 60 ms apart (well above the 25 ms rate
            // limit), one that goes backwards (dropped), then the result.
            "count" => {
                self.record("count");
                for step in 1..=3 {
                    call.progress(f64::from(step), Some(3.0), Some(&format!("step {step}")));
                    if step == 2 {
                        call.progress(1.5, Some(3.0), None);
                    }
                    tokio::time::sleep(Duration::from_millis(60)).await;
                }
                ToolOutcome::text("counted")
            }
            "hang" => {
                self.record("hang");
                let _dropped = SetOnDrop(&self.hang_dropped);
                *self.hang_signal.lock().unwrap() = Some(call.cancellation());
                self.hang_started.notify_one();
                std::future::pending::<()>().await;
                ToolOutcome::text("never")
            }
            _ => self.call(call.name(), call.arguments()).await,
        }
    }

    async fn list_tools(&self) -> Arc<[Tool]> {
        let hidden = self.hidden.lock().unwrap().clone();
        self.tools
            .iter()
            .filter(|t| !hidden.contains(t.name()))
            .cloned()
            .collect()
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        self.record(name);
        match name {
            "echo" => match arguments.get("text") {
                Some(Value::String(text)) => ToolOutcome::text(text.clone()),
                _ => ToolOutcome::refused("`text` must be a string"),
            },
            "refuse" => ToolOutcome::builder()
                .text(REFUSAL)
                .json(refusal_payload())
                .refused(),
            "fail" => ToolOutcome::failed("backend unavailable"),
            "panic" => panic!("the panic tool panics"),
            "slow" => {
                self.slow_started.notify_one();
                let _permit = self.slow_release.acquire().await.unwrap();
                ToolOutcome::text("slow done")
            }
            "withdrawable" => ToolOutcome::json(json!({"ok": true})),
            // Silent for 350 ms: long enough for keep-alive comments.
            "quiet" => {
                tokio::time::sleep(Duration::from_millis(350)).await;
                ToolOutcome::text("done quietly")
            }
            other => ToolOutcome::failed(format!("unexpected tool {other}")),
        }
    }
}
