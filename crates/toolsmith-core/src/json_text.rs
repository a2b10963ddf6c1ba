//! Reading JSON text exactly as it was written: what a model sends must not change silently
//! on the way in.
//!
//! `serde_json::from_str` keeps the last of two duplicate keys and rounds integers beyond
//! 64 bits through `f64` (so `-9223372036854775809` became `-9223372036854775808`). [`parse`]
//! refuses both, naming the JSON pointer: a duplicate key is ambiguous, an integer that does
//! not fit 64 bits cannot be kept exactly, and a decimal whose nearest `f64` is a whole
//! number it is not (`2.0000000000000001`) would turn into one. Decimals are otherwise read
//! as the nearest `f64`, as every JSON parser does; a decimal that is a whole number
//! (`2.0`, `1e3`) becomes that integer when it fits 64 bits.
//!
//! Strings are unescaped by `serde_json`; the scanner only finds where each token ends.

use serde_json::{Map, Number, Value};

/// The nesting depth [`parse`] accepts (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

/// Why a text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextError {
    /// Not JSON at all: the message names the line and column.
    Syntax(String),
    /// Valid JSON with a value that cannot be taken as written, at `pointer`.
    Value { pointer: String, message: String },
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Syntax(m) => f.write_str(m),
            Self::Value { pointer, message } if pointer.is_empty() => f.write_str(message),
            Self::Value { pointer, message } => write!(f, "{pointer}: {message}"),
        }
    }
}

/// Parses one JSON value, refusing duplicate keys and numbers that cannot be kept exactly.
pub fn parse(text: &str) -> Result<Value, TextError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        pointer: String::new(),
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.at < p.bytes.len() {
        return Err(p.syntax("trailing characters after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    /// The JSON pointer of the value being read.
    pointer: String,
}

impl Parser<'_> {
    fn syntax(&self, what: &str) -> TextError {
        let before = &self.bytes[..self.at.min(self.bytes.len())];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let column = before.iter().rev().take_while(|b| **b != b'\n').count() + 1;
        TextError::Syntax(format!("{what} at line {line} column {column}"))
    }

    fn value_error(&self, message: String) -> TextError {
        TextError::Value {
            pointer: self.pointer.clone(),
            message,
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, TextError> {
        if depth > MAX_DEPTH {
            return Err(self.syntax("nested too deeply"));
        }
        match self.bytes.get(self.at) {
            None => Err(self.syntax("EOF while parsing a value")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.syntax("expected a value")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, TextError> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(v)
        } else {
            Err(self.syntax("expected a value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, TextError> {
        self.at += 1;
        let mut map = Map::new();
        self.ws();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.ws();
            if self.bytes.get(self.at) != Some(&b'"') {
                return Err(self.syntax(if self.at >= self.bytes.len() {
                    "EOF while parsing an object"
                } else {
                    "expected a key in double quotes"
                }));
            }
            let key = self.string()?;
            let parent = self.pointer.len();
            self.pointer.push('/');
            self.pointer
                .push_str(&key.replace('~', "~0").replace('/', "~1"));
            if map.contains_key(&key) {
                return Err(self.value_error(format!(
                    "the key {key:?} is given twice; send each key once"
                )));
            }
            self.ws();
            if self.bytes.get(self.at) != Some(&b':') {
                return Err(self.syntax("expected `:` after a key"));
            }
            self.at += 1;
            self.ws();
            let v = self.value(depth + 1)?;
            self.pointer.truncate(parent);
            map.insert(key, v);
            self.ws();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(map));
                }
                None => return Err(self.syntax("EOF while parsing an object")),
                Some(_) => return Err(self.syntax("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, TextError> {
        self.at += 1;
        let mut items = Vec::new();
        self.ws();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            let parent = self.pointer.len();
            self.pointer.push_str(&format!("/{}", items.len()));
            items.push(self.value(depth + 1)?);
            self.pointer.truncate(parent);
            self.ws();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                None => return Err(self.syntax("EOF while parsing a list")),
                Some(_) => return Err(self.syntax("expected `,` or `]`")),
            }
        }
    }

    /// A string token: its end found here, its escapes read by serde_json.
    fn string(&mut self) -> Result<String, TextError> {
        let start = self.at;
        let mut i = start + 1;
        loop {
            match self.bytes.get(i) {
                None => {
                    self.at = i;
                    return Err(self.syntax("EOF while parsing a string"));
                }
                Some(b'"') => break,
                Some(b'\\') => i += 2,
                Some(_) => i += 1,
            }
        }
        let token = &self.text[start..=i];
        match serde_json::from_str::<String>(token) {
            Ok(s) => {
                self.at = i + 1;
                Ok(s)
            }
            Err(e) => {
                // serde_json counts columns within the token.
                self.at = start + e.column().saturating_sub(1);
                let what = e.to_string();
                let what = what.split(" at line").next().unwrap_or(&what).to_owned();
                Err(self.syntax(&what))
            }
        }
    }

    fn number(&mut self) -> Result<Value, TextError> {
        let start = self.at;
        let b = self.bytes;
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        let int_start = i;
        if digits(&mut i) == 0 {
            self.at = i;
            return Err(self.syntax("invalid number"));
        }
        if b[int_start] == b'0' && i - int_start > 1 {
            self.at = int_start + 1;
            return Err(self.syntax("invalid number (no leading zeros)"));
        }
        let mut integral_syntax = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            integral_syntax = false;
            if digits(&mut i) == 0 {
                self.at = i;
                return Err(self.syntax("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            integral_syntax = false;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                self.at = i;
                return Err(self.syntax("invalid number"));
            }
        }
        self.at = i;
        let text = &self.text[start..i];
        number(text, integral_syntax).map_err(|m| self.value_error(m))
    }
}

/// The exact value of a number token, or why it cannot be kept.
fn number(text: &str, integral_syntax: bool) -> Result<Value, String> {
    if integral_syntax {
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(format!(
            "{text} is out of range: integers must fit in 64 bits (-9223372036854775808 to 18446744073709551615)"
        ));
    }
    let decimal = Decimal::of(text);
    if let Some(whole) = decimal.as_integer() {
        return Ok(whole);
    }
    let f: f64 = text
        .parse()
        .map_err(|_| format!("{text} is not a number"))?;
    if !f.is_finite() {
        return Err(format!(
            "{text} is out of range for a 64-bit floating-point number"
        ));
    }
    if decimal.is_integral() && !decimal.round_trips(f) {
        return Err(format!(
            "{text} cannot be kept exactly: it is a whole number beyond 64 bits, which a 64-bit \
             floating-point number would round"
        ));
    }
    if !decimal.is_integral() && f.fract() == 0.0 {
        return Err(format!(
            "{text} cannot be kept exactly: a 64-bit floating-point number would round it to the whole number {f}"
        ));
    }
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| format!("{text} is not a finite number"))
}

/// A decimal literal as sign, significant digits and a power of ten.
#[derive(Debug, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    /// No leading or trailing zeros; empty for zero.
    digits: String,
    exponent: i64,
}

impl Decimal {
    /// Reads a JSON-syntax number (or the same syntax with a leading `+`). Returns the
    /// canonical form, so `2.50`, `25e-1` and `2.5` are equal.
    pub fn of(text: &str) -> Self {
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().unwrap_or(0)),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut digits: String = format!("{int}{frac}");
        let mut exponent = exp - frac.len() as i64;
        let trimmed = digits.trim_start_matches('0').len();
        digits.drain(..digits.len() - trimmed);
        while digits.ends_with('0') {
            digits.pop();
            exponent += 1;
        }
        if digits.is_empty() {
            exponent = 0;
        }
        Self {
            negative: negative && !digits.is_empty(),
            digits,
            exponent,
        }
    }

    /// Whether the value is a whole number.
    pub fn is_integral(&self) -> bool {
        self.exponent >= 0
    }

    /// The value as a JSON integer, when it is a whole number that fits 64 bits.
    pub fn as_integer(&self) -> Option<Value> {
        if !self.is_integral() || self.digits.len() as i64 + self.exponent > 20 {
            return None;
        }
        let text = format!(
            "{}{}{}",
            if self.negative { "-" } else { "" },
            if self.digits.is_empty() {
                "0"
            } else {
                &self.digits
            },
            "0".repeat(self.exponent as usize)
        );
        text.parse::<i64>()
            .map(Value::from)
            .or_else(|_| text.parse::<u64>().map(Value::from))
            .ok()
    }

    /// Whether `f` is this decimal when written with the fewest digits that read back as
    /// `f` (so `0.1` counts as exact, `9007199254740993` does not).
    pub fn round_trips(&self, f: f64) -> bool {
        f.is_finite() && Self::of(&format!("{f:e}")) == *self
    }
}

/// `an object`, `a string` … for messages about a whole value.
pub fn type_phrase(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(text: &str) -> TextError {
        parse(text).expect_err(text)
    }

    #[test]
    fn same_as_serde_json_on_ordinary_text() {
        for text in [
            r#"{"a": 1, "b": [true, false, null, "x\"y\u00e9\n"], "c": {"d": -2.5e-3}}"#,
            "[]",
            "{}",
            " 0 ",
            "1.5",
            r#""\ud83d\ude00""#,
            "[[[[1]]]]",
            "123456789012345678",
            "18446744073709551615",
            "-9223372036854775808",
        ] {
            let ours = parse(text).expect(text);
            let theirs: Value = serde_json::from_str(text).expect(text);
            assert_eq!(ours, theirs, "{text}");
        }
    }

    #[test]
    fn duplicate_keys_are_named() {
        assert_eq!(
            err(r#"{"limit": 5, "limit": 50}"#),
            TextError::Value {
                pointer: "/limit".into(),
                message: "the key \"limit\" is given twice; send each key once".into()
            }
        );
        assert!(
            matches!(err(r#"{"a": [{"x/y": 1, "x/y": 2}]}"#), TextError::Value { pointer, .. } if pointer == "/a/0/x~1y")
        );
        // The same key in two objects is fine.
        assert!(parse(r#"[{"a": 1}, {"a": 2}]"#).is_ok());
    }

    #[test]
    fn integers_are_exact_or_refused() {
        for bad in [
            "-9223372036854775809",
            "18446744073709551616",
            "99999999999999999999",
        ] {
            let e = err(&format!("{{\"n\": {bad}}}"));
            assert!(
                matches!(&e, TextError::Value { pointer, message } if pointer == "/n" && message.starts_with(bad)),
                "{e:?}"
            );
        }
        assert_eq!(parse("-0").expect("ok"), json!(0));
        assert_eq!(parse("2.0").expect("ok"), json!(2));
        assert_eq!(parse("1e3").expect("ok"), json!(1000));
        assert_eq!(parse("-1.5E1").expect("ok"), json!(-15));
        assert_eq!(parse("0.1").expect("ok"), json!(0.1));
        assert_eq!(parse("1e20").expect("ok"), json!(1e20));
        assert!(matches!(err("2.0000000000000001"), TextError::Value { .. }));
        assert!(matches!(err("1e400"), TextError::Value { .. }));
    }

    #[test]
    fn syntax_errors_say_where() {
        assert_eq!(
            err("{\"a\": [1, 2"),
            TextError::Syntax("EOF while parsing a list at line 1 column 12".into())
        );
        assert!(matches!(err("{\"a\" 1}"), TextError::Syntax(m) if m.contains("column 6")));
        assert!(matches!(err("[1] x"), TextError::Syntax(_)));
        assert!(matches!(err("01"), TextError::Syntax(_)));
        assert!(matches!(err("\"\\x\""), TextError::Syntax(_)));
        assert!(matches!(err("\"a\nb\""), TextError::Syntax(_)));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(matches!(err(&deep), TextError::Syntax(m) if m.contains("nested too deeply")));
    }

    #[test]
    fn decimals() {
        assert_eq!(Decimal::of("2.50"), Decimal::of("25e-1"));
        assert_eq!(Decimal::of("-0.0"), Decimal::of("0"));
        assert!(Decimal::of("0.1").round_trips(0.1));
        assert!(!Decimal::of("9007199254740993").round_trips(9007199254740993.0));
        assert!(Decimal::of("9007199254740992").round_trips(9007199254740992.0));
    }
}
