//! OpenAI Chat Completions, streamed: `chat.completion.chunk` events, then
//! `data: [DONE]`. A tool result is a `role: tool` message. A request with
//! `stream_options.include_usage` gets the usage chunk OpenAI sends last
//! (Mistral Vibe fails a reply without one).

use serde_json::{json, Value};

use super::{next_step, sse, Answer, Conversation, Step, ToolCallScript};

pub(crate) fn answer(path: &str, body: &Value, script: &[ToolCallScript]) -> Answer {
    if !path.ends_with("/chat/completions") {
        return Answer::refuse(format!("not a chat completion request: POST {path}"));
    }
    let model = body["model"].clone();
    let chunk = |delta: Value, finish: Value| {
        let choice = json!({"index": 0, "delta": delta, "finish_reason": finish});
        let chunk = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": 0, "model": model, "choices": [choice]});
        ("chunk", chunk)
    };
    let mut events = match next_step(script, &conversation(body)) {
        Step::Text(text) => vec![
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": text}), Value::Null),
            chunk(json!({}), json!("stop")),
        ],
        Step::Call { name, arguments, n } => {
            let call = json!({"index": 0, "id": format!("call_{n}"), "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}});
            vec![
                chunk(
                    json!({"role": "assistant", "content": null, "tool_calls": [call]}),
                    Value::Null,
                ),
                chunk(json!({}), json!("tool_calls")),
            ]
        }
    };
    if body["stream_options"]["include_usage"] == true {
        let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
        events.push((
            "chunk",
            json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": 0, "model": model, "choices": [], "usage": usage}),
        ));
    }
    Answer::stream(sse(&events, false) + "data: [DONE]\n\n")
}

fn conversation(body: &Value) -> Conversation {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let since_prompt = messages
        .iter()
        .rposition(|m| m["role"] == "user")
        .map_or(messages, |at| &messages[at..]);
    let text = |content: &Value| match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    };
    Conversation {
        prompt: since_prompt
            .first()
            .map(|m| text(&m["content"]))
            .unwrap_or_default(),
        // Mistral Vibe's code tool answers with the JSON of what the code
        // returned: a text result arrives as a JSON string.
        results: since_prompt
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| text(&m["content"]))
            .map(|text| serde_json::from_str::<String>(&text).unwrap_or(text))
            .collect(),
        offered: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect(),
        deferred: Vec::new(),
    }
}
