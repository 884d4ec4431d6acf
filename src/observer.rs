//! The window on every request: [`Observer`], what it is told
//! ([`Observation`], [`Outcome`]), and the [`SessionId`] it names sessions
//! by. Public as `observe` (see the crate root for what is observed, and
//! what it costs).
//!
//! A leaf: it names no other folder, so the config (which holds the
//! observer) and the state (which mints session ids) both build on it.

use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A session's non-secret identifier, unique within its host; for logs,
/// and for telling [`Observation`]s apart by session.
///
/// Its `Display` form is `session-N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(u64);

impl SessionId {
    /// The next id `counter` gives (its host's: ids are unique within it).
    pub(crate) fn next(counter: &AtomicU64) -> Self {
        Self(counter.fetch_add(1, Ordering::Relaxed))
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "session-{}", self.0)
    }
}

/// Told of each request the host answers (see [`observe`](crate::observe)
/// for which, and what it costs): a function of one [`Observation`],
/// shared by every connection's task.
///
/// **It runs inline**, on the task of the connection whose request it
/// observes, before the answer is sent: an observer that blocks holds that
/// connection, and the runtime thread under it. Hand each observation off
/// without waiting (a bounded channel whose sender drops when it is full,
/// counting what it dropped, to a thread that writes), never write to a
/// pipe or a terminal from here: a pipe nobody reads fills, and then
/// every request waits on it. `examples/host_tools.rs` shows such a
/// hand-off.
///
/// **Refusals before authentication are told together**, at most once a
/// [`REFUSALS_WINDOW`] per status, each observation counting the refusals
/// of its status since the last ([`Observation::requests`]): a process
/// without a bearer can make the host refuse thousands of requests a
/// second, and must not make the observer run as often.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embacle_tool_host::Error> {
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use embacle_tool_host::observe::{Observer, Outcome};
/// use embacle_tool_host::{ToolHost, ToolHostConfig};
///
/// let refused = Arc::new(AtomicU64::new(0));
/// let count = Arc::clone(&refused);
/// let host = ToolHost::bind(ToolHostConfig {
///     observer: Some(Observer::new(move |seen| {
///         if let Outcome::Rejected { status: 401 } = seen.outcome {
///             // Refusals before authentication come counted.
///             count.fetch_add(seen.requests, Ordering::Relaxed);
///         }
///     })),
///     ..ToolHostConfig::default()
/// })
/// .await?;
/// # drop(host);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Observer {
    observe: Arc<dyn Fn(&Observation<'_>) + Send + Sync>,
    /// The refusals before authentication not yet told, shared by the
    /// clones (a config cloned for two hosts tells their sum).
    refusals: Arc<Refusals>,
}

/// How long refusals before authentication are counted before they are
/// told: the first one counted is told at most this long after it came,
/// or when the host stops, if that is sooner.
pub const REFUSALS_WINDOW: Duration = Duration::from_secs(1);

/// The statuses a request refused before authentication may get, each
/// counted apart; another (none is known) is told at once.
const REFUSED_STATUSES: [u16; 12] = [400, 401, 403, 404, 405, 406, 408, 409, 413, 415, 429, 431];

/// Refusals before authentication, counted between observations.
#[derive(Default)]
struct Refusals {
    /// Whether a task is waiting out the window to tell them.
    told_soon: AtomicBool,
    /// Per status of [`REFUSED_STATUSES`], those not yet told.
    counts: [AtomicU64; REFUSED_STATUSES.len()],
}

impl Observer {
    /// An observer that calls `observe` with each observation.
    pub fn new(observe: impl Fn(&Observation<'_>) + Send + Sync + 'static) -> Self {
        Self {
            observe: Arc::new(observe),
            refusals: Arc::default(),
        }
    }

    /// Tells the observer; a panic in it is contained here.
    pub(crate) fn tell(&self, observation: &Observation<'_>) {
        let _ = catch_unwind(AssertUnwindSafe(|| (self.observe)(observation)));
    }

    /// Counts a request refused with `status` before authentication, to be
    /// told with the others of its status once [`REFUSALS_WINDOW`] has
    /// passed (a task of the current runtime waits it out, one at a time).
    pub(crate) fn count_refusal(&self, status: u16) {
        let Some(at) = REFUSED_STATUSES.iter().position(|&s| s == status) else {
            let outcome = Outcome::Rejected { status };
            return self.tell(&Observation::bare(None, Duration::ZERO, outcome));
        };
        self.refusals.counts[at].fetch_add(1, Ordering::Relaxed);
        if self.refusals.told_soon.swap(true, Ordering::AcqRel) {
            return;
        }
        let observer = self.clone();
        // Boxed as the host's own tasks are, so they share one task
        // harness: no copy of tokio's compiled for this one.
        let window: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
            tokio::time::sleep(REFUSALS_WINDOW).await;
            // Cleared first: a refusal counted from here on schedules the
            // next window, whether or not this one takes it.
            observer.refusals.told_soon.store(false, Ordering::Release);
            observer.tell_refusals();
        });
        tokio::spawn(window);
    }

    /// Tells the refusals counted and not yet told, one observation per
    /// status: at the end of a window, and when the host stops. Cold, and
    /// one copy for its three callers.
    #[cold]
    #[inline(never)]
    pub(crate) fn tell_refusals(&self) {
        for (status, count) in REFUSED_STATUSES.iter().zip(&self.refusals.counts) {
            let outcome = Outcome::Rejected { status: *status };
            let requests = count.swap(0, Ordering::AcqRel);
            if requests > 0 {
                self.tell(&Observation {
                    requests,
                    ..Observation::bare(None, Duration::ZERO, outcome)
                });
            }
        }
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer(..)")
    }
}

/// One request, as the host answered it. Borrowed from the request: copy
/// out what you keep. It never holds a bearer, nor any header's value:
/// only the MCP method and tool name the client sent, and a `traceparent`
/// checked to be one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Observation<'a> {
    /// The session whose bearer the request presented; `None` when it was
    /// refused before a live bearer was found.
    pub session: Option<SessionId>,
    /// The JSON-RPC method (`tools/call`, `tools/list`, `initialize`, …);
    /// `None` for a request refused before its body was read, or a message
    /// that was not a readable request. A method of more than 64
    /// characters, or holding any but printable ASCII (a space, a newline,
    /// an escape), is given as [`INVALID_METHOD`], so what a client sends
    /// can neither forge a log line nor grow one.
    pub method: Option<&'a str>,
    /// The tool a `tools/call` named, once it is a name a tool could have
    /// (an invalid name is not passed on); `None` for other methods.
    pub tool: Option<&'a str>,
    /// The MCP revision the request was served under (`"2025-06-18"`, …,
    /// `"2026-07-28"`): its era, which is modern for `2026-07-28` and
    /// legacy before it. `None` when it was refused before its era was
    /// decided.
    pub protocol_version: Option<&'static str>,
    /// From the moment the request's HTTP head arrived to the moment its
    /// answer was decided (for a streamed call, its final response).
    pub elapsed: Duration,
    /// What the request came to.
    pub outcome: Outcome,
    /// How many requests this observation stands for: 1, but for requests
    /// refused before authentication, which are told together (see
    /// [`Observer`]): all those refused with its status since the last
    /// such observation. Their `elapsed` is zero, and they have no
    /// session, method, tool, revision or trace context.
    pub requests: u64,
    /// The JSON-RPC request id, as text: a number's digits, a string as
    /// sent when it is 1 to 64 printable ASCII characters (else `None`,
    /// like a notification's).
    pub request_id: Option<&'a str>,
    /// The client, as it names itself: in 2026-07-28, from the request's
    /// `_meta["io.modelcontextprotocol/clientInfo"]`; before, from its MCP
    /// session's `initialize` (`params.clientInfo`). See [`ClientInfo`].
    pub client: Option<ClientInfo<'a>>,
    /// The W3C trace context a client sent in `params._meta.traceparent`,
    /// when it is well-formed (`00-` 32 hex digits `-` 16 hex digits `-` 2
    /// hex digits, lowercase, 55 characters) and valid (neither id all
    /// zeros, which W3C Trace Context forbids); anything else is dropped,
    /// so an observer can log it as is.
    pub traceparent: Option<&'a str>,
    /// `params._meta.tracestate`, beside a valid `traceparent`, when it
    /// keeps W3C Trace Context's limits: at most 32 members and 512
    /// characters, each `key=value` well-formed; else dropped.
    pub tracestate: Option<&'a str>,
    /// `params._meta.baggage`, when it keeps W3C Baggage's limits: at most
    /// 64 members and 8,192 bytes, each `key=value` (with `;` properties)
    /// well-formed; else dropped.
    pub baggage: Option<&'a str>,
    /// The bytes of the HTTP request body that carried the message (a
    /// 2025-03-26 batch's members each give the whole batch's); 0 for a
    /// request refused before its body was read.
    pub request_bytes: u64,
    /// The bytes of the response body the message was answered with: the
    /// JSON-RPC message written for it (in a batch, its own member of the
    /// array), a refusal's body, or, for a streamed call, every byte of its
    /// SSE stream up to and with its final response (progress and log
    /// events, keep-alive comments); for a call cut off, what was sent
    /// before. 0 for refusals told together.
    pub response_bytes: u64,
}

/// A client's name and version, as it gave them (MCP's `clientInfo`):
/// each 1 to 128 characters of printable ASCII (spaces allowed), or the
/// whole is dropped, so it can be logged as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientInfo<'a> {
    /// `clientInfo.name`.
    pub name: &'a str,
    /// `clientInfo.version`, if it gave one fit to log.
    pub version: Option<&'a str>,
}

impl<'a> ClientInfo<'a> {
    /// `clientInfo` read from `value`: an object with a `name` fit to log;
    /// `None` for anything else.
    pub(crate) fn from_value(value: &'a serde_json::Value) -> Option<Self> {
        let loggable = |text: &'a serde_json::Value| {
            let text = text.as_str()?;
            let fits = (1..=128).contains(&text.len())
                && text.bytes().all(|b| b == b' ' || b.is_ascii_graphic());
            fits.then_some(text)
        };
        Some(Self {
            name: loggable(value.get("name")?)?,
            version: value.get("version").and_then(loggable),
        })
    }
}

/// Writes `id` to `out` as an observer is given it (see
/// [`Observation::request_id`]); false, writing nothing, when it has no
/// such form.
pub(crate) fn write_request_id(id: &serde_json::Value, out: &mut String) -> bool {
    match id {
        serde_json::Value::Number(number) => {
            use std::fmt::Write as _;
            write!(out, "{number}").is_ok()
        }
        serde_json::Value::String(text) if is_printable_name(text) => {
            out.push_str(text);
            true
        }
        _ => false,
    }
}

impl Observation<'_> {
    /// One request of `session` (if any) that came to `outcome` before
    /// anything else of it was read: no method, tool, revision, id, client
    /// or trace context, and no sizes (a caller that knows them sets them).
    pub(crate) fn bare(session: Option<SessionId>, elapsed: Duration, outcome: Outcome) -> Self {
        Self {
            session,
            method: None,
            tool: None,
            protocol_version: None,
            elapsed,
            outcome,
            requests: 1,
            request_id: None,
            client: None,
            traceparent: None,
            tracestate: None,
            baggage: None,
            request_bytes: 0,
            response_bytes: 0,
        }
    }
}

/// What a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Answered with a result: a tool's success, a listing, an
    /// `initialize`, a `ping`.
    Success,
    /// A tool ran and declined (`ToolOutcome::refused`): a result flagged
    /// `isError`, which the model reads.
    Refused,
    /// Answered with a JSON-RPC error of this code: an unknown tool or
    /// method, bad params, a tool whose outcome was a failure (`-32603`), a
    /// message naming an ended MCP session (`-32001`). A tool that panicked
    /// or outlived its time limit is told apart: [`Panicked`](Self::Panicked),
    /// [`TimedOut`](Self::TimedOut).
    Failed {
        /// The JSON-RPC error code.
        code: i32,
    },
    /// The tool panicked: the client was answered with a `-32603` error,
    /// and the host went on.
    Panicked,
    /// The call outlived `ToolHostConfig::call_timeout`: the tool was
    /// stopped, and the client answered with a `-32603` error giving the
    /// limit (`timeLimitMs`).
    TimedOut,
    /// The client cancelled the call (`notifications/cancelled`), or its
    /// session ended while it ran: nothing was answered.
    Cancelled,
    /// The call's connection closed before its answer was sent (the client
    /// went away mid-call, or the host shut down): the tool was stopped,
    /// and nothing was sent.
    Disconnected,
    /// The call ran, but its session's guard dropped while its result was
    /// held back for a list change to go out first, and no result is sent
    /// after a revocation: the client was answered 401 (or, on a stream,
    /// with the revocation's error). A tool that succeeded or refused
    /// counts in `calls_served` all the same: it ran.
    Withheld,
    /// Refused at the HTTP layer with this status, before (or, for a 401,
    /// while) it was dispatched: no JSON-RPC answer of its own.
    Rejected {
        /// The HTTP status code.
        status: u16,
    },
}

/// What [`Observation::method`] holds for a method that is not 1 to 64
/// printable ASCII characters.
pub const INVALID_METHOD: &str = "(invalid)";

/// `method` as an observer is given it: as sent when it is 1 to 64
/// printable ASCII characters (every MCP method is), else
/// [`INVALID_METHOD`].
pub(crate) fn printable_method(method: &str) -> &str {
    if is_printable_name(method) {
        method
    } else {
        INVALID_METHOD
    }
}

/// Whether `text` is 1 to 64 printable ASCII characters, no space: what a
/// method or a request id must be to reach an observer as sent.
fn is_printable_name(text: &str) -> bool {
    (1..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's info passes when its name is fit to log; a version that
    /// is not is left out. Request ids likewise.
    #[test]
    fn client_info_and_request_ids_are_fit_to_log() {
        let info = serde_json::json!({"name": "Visual Studio Code", "version": "1.107.0"});
        let client = ClientInfo::from_value(&info).unwrap();
        assert_eq!(
            (client.name, client.version),
            ("Visual Studio Code", Some("1.107.0"))
        );
        let bad_version = serde_json::json!({"name": "c", "version": "1\n[request] forged"});
        assert_eq!(ClientInfo::from_value(&bad_version).unwrap().version, None);
        for bad in [
            serde_json::json!("claude-code"),
            serde_json::json!({"version": "1"}),
            serde_json::json!({"name": ""}),
            serde_json::json!({"name": "a\u{1b}[2J"}),
            serde_json::json!({"name": "n".repeat(129)}),
        ] {
            assert!(ClientInfo::from_value(&bad).is_none(), "{bad}");
        }
        let id = |value: serde_json::Value| {
            let mut out = String::new();
            write_request_id(&value, &mut out).then_some(out)
        };
        assert_eq!(id(serde_json::json!(42)).as_deref(), Some("42"));
        assert_eq!(id(serde_json::json!("req-1")).as_deref(), Some("req-1"));
        assert_eq!(id(serde_json::json!("a\nb")), None);
        assert_eq!(id(serde_json::json!(null)), None);
    }

    /// Methods reach the observer as sent only when printable and short.
    #[test]
    fn methods_are_printable_and_bounded() {
        for sent in [
            "tools/call",
            "notifications/cancelled",
            "x",
            &"m".repeat(64),
        ] {
            assert_eq!(printable_method(sent), sent);
        }
        for forged in [
            "",
            "tools/call\n[request] session-1 tools/call ok",
            "\u{1b}[31mred",
            "tools call",
            "caf\u{e9}",
            &"m".repeat(65),
        ] {
            assert_eq!(printable_method(forged), INVALID_METHOD, "{forged:?}");
        }
    }

    /// A panicking observer loses its observation, nothing more.
    #[test]
    fn a_panicking_observer_is_contained() {
        let observer = Observer::new(|_| panic!("observer bug"));
        observer.tell(&Observation::bare(None, Duration::ZERO, Outcome::Success));
        assert_eq!(format!("{observer:?}"), "Observer(..)");
    }
}
