//! Scripted model endpoints, for running real agents offline: each agent
//! talks to its own provider's API, so there is one reader and one writer
//! per API (`chat_completions`, `messages`, `gemini`, `responses`), and one
//! script and one HTTP server for all.
//!
//! The script: for a prompt that contains a step's trigger, the model makes
//! that step's calls one after the other, one per request (the offered tool
//! whose name is the tool's, or ends in it after the agent's separator:
//! agents prefix the MCP server's name), each as soon as the previous one's
//! result is in the conversation; once all are made, the answer is text
//! that quotes the last tool result (`The tool said: …`). A call whose tool
//! is not offered in that request ends the turn with text that says so.
//! An agent that defers tools behind a search tool (Claude Code's
//! `ToolSearch`) is first asked to load the tool (`messages.rs`). An agent
//! that offers its MCP tools only through code (Mistral Vibe's
//! `run_typescript`, which calls them as `tools.mcp_SERVER.TOOL(args)`) is
//! given code that makes the call, for the server `acp_turn` hosts
//! (`demo`).
//!
//! Some agents ask the model to review a tool call before making it
//! (Claude Code's auto-mode classifier, Codex's guardian): those requests
//! get the model's [`Review`] (allow unless set otherwise) and are kept
//! apart from the turn's. Every turn request body is kept, and every
//! review request body, for the test to look at; side requests (titles,
//! token counts) are answered and not kept.
//!
//! HTTP/1.1 over a plain socket, one request per connection
//! (`Connection: close`), bodies with `Content-Length`: what the agents'
//! HTTP clients send. Streams are written whole, with a `Content-Length`.
//! Anything else fails the request loudly (a 400 the test will see as a
//! failed turn), never silently.

mod chat_completions;
mod gemini;
mod messages;
mod responses;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::stubs::read_post;

/// What the model does for a prompt that contains `trigger`: call each
/// `(tool, arguments)` of `calls` in turn.
#[derive(Clone)]
pub struct ToolCallScript {
    pub trigger: &'static str,
    pub calls: Vec<(&'static str, Value)>,
}

/// The provider API an agent speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`): Copilot CLI's
    /// bring-your-own-model provider.
    ChatCompletions,
    /// Anthropic Messages (`POST /v1/messages`): Claude Code.
    Messages,
    /// Gemini (`POST /v1beta/models/M:streamGenerateContent`): Gemini CLI.
    Gemini,
    /// OpenAI Responses (`POST /v1/responses`): Codex.
    Responses,
}

/// What the scripted model answers when an agent asks it to review a tool
/// call before making it: Claude Code's auto-mode classifier, Codex's
/// guardian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    Allow,
    Deny,
}

/// A running scripted endpoint.
pub struct ScriptedModel {
    pub addr: SocketAddr,
    api: Api,
    /// Every request body that asked for a turn, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Every request body that asked for a review of a tool call.
    pub reviews: Arc<Mutex<Vec<Value>>>,
    review: Arc<Mutex<Review>>,
}

impl ScriptedModel {
    /// An OpenAI Chat Completions endpoint.
    pub async fn start(script: Vec<ToolCallScript>) -> Self {
        Self::speaking(Api::ChatCompletions, script).await
    }

    /// An endpoint of `api`, whose reviews allow every call.
    pub async fn speaking(api: Api, script: Vec<ToolCallScript>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let model = Self {
            addr,
            api,
            requests: Arc::default(),
            reviews: Arc::default(),
            review: Arc::new(Mutex::new(Review::Allow)),
        };
        let (turns, reviews, review) = (
            Arc::clone(&model.requests),
            Arc::clone(&model.reviews),
            Arc::clone(&model.review),
        );
        let script = Arc::new(script);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let seen = Seen {
                    turns: Arc::clone(&turns),
                    reviews: Arc::clone(&reviews),
                };
                let script = Script {
                    steps: Arc::clone(&script),
                    review: *review.lock().unwrap(),
                };
                tokio::spawn(async move { serve(api, stream, &seen, &script).await });
            }
        });
        model
    }

    /// Sets what the model answers to reviews from now on.
    pub fn reviewing(self, review: Review) -> Self {
        *self.review.lock().unwrap() = review;
        self
    }

    /// The bodies of the review requests received.
    pub fn reviews(&self) -> Vec<Value> {
        self.reviews.lock().unwrap().clone()
    }

    /// The base URL the agent's client takes.
    pub fn base_url(&self) -> String {
        match self.api {
            Api::ChatCompletions | Api::Responses => format!("http://{}/v1", self.addr),
            Api::Messages | Api::Gemini => format!("http://{}", self.addr),
        }
    }

    /// The bodies of the requests that asked the model for a turn (not
    /// the side requests some agents make: token counts, routing).
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// What an API's reader makes of one request: the user's prompt, the tool
/// results since it (oldest first), and the names of the tools offered.
pub(crate) struct Conversation {
    pub prompt: String,
    pub results: Vec<String>,
    pub offered: Vec<String>,
    /// Tools named to the model but not offered until it loads them
    /// (Claude Code's deferred tools); empty for other agents.
    pub deferred: Vec<String>,
}

/// The script's answer to a conversation.
pub(crate) enum Step {
    /// Call `name` (as offered) with `arguments`; the `n`th call of the turn.
    Call {
        name: String,
        arguments: Value,
        n: usize,
    },
    Text(String),
}

/// The script as one request sees it: the steps, and what a review gets.
pub(crate) struct Script {
    pub steps: Arc<Vec<ToolCallScript>>,
    pub review: Review,
}

/// Where a request's body is kept for the test.
struct Seen {
    turns: Arc<Mutex<Vec<Value>>>,
    reviews: Arc<Mutex<Vec<Value>>>,
}

/// What kind of request an answer answered, for the test's record.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A turn of the model: kept in `requests`.
    Turn,
    /// A review of a tool call: kept in `reviews`.
    Review,
    /// Anything else (token counts, titles, routing): not kept.
    Side,
}

/// An HTTP answer: status, content type, body.
pub(crate) struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub kind: Kind,
}

impl Answer {
    pub(crate) fn json(body: Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            body: body.to_string(),
            kind: Kind::Side,
        }
    }

    pub(crate) fn stream(body: String) -> Self {
        Self {
            status: 200,
            content_type: "text/event-stream",
            body,
            kind: Kind::Turn,
        }
    }

    pub(crate) fn of(self, kind: Kind) -> Self {
        Self { kind, ..self }
    }

    pub(crate) fn refuse(why: String) -> Self {
        Self {
            status: 400,
            content_type: "application/json",
            body: json!({"error": {"message": why}}).to_string(),
            kind: Kind::Side,
        }
    }
}

/// The tool the script calls next in `conversation`, with its arguments;
/// `None` once every call is made.
pub(crate) fn next_call<'s>(
    script: &'s [ToolCallScript],
    conversation: &Conversation,
) -> Option<&'s (&'static str, Value)> {
    let calls = script
        .iter()
        .find(|s| conversation.prompt.contains(s.trigger))
        .map_or(&[][..], |s| &s.calls[..]);
    calls.get(conversation.results.len())
}

/// Whether `name`, as an agent offers it, is `tool`: the tool's own name,
/// or it after the agent's prefix and separator.
pub(crate) fn names(name: &str, tool: &str) -> bool {
    name.strip_suffix(tool)
        .is_some_and(|prefix| prefix.is_empty() || prefix.ends_with(['-', '_', '/']))
}

/// The script's next step for `conversation`.
pub(crate) fn next_step(script: &[ToolCallScript], conversation: &Conversation) -> Step {
    let Some((tool, arguments)) = next_call(script, conversation) else {
        return Step::Text(match conversation.results.last() {
            Some(result) => format!("The tool said: {result}"),
            None => "No scripted tool was offered.".to_owned(),
        });
    };
    let offered = conversation.offered.iter().find(|name| names(name, tool));
    match offered {
        Some(name) => Step::Call {
            name: name.clone(),
            arguments: arguments.clone(),
            n: conversation.results.len() + 1,
        },
        None if conversation.offered.iter().any(|name| name == CODE_TOOL) => Step::Call {
            name: CODE_TOOL.to_owned(),
            arguments: json!({"code": format!(
                "async function main() {{ return await tools.mcp_demo.{tool}({arguments}); }}"
            )}),
            n: conversation.results.len() + 1,
        },
        // Not offered: say so, so the test's failure shows it.
        None => Step::Text(format!("The scripted tool {tool} was not offered.")),
    }
}

/// The tool through which Mistral Vibe's model calls MCP tools, in
/// TypeScript.
pub(crate) const CODE_TOOL: &str = "run_typescript";

/// `data: …` events, each followed by a blank line; `event:` lines too
/// when `named`.
pub(crate) fn sse(events: &[(&str, Value)], named: bool) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if named {
            out.push_str(&format!("event: {name}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}

async fn serve(api: Api, mut stream: TcpStream, seen: &Seen, script: &Script) {
    let answer = match read_post(&mut stream).await {
        Ok((path, body)) => {
            let steps = &script.steps[..];
            let answer = match api {
                Api::ChatCompletions => chat_completions::answer(&path, &body, steps),
                Api::Messages => messages::answer(&path, &body, script),
                Api::Gemini => gemini::answer(&path, &body, steps),
                Api::Responses => responses::answer(&path, &body, script),
            };
            match answer.kind {
                Kind::Turn => seen.turns.lock().unwrap().push(body),
                Kind::Review => seen.reviews.lock().unwrap().push(body),
                Kind::Side => {}
            }
            answer
        }
        Err(why) => Answer::refuse(why),
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nCache-Control: no-cache\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.status,
        if answer.status == 200 { "OK" } else { "Bad Request" },
        answer.content_type,
        answer.body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(answer.body.as_bytes()).await;
    let _ = stream.shutdown().await;
}
