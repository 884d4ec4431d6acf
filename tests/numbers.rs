//! Numbers reach the tool unchanged: 10,000 random doubles, and 10,000
//! random decimals of 1 to 17 significant digits, each sent through a real
//! HTTP `tools/call` and compared bit for bit with what the surface
//! received (the doubles with themselves, the decimals with Rust's own
//! correctly rounded parse of the same text). Without serde_json's
//! `float_roundtrip` about three in ten doubles arrived one or two units
//! in the last place off (`9.1e+29` as `9.099999999999999e+29`).

mod support;

use std::sync::{Arc, Mutex};

use embacle_tool_host::{StaticSurface, Tool, ToolHostConfig};
use serde_json::{json, Value};
use support::*;

/// SplitMix64: a fixed seed, so a failure names numbers that can be
/// sent again.
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A finite double of any sign, magnitude and bit pattern (subnormals,
    /// zeros and extremes among them): JSON has no NaN or infinity.
    fn double(&mut self) -> f64 {
        loop {
            let x = f64::from_bits(self.next());
            if x.is_finite() {
                return x;
            }
        }
    }

    /// A decimal of 1 to 17 significant digits with an exponent from -300
    /// to 300, as JSON text (`-1.2345e-7`).
    fn decimal(&mut self) -> String {
        let digits = 1 + (self.next() % 17) as usize;
        let mut text = String::new();
        if self.next() % 2 == 0 {
            text.push('-');
        }
        let mut digit = |from: u64| char::from(b'0' + (from + self.next() % (10 - from)) as u8);
        text.push(digit(1));
        if digits > 1 {
            text.push('.');
            (1..digits).for_each(|_| text.push(digit(0)));
        }
        let exponent = (self.next() % 601) as i64 - 300;
        text.push_str(&format!("e{exponent}"));
        text
    }
}

/// A host whose one tool keeps the numbers it was given.
async fn keeping() -> (
    Fixture<StaticSurface<impl embacle_tool_host::call::ToolExecutor>>,
    Arc<Mutex<Vec<Value>>>,
) {
    let kept = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&kept);
    let tool = Tool::new(
        "keep",
        "Keeps the numbers it is given.",
        json!({"type": "object", "properties": {"values": {"type": "array", "items": {"type": "number"}}}}),
    )
    .unwrap();
    let surface = StaticSurface::new(vec![tool], move |_: String, arguments: Value| {
        let sink = Arc::clone(&sink);
        async move {
            let values = arguments["values"].as_array().cloned().unwrap_or_default();
            sink.lock().unwrap().extend(values);
            Ok::<_, String>(json!("kept"))
        }
    })
    .unwrap();
    let fx = Fixture::serving(ToolHostConfig::default(), Arc::new(surface)).await;
    (fx, kept)
}

/// Sends `texts` (JSON numbers, as written) in one call, in chunks of a
/// thousand, and returns what the tool received, as doubles.
async fn send(
    fx: &Fixture<StaticSurface<impl embacle_tool_host::call::ToolExecutor>>,
    kept: &Mutex<Vec<Value>>,
    texts: &[String],
) -> Vec<f64> {
    for (n, chunk) in texts.chunks(1000).enumerate() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"keep","arguments":{{"values":[{}]}}}}}}"#,
            chunk.join(",")
        );
        let answered = fx.rpc_text(&body).await;
        assert_eq!(answered.first_text(), json!("kept"), "{}", answered.text());
    }
    let values = std::mem::take(&mut *kept.lock().unwrap());
    values
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

/// 10,000 random doubles, written shortest-exact (serde_json's own
/// writer), arrive with the very same bits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_random_doubles_arrive_bit_for_bit() {
    let (fx, kept) = keeping().await;
    let mut numbers = Numbers(0x5eed_0001);
    let sent: Vec<f64> = (0..10_000).map(|_| numbers.double()).collect();
    let texts: Vec<String> = sent.iter().map(|x| Value::from(*x).to_string()).collect();
    let got = send(&fx, &kept, &texts).await;
    assert_eq!(got.len(), sent.len());
    let off: Vec<(&String, f64)> = texts
        .iter()
        .zip(sent.iter().zip(&got))
        .filter(|(_, (a, b))| a.to_bits() != b.to_bits())
        .map(|(text, (_, b))| (text, *b))
        .collect();
    assert!(
        off.is_empty(),
        "{} of 10,000 arrived changed: {:?}",
        off.len(),
        &off[..off.len().min(5)]
    );
}

/// 10,000 random decimals of 1 to 17 digits arrive as the double nearest
/// to them (Rust's own parse, which rounds correctly).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_random_decimals_arrive_correctly_rounded() {
    let (fx, kept) = keeping().await;
    let mut numbers = Numbers(0x5eed_0002);
    let texts: Vec<String> = (0..10_000).map(|_| numbers.decimal()).collect();
    let got = send(&fx, &kept, &texts).await;
    assert_eq!(got.len(), texts.len());
    let off: Vec<(&String, f64)> = texts
        .iter()
        .zip(&got)
        .filter(|(text, got)| text.parse::<f64>().unwrap().to_bits() != got.to_bits())
        .map(|(text, got)| (text, *got))
        .collect();
    assert!(
        off.is_empty(),
        "{} of 10,000 arrived off: {:?}",
        off.len(),
        &off[..off.len().min(5)]
    );
}
