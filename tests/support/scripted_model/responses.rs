//! OpenAI Responses, streamed (Codex): `response.output_item.done` with the
//! whole item, then `response.completed` (without it Codex fails the turn).
//! A request whose `text.format` asks for the guardian's JSON schema
//! (`outcome` allow or deny, `risk_level`, `user_authorization`,
//! `rationale`) is Codex's review of a tool call without `readOnlyHint`:
//! it is kept as a review and answered as the model's [`Review`] says.
//! MCP tools are offered inside a `namespace` tool (`mcp__SERVER`), and a
//! call must name its namespace apart (`"name": TOOL, "namespace": NS`), or
//! Codex calls nothing. A tool result is a `function_call_output` whose
//! text Codex wraps: `Wall time: …\nOutput:\n` and the MCP content blocks
//! as JSON. Codex's own `<environment_context>` user message is not the
//! prompt.

use serde_json::{json, Value};

use super::{next_step, sse, Answer, Conversation, Kind, Review, Script, Step};

/// The separator of a namespace and its tool in offered names.
const IN_NAMESPACE: char = '/';

pub(crate) fn answer(path: &str, body: &Value, script: &Script) -> Answer {
    if !path.ends_with("/responses") {
        return Answer::refuse(format!("not a Responses request: POST {path}"));
    }
    if body
        .pointer("/text/format/schema/properties/outcome")
        .is_some()
    {
        return guardian(script.review);
    }
    let item = match next_step(&script.steps, &conversation(body)) {
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

/// The guardian's assessment, as the JSON text its schema asks for.
fn guardian(review: Review) -> Answer {
    let assessment = match review {
        Review::Allow => json!({"outcome": "allow", "risk_level": "low",
            "user_authorization": "unknown", "rationale": "Scripted: allowed."}),
        Review::Deny => json!({"outcome": "deny", "risk_level": "high",
            "user_authorization": "unknown", "rationale": "Scripted: denied."}),
    };
    let item = json!({"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": assessment.to_string()}]});
    let events = [
        (
            "done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "completed",
            json!({"type": "response.completed", "response": {"id": "resp_review"}}),
        ),
    ];
    Answer::stream(sse(&events, false)).of(Kind::Review)
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
            .map(|item| unwrap_output(&item["output"]))
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
        deferred: Vec::new(),
    }
}

/// The tool's own text in a `function_call_output`: Codex 0.166 sends an
/// array whose first `input_text` is its `Wall time: …\nOutput:` header
/// and the rest the MCP content; older builds sent one string,
/// `…Output:\n` and the content blocks as JSON.
fn unwrap_output(output: &Value) -> String {
    if let Value::Array(parts) = output {
        let texts = parts.iter().filter_map(|p| p["text"].as_str());
        return texts.filter(|t| !t.starts_with("Wall time:")).collect();
    }
    let output = output.as_str().unwrap_or("");
    let blocks = output
        .split_once("Output:\n")
        .and_then(|(_, json)| serde_json::from_str::<Value>(json).ok());
    match blocks {
        Some(Value::Array(blocks)) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => output.to_owned(),
    }
}
