//! OpenAI Responses, streamed (Codex): `response.output_item.done` with the
//! whole item, then `response.completed` (without it Codex fails the turn).
//! MCP tools are offered inside a `namespace` tool (`mcp__SERVER`), and a
//! call must name its namespace apart (`"name": TOOL, "namespace": NS`), or
//! Codex calls nothing. A tool result is a `function_call_output` whose
//! text Codex wraps: `Wall time: …\nOutput:\n` and the MCP content blocks
//! as JSON. Codex's own `<environment_context>` user message is not the
//! prompt.

use serde_json::{json, Value};

use super::{next_step, sse, Answer, Conversation, Step, ToolCallScript};

/// The separator of a namespace and its tool in offered names.
const IN_NAMESPACE: char = '/';

pub(crate) fn answer(path: &str, body: &Value, script: &[ToolCallScript]) -> Answer {
    if !path.ends_with("/responses") {
        return Answer::refuse(format!("not a Responses request: POST {path}"));
    }
    let item = match next_step(script, &conversation(body)) {
        Step::Text(text) => json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}),
        Step::Call { name, arguments, n } => {
            let mut call = json!({"type": "function_call", "call_id": format!("call_{n}"),
                "arguments": arguments.to_string()});
            match name.split_once(IN_NAMESPACE) {
                Some((namespace, tool)) => {
                    call["namespace"] = json!(namespace);
                    call["name"] = json!(tool);
                }
                None => call["name"] = json!(name),
            }
            call
        }
    };
    let events = [
        (
            "done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "completed",
            json!({"type": "response.completed", "response": {"id": "resp_scripted"}}),
        ),
    ];
    Answer::stream(sse(&events, false))
}

fn conversation(body: &Value) -> Conversation {
    let items = body["input"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let text = |item: &Value| -> String {
        item["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|part| part["text"].as_str())
            .collect()
    };
    let typed = |item: &Value| {
        item["type"] == "message" && item["role"] == "user" && !text(item).starts_with('<')
    };
    let at = items.iter().rposition(typed).unwrap_or(0);
    let since_prompt = items.get(at..).unwrap_or_default();
    Conversation {
        prompt: since_prompt.first().map(text).unwrap_or_default(),
        results: since_prompt
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .map(|item| unwrap_output(item["output"].as_str().unwrap_or("")))
            .collect(),
        offered: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|tool| match tool["type"].as_str() {
                Some("namespace") => {
                    let namespace = tool["name"].as_str().unwrap_or("");
                    tool["tools"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|inner| inner["name"].as_str())
                        .map(|inner| format!("{namespace}{IN_NAMESPACE}{inner}"))
                        .collect::<Vec<_>>()
                }
                _ => tool["name"]
                    .as_str()
                    .map(str::to_owned)
                    .into_iter()
                    .collect(),
            })
            .collect(),
    }
}

/// The text of the content blocks in Codex's `…Output:\n[…]` wrapping, or
/// the output as it is when it has no such wrapping.
fn unwrap_output(output: &str) -> String {
    let blocks = output
        .split_once("Output:\n")
        .and_then(|(_, json)| serde_json::from_str::<Value>(json).ok());
    match blocks {
        Some(Value::Array(blocks)) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => output.to_owned(),
    }
}
