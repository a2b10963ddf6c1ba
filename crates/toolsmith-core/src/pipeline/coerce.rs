//! Step 2's rules (SPEC §3.2): a string sent where a parameter expects another type is
//! coerced when it can be taken exactly, refused with the reason when it was meant as that
//! type but cannot be, and left for the validator otherwise.

use super::*;

/// Integers a 64-bit float holds exactly: up to 2^53.
pub(super) const MAX_EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// What to do with a string sent where another type is expected.
pub(super) enum Coercion {
    Keep,
    To(Value, &'static str),
    /// A string enum value matched one allowed value except for case.
    EnumCase(String),
    /// The string was meant as that type but cannot be taken exactly: say why.
    Refuse(String),
}

/// The coercion rules of SPEC §3.2 for a string sent where `p` expects another type.
pub(super) fn coerce_string(p: &Parameter, s: &str) -> Coercion {
    let t = s.trim();
    let quoted = || quote(&Value::String(s.to_owned()));
    match p.ty {
        ParamType::String => Coercion::Keep,
        ParamType::Enum if !p.is_integer_enum() => {
            if p.values.iter().any(|v| v.as_str() == Some(s)) {
                return Coercion::Keep;
            }
            let matches: Vec<&str> = p
                .values
                .iter()
                .filter_map(Value::as_str)
                .filter(|v| v.eq_ignore_ascii_case(t))
                .collect();
            match matches.as_slice() {
                [one] => Coercion::EnumCase((*one).to_owned()),
                _ => Coercion::Keep,
            }
        }
        ParamType::Integer | ParamType::Enum => match parse_integer(t) {
            Some(Ok(i)) => Coercion::To(Value::from(i), "integer"),
            Some(Err(())) => Coercion::Refuse(format!(
                "{} is out of range for a 64-bit integer (-9223372036854775808 to 9223372036854775807)",
                quoted()
            )),
            None => Coercion::Keep,
        },
        ParamType::Number => {
            if let Some(Ok(i)) = parse_integer(t) {
                return Coercion::To(Value::from(i), "number");
            }
            let Some(f) = t.parse::<f64>().ok().filter(|_| looks_numeric(t)) else {
                return Coercion::Keep;
            };
            if !f.is_finite() {
                return Coercion::Refuse(format!(
                    "{} is out of range for a number (a 64-bit floating-point number holds up to about 1.8e308)",
                    quoted()
                ));
            }
            if !json_text::Decimal::of(t).round_trips(f) {
                return Coercion::Refuse(format!(
                    "{} cannot be held exactly by a 64-bit floating-point number (it would become {f}); \
                     send a number with fewer digits",
                    quoted()
                ));
            }
            match Number::from_f64(f) {
                Some(n) => Coercion::To(Value::Number(n), "number"),
                None => Coercion::Keep,
            }
        }
        ParamType::Boolean => {
            if t.eq_ignore_ascii_case("true") {
                Coercion::To(Value::Bool(true), "boolean")
            } else if t.eq_ignore_ascii_case("false") {
                Coercion::To(Value::Bool(false), "boolean")
            } else {
                Coercion::Keep
            }
        }
        ParamType::Array | ParamType::Object => {
            let (open, noun) = match p.ty {
                ParamType::Array => ('[', "array"),
                _ => ('{', "object"),
            };
            if !t.starts_with(open) {
                return Coercion::Keep;
            }
            match json_text::parse(t) {
                Ok(v @ (Value::Array(_) | Value::Object(_)))
                    if v.is_array() == (p.ty == ParamType::Array) =>
                {
                    Coercion::To(v, noun)
                }
                Ok(_) => Coercion::Keep,
                Err(json_text::TextError::Syntax(m)) => Coercion::Refuse(format!(
                    "looks like a JSON {noun} sent as text, but it does not parse: {m}"
                )),
                Err(e @ json_text::TextError::Value { .. }) => {
                    Coercion::Refuse(format!("a JSON {noun} sent as text, refused: {e}"))
                }
            }
        }
    }
}

/// JSON number syntax (with an optional `+`): `t.parse::<f64>()` also takes `inf`, `NaN` and
/// `1.`, which are not what a model means by a number.
pub(super) fn looks_numeric(t: &str) -> bool {
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(int)
        && frac.is_none_or(digits)
        && exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
}

/// Integer syntax only: an optional sign and digits (`"2.5"`, `"12abc"`, `"1e3"` are not).
/// `Some(Err)` for integer syntax beyond 64 bits.
pub(super) fn parse_integer(t: &str) -> Option<Result<i64, ()>> {
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(t.parse::<i64>().map_err(drop))
}
