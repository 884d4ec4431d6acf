//! Anthropic Messages, streamed (Claude Code): named SSE events
//! `message_start`, `content_block_start`, `content_block_delta` (a tool's
//! input only as `input_json_delta`: input in the block's start is
//! ignored), `content_block_stop` (without it, no tool is called),
//! `message_delta`, `message_stop`. Without `event:` lines Claude Code
//! retries the request unstreamed, which this endpoint refuses. A tool
//! result is a `tool_result` block in a user message; Claude Code's own
//! `<system-reminder>` text blocks are not the prompt.

use serde_json::{json, Value};

use super::{next_step, sse, Answer, Conversation, Step, ToolCallScript};

pub(crate) fn answer(path: &str, body: &Value, script: &[ToolCallScript]) -> Answer {
    let path = path.split('?').next().unwrap_or_default();
    if path == "/v1/messages/count_tokens" {
        return Answer::json(json!({"input_tokens": 10}));
    }
    if path != "/v1/messages" {
        return Answer::refuse(format!("not a Messages request: POST {path}"));
    }
    if body["stream"] != true {
        return Answer::refuse("this endpoint only streams".to_owned());
    }
    let (block, delta, stop) = match next_step(script, &conversation(body)) {
        Step::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
        Step::Call { name, arguments, n } => (
            json!({"type": "tool_use", "id": format!("toolu_scripted_{n}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": arguments.to_string()}),
            "tool_use",
        ),
    };
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

fn conversation(body: &Value) -> Conversation {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let blocks = |message: &Value| -> Vec<Value> {
        match &message["content"] {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        }
    };
    let typed = |block: &Value| {
        block["type"] == "text"
            && !block["text"]
                .as_str()
                .unwrap_or("")
                .trim_start()
                .starts_with("<system-reminder>")
    };
    // The prompt: the last user message with text the user typed.
    let at = messages
        .iter()
        .rposition(|m| m["role"] == "user" && blocks(m).iter().any(typed))
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
            .filter(|b| b["type"] == "tool_result")
            .map(|b| result_text(&b["content"]))
            .collect(),
        offered: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect(),
    }
}
