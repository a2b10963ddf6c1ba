//! Result guardrails: what a call hands back is scrubbed of credentials and cut to a size
//! before it reaches the caller or the execution log.
//!
//! - **Scrubbing**: the tool's own stored secret values always (`***`, see
//!   [`crate::pipeline::CompiledTool::scrub`]), and common credential shapes — cloud keys,
//!   GitHub/GitLab/Slack/Stripe/model-provider tokens, private key blocks, JWTs — replaced by
//!   `[scrubbed:RULE]`; a tool's `scrub:` turns built-in shapes off and adds its own patterns.
//! - **Cutting**: a result larger than `max_result_bytes` (as JSON) is cut to fit — strings
//!   on a character boundary, arrays by leaving their tail out, objects by cutting their
//!   largest entry (or leaving their tail out when the rest is too large) — so what remains
//!   is still valid JSON of the same shape; the last text left ends with a note saying how
//!   much was kept and naming the call.
//!
//! `meta.guardrails` says what was scrubbed (by rule, how many strings) and cut — never a
//! scrubbed value.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::result::{Cut, Guardrails, ToolResult};

/// The cap when neither the tool, its server nor the catalog's `defaults` says: 1 MiB of
/// JSON, about a quarter of a million tokens.
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 1 << 20;

/// A built-in credential shape.
pub struct Shape {
    pub id: &'static str,
    pub what: &'static str,
    pattern: &'static str,
}

/// The built-in shapes, each on unless a tool's `scrub.off` names it.
pub static SHAPES: &[Shape] = &[
    Shape {
        id: "private_key",
        what: "PEM private key blocks",
        pattern: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    },
    Shape {
        id: "aws_access_key",
        what: "AWS access key ids (AKIA…, ASIA…)",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    },
    Shape {
        id: "aws_secret_key",
        what: "AWS secret access keys written beside their name",
        pattern: r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}"#,
    },
    Shape {
        id: "github_token",
        what: "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    },
    Shape {
        id: "gitlab_token",
        what: "GitLab personal access tokens (glpat-)",
        pattern: r"\bglpat-[A-Za-z0-9_-]{20,}",
    },
    Shape {
        id: "slack_token",
        what: "Slack tokens (xox…) and webhook URLs",
        pattern: r"\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    },
    Shape {
        id: "stripe_key",
        what: "Stripe secret and restricted keys",
        pattern: r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{16,}",
    },
    Shape {
        id: "google_api_key",
        what: "Google API keys (AIza…)",
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
    },
    Shape {
        id: "model_api_key",
        what: "OpenAI and Anthropic API keys (sk-…, sk-proj-…, sk-ant-…)",
        pattern: r"\bsk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{32,}",
    },
    Shape {
        id: "jwt",
        what: "JSON Web Tokens",
        pattern: r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    },
];

static COMPILED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    SHAPES
        .iter()
        .map(|s| Regex::new(s.pattern).expect("the shapes compile"))
        .collect()
});

/// A tool's `scrub:` — built-in shapes turned off, patterns of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scrub {
    /// Built-in shape ids not scrubbed (`all`: none of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<ScrubRule>,
}

/// A pattern of the tool's own: matches become `[scrubbed:NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrubRule {
    pub name: String,
    pub pattern: String,
}

impl Scrub {
    pub fn is_empty(&self) -> bool {
        self.off.is_empty() && self.add.is_empty()
    }

    /// What is wrong with it, by the key it is at: an unknown shape, a pattern that does not
    /// compile, a rule without a name.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, id) in self.off.iter().enumerate() {
            if id != "all" && !SHAPES.iter().any(|s| s.id == id) {
                let known: Vec<&str> = SHAPES.iter().map(|s| s.id).collect();
                out.push((
                    format!("off[{i}]"),
                    format!(
                        "unknown shape {id:?}; the shapes are all, {}",
                        known.join(", ")
                    ),
                ));
            }
        }
        for (i, rule) in self.add.iter().enumerate() {
            if rule.name.is_empty() {
                out.push((format!("add[{i}].name"), "empty; name the rule".into()));
            }
            if let Err(e) = Regex::new(&rule.pattern) {
                out.push((
                    format!("add[{i}].pattern"),
                    format!("not a regular expression: {e}"),
                ));
            } else if Regex::new(&rule.pattern).is_ok_and(|r| r.is_match("")) {
                out.push((format!("add[{i}].pattern"), "matches the empty text".into()));
            }
        }
        out
    }
}

/// A tool's (or a server's, or a catalog's `defaults:`) result guardrails as declared:
/// `max_result_bytes` and `scrub`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultPolicy {
    /// The cap on a result as JSON; `None`: [`DEFAULT_MAX_RESULT_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Scrub::is_empty")]
    pub scrub: Scrub,
}

impl ResultPolicy {
    pub fn is_empty(&self) -> bool {
        self.max_result_bytes.is_none() && self.scrub.is_empty()
    }

    /// This policy where it says something, `under` where it does not.
    pub fn or(&self, under: &ResultPolicy) -> ResultPolicy {
        ResultPolicy {
            max_result_bytes: self.max_result_bytes.or(under.max_result_bytes),
            scrub: match self.scrub.is_empty() {
                true => under.scrub.clone(),
                false => self.scrub.clone(),
            },
        }
    }

    /// Writes its keys into a catalog-form object.
    pub fn write(&self, m: &mut serde_json::Map<String, Value>) {
        if let Some(n) = self.max_result_bytes {
            m.insert("max_result_bytes".into(), Value::from(n));
        }
        if !self.scrub.is_empty() {
            m.insert(
                "scrub".into(),
                serde_json::to_value(&self.scrub).unwrap_or_default(),
            );
        }
    }

    pub fn guard(&self) -> ResultGuard {
        ResultGuard::new(self.max_result_bytes, &self.scrub)
    }
}

/// The result guardrails of one tool, compiled once per tool version.
#[derive(Debug)]
pub struct ResultGuard {
    max_bytes: u64,
    rules: Vec<(String, Regex)>,
}

impl ResultGuard {
    /// The guard for `max_result_bytes` (the default when `None`) and `scrub`; a pattern
    /// that does not compile is left out (the catalog refuses it before).
    pub fn new(max_result_bytes: Option<u64>, scrub: &Scrub) -> Self {
        let all_off = scrub.off.iter().any(|o| o == "all");
        let mut rules: Vec<(String, Regex)> = SHAPES
            .iter()
            .zip(COMPILED.iter())
            .filter(|(s, _)| !all_off && !scrub.off.iter().any(|o| o == s.id))
            .map(|(s, r)| (s.id.to_owned(), r.clone()))
            .collect();
        rules.extend(
            scrub
                .add
                .iter()
                .filter_map(|a| Some((a.name.clone(), Regex::new(&a.pattern).ok()?))),
        );
        Self {
            max_bytes: max_result_bytes.unwrap_or(DEFAULT_MAX_RESULT_BYTES),
            rules,
        }
    }

    /// Scrubs and cuts `result` in place and says so in `meta.guardrails` (adding to what
    /// is already there: the tool's own secret values, scrubbed before).
    pub fn apply(&self, result: &mut ToolResult) {
        let mut report = result.meta.guardrails.take().unwrap_or_default();
        if let Some(data) = &mut result.data {
            self.scrub_value(data, &mut report.scrubbed);
        }
        if let Some(e) = &mut result.error {
            self.scrub_text(&mut e.message, &mut report.scrubbed);
            if let Some(output) = &mut e.output {
                self.scrub_value(output, &mut report.scrubbed);
            }
        }
        let max = usize::try_from(self.max_bytes).unwrap_or(usize::MAX);
        let call_id = result.meta.call_id.clone();
        let target = result
            .data
            .as_mut()
            .or(result.error.as_mut().and_then(|e| e.output.as_mut()));
        if let Some(value) = target {
            let total = json_len(value);
            if total > max {
                let entry = match &call_id {
                    Some(id) => format!("the execution log has the call as call_id {id}"),
                    None => "the execution log has the call".to_owned(),
                };
                let note = format!(
                    "\n[toolsmith cut this result to {max} of its {total} bytes (max_result_bytes); {entry}]"
                );
                // Room for the note is kept, so it can go at the end of the last text left
                // when the cut did not fall inside a text.
                let reserve = json_len(&Value::from(note.as_str()));
                let mut placed = false;
                shrink(value, max.saturating_sub(reserve), &note, &mut placed);
                if !placed && let Some(last) = last_text(value) {
                    last.push_str(&note);
                }
                report.cut = Some(Cut {
                    from_bytes: total as u64,
                    to_bytes: json_len(value) as u64,
                    max_result_bytes: self.max_bytes,
                });
            }
        }
        if !report.is_empty() {
            result.meta.guardrails = Some(report);
        }
    }

    /// [`Self::apply`] for an answer that is not a tool's result (a resource's contents, a
    /// prompt's messages). Answers what was done (empty when nothing).
    pub fn apply_value(&self, value: &mut Value) -> Guardrails {
        let mut r = ToolResult::ok(std::mem::take(value), Default::default());
        self.apply(&mut r);
        *value = r.data.take().unwrap_or_default();
        r.meta.guardrails.unwrap_or_default()
    }

    fn scrub_value(&self, value: &mut Value, counts: &mut BTreeMap<String, u32>) {
        match value {
            Value::String(s) => self.scrub_text(s, counts),
            Value::Array(items) => items.iter_mut().for_each(|i| self.scrub_value(i, counts)),
            Value::Object(map) => map.values_mut().for_each(|i| self.scrub_value(i, counts)),
            _ => {}
        }
    }

    fn scrub_text(&self, text: &mut String, counts: &mut BTreeMap<String, u32>) {
        for (id, re) in &self.rules {
            let n = re.find_iter(text).count();
            if n > 0 {
                *text = re
                    .replace_all(text, format!("[scrubbed:{id}]").as_str())
                    .into_owned();
                *counts.entry(id.clone()).or_default() += n as u32;
            }
        }
    }
}

/// The length of `v` as compact JSON.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// The last string of `v`, depth first.
fn last_text(v: &mut Value) -> Option<&mut String> {
    match v {
        Value::String(s) => Some(s),
        Value::Array(items) => items.iter_mut().rev().find_map(last_text),
        Value::Object(map) => map.values_mut().rev().find_map(last_text),
        _ => None,
    }
}

/// Cuts `v` so its compact JSON is at most `budget` bytes (when the shape allows: an
/// object's keys are kept as long as they fit): a string keeps its head on a character
/// boundary and ends with `note` (`placed` says so), an array and an object keep their head,
/// the first item that does not fit is cut in turn when there is room for more than the
/// note. Scalars that do not fit become `null`.
fn shrink(v: &mut Value, budget: usize, note: &str, placed: &mut bool) {
    if json_len(v) <= budget {
        return;
    }
    match v {
        Value::String(s) => {
            let room = budget.saturating_sub(2 + json_len(&Value::from(note)) - 2);
            let mut at = room.min(s.len());
            loop {
                while !s.is_char_boundary(at) {
                    at -= 1;
                }
                let head = &s[..at];
                let len = json_len(&Value::from(head));
                if len + json_len(&Value::from(note)) - 2 <= budget || at == 0 {
                    break;
                }
                at = at.saturating_sub((len + json_len(&Value::from(note)) - 2 - budget).max(1));
            }
            s.truncate(at);
            if json_len(&Value::from(note)) < budget {
                s.push_str(note);
                *placed = true;
            }
        }
        Value::Array(items) => {
            let mut used = 2;
            let mut keep = 0;
            for item in items.iter_mut() {
                let comma = usize::from(keep > 0);
                let len = json_len(item);
                if used + comma + len <= budget {
                    used += comma + len;
                    keep += 1;
                    continue;
                }
                let room = budget.saturating_sub(used + comma);
                if room >= note.len() + 16 {
                    shrink(item, room, note, placed);
                    keep += 1;
                }
                break;
            }
            items.truncate(keep);
        }
        Value::Object(map) => {
            // The largest entry is cut when the others fit beside it, so the small ones an
            // object is read by (a content block's `type`, `isError`) stay.
            let total = 1 + map
                .iter()
                .map(|(k, v)| json_len(&Value::from(k.as_str())) + 2 + json_len(v))
                .sum::<usize>()
                .max(1);
            let largest = map
                .iter()
                .map(|(k, v)| (json_len(v), k.clone()))
                .max()
                .map(|(len, key)| (key, len));
            if let Some((key, len)) = largest {
                let rest = total - len;
                if rest + note.len() + 16 <= budget {
                    let item = map.get_mut(&key).expect("a key of the map");
                    shrink(item, budget - rest, note, placed);
                    return;
                }
            }
            let mut used = 2;
            let mut keep = Vec::new();
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let comma = usize::from(!keep.is_empty());
                let head = json_len(&Value::from(key.as_str())) + 1;
                let item = map.get_mut(&key).expect("a key of the map");
                let len = json_len(item);
                if used + comma + head + len <= budget {
                    used += comma + head + len;
                    keep.push(key);
                    continue;
                }
                let room = budget.saturating_sub(used + comma + head);
                if room >= note.len() + 16 {
                    shrink(item, room, note, placed);
                    keep.push(key);
                }
                break;
            }
            map.retain(|k, _| keep.contains(k));
        }
        other => *other = Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Meta;
    use serde_json::json;

    fn ok(data: Value) -> ToolResult {
        ToolResult::ok(data, Meta::default())
    }

    #[test]
    fn credential_shapes_are_scrubbed_and_counted_never_echoed() {
        let guard = ResultGuard::new(None, &Scrub::default());
        let key = "AKIAIOSFODNN7EXAMPLE";
        let pat = format!("ghp_{}", "a1B2".repeat(9));
        let mut r = ok(json!({"out": format!("id={key} and {pat}"), "list": [key]}));
        guard.apply(&mut r);
        let data = r.data.expect("as built above");
        assert_eq!(
            data["out"],
            "id=[scrubbed:aws_access_key] and [scrubbed:github_token]"
        );
        assert_eq!(data["list"][0], "[scrubbed:aws_access_key]");
        let report = serde_json::to_string(&r.meta.guardrails).expect("as built above");
        assert_eq!(
            report,
            r#"{"scrubbed":{"aws_access_key":2,"github_token":1}}"#
        );
        assert!(!report.contains(key));
    }

    #[test]
    fn shapes_can_be_turned_off_and_added() {
        let scrub = Scrub {
            off: vec!["aws_access_key".into()],
            add: vec![ScrubRule {
                name: "ticket".into(),
                pattern: r"TKT-\d{4}".into(),
            }],
        };
        let mut r = ok(json!("AKIAIOSFODNN7EXAMPLE TKT-1234"));
        ResultGuard::new(None, &scrub).apply(&mut r);
        assert_eq!(
            r.data.expect("as built above"),
            "AKIAIOSFODNN7EXAMPLE [scrubbed:ticket]"
        );
        let bad = Scrub {
            off: vec!["nope".into()],
            add: vec![ScrubRule {
                name: "".into(),
                pattern: "(".into(),
            }],
        };
        let problems: Vec<String> = bad.problems().into_iter().map(|(k, _)| k).collect();
        assert_eq!(problems, ["off[0]", "add[0].name", "add[0].pattern"]);
    }

    #[test]
    fn a_large_result_is_cut_to_the_cap_and_stays_valid_json() {
        let text = "é".repeat(300_000); // 600 KB of two-byte characters
        let mut r = ok(json!({"content": [{"type": "text", "text": text}], "isError": false}));
        ResultGuard::new(Some(10_000), &Scrub::default()).apply(&mut r);
        let data = r.data.expect("as built above");
        let len = json_len(&data);
        assert!(len <= 10_000 && len > 9_000, "{len}");
        let text = data["content"][0]["text"].as_str().expect("as built above");
        assert!(
            text.starts_with("éé") && text.contains("toolsmith cut this result to 10000 of its"),
            "{}",
            &text[text.len() - 200..]
        );
        let cut = r
            .meta
            .guardrails
            .expect("as built above")
            .cut
            .expect("as built above");
        assert_eq!((cut.to_bytes as usize, cut.max_result_bytes), (len, 10_000));
        assert!(cut.from_bytes > 600_000);
    }

    #[test]
    fn arrays_keep_their_head_and_escapes_are_counted() {
        let items: Vec<Value> = (0..1000)
            .map(|i| json!({"i": i, "s": "\"quoted\"\n"}))
            .collect();
        let mut v = Value::Array(items);
        shrink(&mut v, 2_000, "[cut]", &mut false);
        assert!(json_len(&v) <= 2_000);
        let kept = v.as_array().expect("as built above");
        assert!(kept.len() > 50 && kept[0]["i"] == 0, "{}", kept.len());
        let mut s = Value::from("\"".repeat(5000));
        shrink(&mut s, 1000, "…", &mut false);
        assert!(json_len(&s) <= 1000, "{}", json_len(&s));
    }

    #[test]
    fn the_note_ends_the_last_text_when_the_cut_falls_between_items() {
        let rows: Vec<Value> = (0..100)
            .map(|i| json!({"i": i, "t": "y".repeat(1000)}))
            .collect();
        let mut r = ok(json!({"rows": rows}));
        r.meta.call_id = Some("c0ffee".into());
        ResultGuard::new(Some(5_000), &Scrub::default()).apply(&mut r);
        let data = r.data.expect("as built above");
        assert!(json_len(&data) <= 5_000, "{}", json_len(&data));
        let last = data["rows"]
            .as_array()
            .expect("as built above")
            .last()
            .expect("as built above")["t"]
            .as_str()
            .expect("as built above")
            .to_owned();
        assert!(last.ends_with("call_id c0ffee]"), "{last}");
    }

    #[test]
    fn a_cut_mcp_result_keeps_every_block_readable() {
        let blocks: Vec<Value> = (0..50)
            .map(|i| json!({"type": "text", "text": format!("{i} ").repeat(2000)}))
            .collect();
        let mut r = ok(json!({"content": blocks, "isError": false}));
        ResultGuard::new(Some(20_000), &Scrub::default()).apply(&mut r);
        let data = r.data.expect("data");
        assert!(json_len(&data) <= 20_000, "{}", json_len(&data));
        assert_eq!(data["isError"], false);
        let kept = data["content"].as_array().expect("content");
        assert!(!kept.is_empty());
        assert!(
            kept.iter()
                .all(|b| b["type"] == "text" && b["text"].is_string()),
            "{data}"
        );
        let last = kept.last().expect("a block")["text"]
            .as_str()
            .expect("text");
        assert!(last.contains("toolsmith cut this result"), "{last}");
    }

    #[test]
    fn a_small_result_is_untouched() {
        let mut r = ok(json!({"a": 1}));
        ResultGuard::new(None, &Scrub::default()).apply(&mut r);
        assert_eq!(r.meta.guardrails, None);
        assert_eq!(r.data.expect("as built above"), json!({"a": 1}));
    }
}
