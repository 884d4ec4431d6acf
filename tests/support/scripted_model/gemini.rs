//! The Gemini API (Gemini CLI): one unstreamed `:generateContent` routing
//! call that wants a JSON `complexity_score`, then the turn itself,
//! streamed (`:streamGenerateContent?alt=sse`): `data:` events of
//! `candidates[0].content.parts`, a `functionCall` or text. Text that
//! answers a prompt needs a `finishReason`, or Gemini CLI retries. A tool
//! result is a `functionResponse` part: `response.output` wrapped in
//! `<untrusted_context>`, or `response.error` for a refusal or a denial.

use serde_json::{json, Value};

use super::{next_step, sse, Answer, Conversation, Step, ToolCallScript};

pub(crate) fn answer(path: &str, body: &Value, script: &[ToolCallScript]) -> Answer {
    let path = path.split('?').next().unwrap_or_default();
    if path.ends_with(":generateContent") {
        // The router: how complex the prompt is (low: the flash model).
        let verdict = json!({"complexity_reasoning": "scripted", "complexity_score": 10});
        let part = json!({"text": verdict.to_string()});
        return Answer::json(
            json!({"candidates": [{"content": {"role": "model", "parts": [part]},
            "finishReason": "STOP"}]}),
        );
    }
    if !path.ends_with(":streamGenerateContent") {
        return Answer::refuse(format!("not a Gemini request: POST {path}"));
    }
    let part = match next_step(script, &conversation(body)) {
        Step::Text(text) => json!({"text": text}),
        Step::Call {
            name, arguments, ..
        } => json!({"functionCall": {"name": name, "args": arguments}}),
    };
    let event = json!({"candidates": [{"content": {"role": "model", "parts": [part]},
        "finishReason": "STOP", "index": 0}]});
    Answer::stream(sse(&[("chunk", event)], false))
}

fn conversation(body: &Value) -> Conversation {
    let contents = body["contents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let parts = |content: &Value| content["parts"].as_array().cloned().unwrap_or_default();
    let typed = |content: &Value| {
        content["role"] == "user" && parts(content).iter().any(|p| p["text"].is_string())
    };
    let at = contents.iter().rposition(typed).unwrap_or(0);
    let since_prompt = contents.get(at..).unwrap_or_default();
    let prompt = since_prompt
        .first()
        .map(|c| parts(c).iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default();
    let result = |response: &Value| -> String {
        let text = response["output"]
            .as_str()
            .or(response["error"].as_str())
            .unwrap_or("");
        let text = text.trim();
        let text = text.strip_prefix("<untrusted_context>").unwrap_or(text);
        let text = text.strip_suffix("</untrusted_context>").unwrap_or(text);
        text.trim().to_owned()
    };
    Conversation {
        prompt,
        results: since_prompt
            .iter()
            .flat_map(parts)
            .filter_map(|p| p.get("functionResponse").map(|f| result(&f["response"])))
            .collect(),
        offered: body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| {
                t["functionDeclarations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|d| d["name"].as_str().map(str::to_owned))
            .collect(),
        deferred: Vec::new(),
    }
}
