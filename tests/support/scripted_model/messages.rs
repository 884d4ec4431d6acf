//! Anthropic Messages, streamed (Claude Code): named SSE events
//! `message_start`, `content_block_start`, `content_block_delta` (a tool's
//! input only as `input_json_delta`: input in the block's start is
//! ignored), `content_block_stop` (without it, no tool is called),
//! `message_delta`, `message_stop`. Without `event:` lines Claude Code
//! retries the request unstreamed, which this endpoint refuses. A tool
//! result is a `tool_result` block in a user message; Claude Code's own
//! `<system-reminder>` text blocks are not the prompt.
//!
//! What Claude Code 2.1 asks besides turns, each answered here:
//!
//! - **Deferred tools.** MCP tools are not in `tools`: their names are
//!   listed in a system text ("The following deferred tools are now
//!   available via ToolSearch"), and a tool's schema is loaded by calling
//!   `ToolSearch` with `{"query": "select:NAME"}`; its result is a
//!   `tool_reference` block, and from the next request on the tool is in
//!   `tools`. The model here searches for a scripted tool that is deferred
//!   and not yet offered; a search's result is not a tool result of the
//!   script.
//! - **The auto-mode classifier.** Before a tool call in auto mode, an
//!   unstreamed request whose system prompt opens "You are a security
//!   monitor" grades the call: `<severity>N</severity>` (with
//!   `stop_sequences` `["</severity>"]`), or `<block>yes|no</block>`. It
//!   is kept as a review and answered as the model's [`Review`] says.
//! - **Session titles**: a structured-output request (`output_config`'s
//!   JSON schema with `title`) and no tools, answered with a title.

use serde_json::{json, Value};

use super::{names, next_call, next_step, sse, Answer, Conversation, Kind, Review, Script, Step};

/// The tool that loads deferred tools' schemas.
const TOOL_SEARCH: &str = "ToolSearch";
/// The sentence before the list of deferred tool names.
const DEFERRED: &str = "The following deferred tools are now available via ToolSearch";

pub(crate) fn answer(path: &str, body: &Value, script: &Script) -> Answer {
    let path = path.split('?').next().unwrap_or_default();
    if path == "/v1/messages/count_tokens" {
        return Answer::json(json!({"input_tokens": 10}));
    }
    if path != "/v1/messages" {
        return Answer::refuse(format!("not a Messages request: POST {path}"));
    }
    if system_text(body).contains("You are a security monitor") {
        return review(body, script.review);
    }
    if body["stream"] != true {
        return Answer::refuse("this endpoint only streams, but for reviews".to_owned());
    }
    if body
        .pointer("/output_config/format/schema/properties/title")
        .is_some()
        || last_text(body).starts_with("[SUGGESTION MODE")
    {
        let title = json!({"title": "Scripted session"}).to_string();
        return streamed_text(body, &title).of(Kind::Side);
    }
    let conversation = conversation(body);
    let step = match search_for_deferred(&script.steps, &conversation) {
        Some(name) => Step::Call {
            name: TOOL_SEARCH.to_owned(),
            arguments: json!({"query": format!("select:{name}"), "max_results": 5}),
            n: 100 + conversation.results.len(),
        },
        None => next_step(&script.steps, &conversation),
    };
    let (block, delta, stop) = match step {
        Step::Text(text) => return streamed_text(body, &text),
        Step::Call { name, arguments, n } => (
            json!({"type": "tool_use", "id": format!("toolu_scripted_{n}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": arguments.to_string()}),
            "tool_use",
        ),
    };
    stream(body, block, delta, stop)
}

/// The deferred name of the script's next tool, when that tool is not
/// offered yet and `ToolSearch` is.
fn search_for_deferred(
    script: &[super::ToolCallScript],
    conversation: &Conversation,
) -> Option<String> {
    let (tool, _) = next_call(script, conversation)?;
    let offered = |name: &str| conversation.offered.iter().any(|o| o == name);
    if conversation.offered.iter().any(|name| names(name, tool)) || !offered(TOOL_SEARCH) {
        return None;
    }
    conversation
        .deferred
        .iter()
        .find(|name| names(name, tool))
        .cloned()
}

/// The classifier's verdict, in the format its request asks for; an
/// unstreamed message.
fn review(body: &Value, verdict: Review) -> Answer {
    // Stage 1 stops at `</severity>`; stage 2 (after a high grade) asks
    // for `<severity>` with reasoning; an older format asks for `<block>`.
    let severity = system_text(body).contains("<severity>");
    let text = match (severity, verdict) {
        (true, Review::Allow) => "<severity>0</severity>",
        (true, Review::Deny) => "<thinking>Scripted.</thinking><severity>95</severity><category>Scripted denial</category>",
        (false, Review::Allow) => "<block>no</block>",
        (false, Review::Deny) => "<block>yes</block><reason>Scripted denial</reason>",
    };
    Answer::json(
        json!({"id": "msg_review", "type": "message", "role": "assistant",
        "model": body["model"], "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}}),
    )
    .of(Kind::Review)
}

fn streamed_text(body: &Value, text: &str) -> Answer {
    stream(
        body,
        json!({"type": "text", "text": ""}),
        json!({"type": "text_delta", "text": text}),
        "end_turn",
    )
}

fn stream(body: &Value, block: Value, delta: Value, stop: &str) -> Answer {
    let message = json!({"id": "msg_scripted", "type": "message", "role": "assistant",
        "model": body["model"], "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}});
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": message}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    Answer::stream(sse(&events, true))
}

/// The last message's last text.
fn last_text(body: &Value) -> String {
    let last = body["messages"].as_array().and_then(|m| m.last());
    let text = last.map(blocks).unwrap_or_default();
    text.iter()
        .rev()
        .find_map(|b| b["text"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The system prompt's text, whether a string or blocks.
fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn blocks(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The names listed after [`DEFERRED`], one a line, in the system prompt
/// or any message.
fn deferred_names(body: &Value) -> Vec<String> {
    let mut texts = vec![system_text(body)];
    for message in body["messages"].as_array().into_iter().flatten() {
        texts.extend(
            blocks(message)
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_owned)),
        );
    }
    let mut found = Vec::new();
    for text in texts {
        let Some(at) = text.find(DEFERRED) else {
            continue;
        };
        let list = text[at..].lines().skip(1);
        found.extend(
            list.take_while(|line| !line.trim().is_empty())
                .map(|line| line.trim().to_owned()),
        );
    }
    found
}

fn conversation(body: &Value) -> Conversation {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let typed = |block: &Value| {
        block["type"] == "text"
            && !block["text"]
                .as_str()
                .unwrap_or("")
                .trim_start()
                .starts_with("<system-reminder>")
    };
    // The prompt: the last user message with text the user typed (not one
    // carrying tool results, to which Claude Code adds "Tool loaded.").
    let at = messages
        .iter()
        .rposition(|m| {
            let blocks = blocks(m);
            m["role"] == "user"
                && blocks.iter().any(typed)
                && !blocks.iter().any(|b| b["type"] == "tool_result")
        })
        .unwrap_or(0);
    let since_prompt = messages.get(at..).unwrap_or_default();
    let prompt = since_prompt
        .first()
        .map(|m| {
            blocks(m)
                .iter()
                .filter(|b| typed(b))
                .filter_map(|b| b["text"].as_str())
                .collect()
        })
        .unwrap_or_default();
    // Searches are the agent's plumbing, not the script's calls.
    let searches: Vec<Value> = since_prompt
        .iter()
        .flat_map(blocks)
        .filter(|b| b["type"] == "tool_use" && b["name"] == TOOL_SEARCH)
        .map(|b| b["id"].clone())
        .collect();
    // Deferred tools a search loaded: named by a `tool_reference`.
    let loaded: Vec<Value> = messages
        .iter()
        .flat_map(blocks)
        .filter(|b| b["type"] == "tool_result")
        .flat_map(|b| b["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "tool_reference")
        .map(|part| part["tool_name"].clone())
        .collect();
    let result_text = |content: &Value| match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    };
    Conversation {
        prompt,
        results: since_prompt
            .iter()
            .flat_map(blocks)
            .filter(|b| b["type"] == "tool_result" && !searches.contains(&b["tool_use_id"]))
            .map(|b| result_text(&b["content"]))
            .collect(),
        offered: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["defer_loading"] != true || loaded.contains(&t["name"]))
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect(),
        deferred: deferred_names(body),
    }
}
